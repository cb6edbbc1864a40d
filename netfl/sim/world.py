"""The run-time world of a run: the :class:`~netfl.algorithms.context.RoundContext`
algorithms use.

It holds the clock, the random streams, the nodes, the federated data, the models, the
radio, the compute engine, the learning executor and the recorder — built by
:mod:`netfl.sim.build` from a validated :class:`~netfl.scenario.schema.Scenario`.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import simpy

from netfl.algorithms.context import ModelInfo
from netfl.compute import ComputeEngine
from netfl.core.activity import Activities
from netfl.core.nodes import Node
from netfl.core.records import Recorder
from netfl.core.rng import Streams
from netfl.errors import UserError
from netfl.learning.tasks import Executor, TrainConfig
from netfl.policies.states import DeviceStates
from netfl.scenario.schema import Scenario
from netfl.sim.build import (
    build_devices,
    build_executor,
    build_infrastructure,
    build_models,
    build_policy,
    build_radio,
    initial_state,
    train_config,
)
from netfl.sim.coverage import CoverageLog
from netfl.sim.data import build_data
from netfl.sim.device_availability import DeviceAvailability
from netfl.sim.device_mobility import DeviceMobility
from netfl.sim.evaluation import evaluate_many
from netfl.sim.faults import keep_finite
from netfl.sim.placement import Placement
from netfl.sim.specs import resolve_run

if TYPE_CHECKING:
    import torch

#: ModelInfo (netfl.algorithms.context) and build_data (netfl.sim.data) are re-exported
__all__ = ["World", "ModelInfo", "build_data"]


#: without ``training.time_budget_s``, how long a run may wait for a device to turn on
#: before it stops (one simulated day) [s]
AVAILABILITY_WAIT_LIMIT_S = 86_400.0


class World:
    """Everything a run needs, built from a scenario; the
    :class:`~netfl.algorithms.context.RoundContext` algorithms run against.

    ``env`` lets a caller run the world on its own SimPy environment (default:
    a new one); ``source`` names the scenario file in error messages.
    """

    def __init__(
        self,
        scenario: Scenario,
        env: simpy.Environment | None = None,
        source: str = "scenario",
    ):
        self.scenario = scenario
        self.source = source
        self.env = env if env is not None else simpy.Environment()
        self.streams = Streams(scenario.seed)
        self.recorder = Recorder()
        self.round_faults: list[str] = []  # devices whose update was dropped this round
        self.learn = scenario.learning.mode == "learn"
        #: what each device is doing now: a departure or a deadline cuts it there
        self.activities = Activities(self.env)
        spec = resolve_run(scenario)  # (the composition step: each part's spec)
        self.dataset, self.partitions = build_data(spec.data, self.streams, source)
        infra = build_infrastructure(spec.infra)
        self.bs, self.cell_nodes, self.deployment = infra.bs, infra.cell_nodes, infra.deployment
        self.placement = Placement(spec.placement, self.streams, infra.deployment)
        #: every device of the scenario; ``devices`` are those in coverage (see
        #: :meth:`update_coverage`), the ones algorithms use
        self.all_devices = build_devices(spec.devices, self.placement)
        self.devices = list(self.all_devices)
        parts = build_radio(
            spec.radio, self.env, self.recorder, self.streams, infra, self.placement
        )
        self.radio, self.channel, self.cues = parts.radio, parts.channel, parts.cues
        # (before the first association: moving UEs use the fields)
        self.mobility = DeviceMobility(
            list(spec.mobility),
            spec.radio.network is not None,
            self.env,
            self.streams,
            self.all_devices,
            self.radio,
            self.placement,
        )
        self.trajectories = self.mobility.trajectories
        self.availability = DeviceAvailability(
            list(spec.availability),
            self.env,
            self.streams,
            self.all_devices,
            self.activities,
        )
        self.coverage = CoverageLog(source, spec.directions, spec.radio.mode == "ofdma")
        self.update_coverage()
        self.compute = ComputeEngine(self.env, self.recorder)
        self.radio.watch(self.activities)
        self.compute.activities = self.activities
        #: what can be known of each device now, and the run's resource policy
        self.states = DeviceStates(self.radio, self.compute, lambda _device: self.bs)
        self.policy = build_policy(scenario.policy, self.env, self.states, self.streams)
        self.device_model_names = list(spec.device_models)
        self.models = build_models(spec.model, self.device_model_names, self.dataset)
        self.model = self.models[scenario.model.name]
        self.train_config = train_config(spec.training)
        self._learning = learning = build_executor(
            spec.learning,
            self.dataset,
            self.models,
            source,
            spec.training.batch_size,
            len(self.all_devices),
        )
        self.executor: Executor | None = learning.executor
        self.torch_device: torch.device | None = learning.torch_device
        #: torch threads of a training job (None in timing mode: no torch work, and no
        #: torch import — a timing run of models counted before starts in a fraction of it)
        self.job_threads = learning.job_threads
        self.job_threads_source = learning.job_threads_source

    def close(self) -> None:
        """Stop the executor's workers and give back the caller's torch threads."""
        self._learning.close()

    @property
    def infrastructure(self) -> list[Node]:
        """The server and every other BS node (the cells of a network)."""
        return [self.bs, *(n for n in self.cell_nodes if n is not self.bs)]

    def edge_of(self, device: Node) -> Node:
        """The BS node of ``device``'s serving cell (an edge server, HierFAVG); the BS
        itself in a single cell."""
        if not self.cell_nodes:
            return self.bs
        return self.cell_nodes[self.radio.serving[device.name]]

    def available_devices(self, r: int) -> list[Node]:
        """The devices in coverage that are on at round ``r``'s start
        (``devices.availability``; every one of them by default). Each of them is cut
        where its on-period ends (a transfer or compute step it runs then stops there)."""
        on = self.availability.available(r, self.devices)
        if self.availability.timed:
            self.availability.watch_departures(on)
        return on

    def next_available_s(self) -> float | None:
        """The first instant after now at which a device in coverage that is off turns
        on (Markov and trace availability; None for the others)."""
        return self.availability.next_on_s(self.devices)

    def wait_for_return_s(self) -> float | None:
        """:meth:`next_available_s` for a server with nobody on and nobody in flight,
        which can only wait for it: without ``training.time_budget_s``, an instant more
        than :data:`AVAILABILITY_WAIT_LIMIT_S` away stops the run with a one-line
        :class:`~netfl.errors.UserError` — waiting would simulate that long (every CUE
        session on the way) for a run that can do nothing meanwhile. A budget bounds
        the wait itself: the run ends at the budget's round."""
        t = self.next_available_s()
        budget = self.scenario.training.time_budget_s
        if t is not None and budget is None and t - self.env.now > AVAILABILITY_WAIT_LIMIT_S:
            raise UserError(
                f"devices.availability: no device is on at t = {self.env.now:.6g} s and "
                f"none returns within {AVAILABILITY_WAIT_LIMIT_S:g} s of simulated time (the "
                f"first at t = {t:.6g} s): shorten the off periods, or set a "
                "training.time_budget_s to wait that long"
            )
        return t

    def move(self, nodes) -> None:
        """Bring the moving devices among ``nodes`` to their positions now (a network
        first applies the A3 rule along the way)."""
        self.mobility.move(nodes)

    def begin_round(self, r: int) -> None:
        """Called by the runner before round ``r``: re-drops UEs if the scenario asks;
        moving devices are brought to where they are now."""
        if self.scenario.cell.redrop_every_round and r > 0:
            self.redrop(r)
        if self.trajectories:
            self.move(self.all_devices)
        self.activities.restore(self.all_devices)  # (cut last round: they may take part)

    def redrop(self, *keys: int) -> None:
        """Re-drop every device uniformly over the cell from the ``placement`` stream of ``keys``.

        Algorithms may call it on demand (e.g. FedDif after each diffusion round) with
        keys such as ``(r, k)``; the same keys give the same positions.
        """
        for node, pos in zip(self.all_devices, self.placement.positions(*keys), strict=True):
            node.position_m = pos
        self.placement.place_indoors(self.all_devices, *keys)
        self.update_coverage()

    def update_coverage(self) -> None:
        """Which devices the cell can serve at their positions (:class:`CoverageLog`):
        ``devices`` are those in coverage."""
        self.devices = self.coverage.update(
            self.radio, self.bs, self.all_devices, self.recorder.round
        )
        #: the devices whose downlink is served (downlink-only traffic reaches them)
        self.downlink_devices = self.coverage.downlink_served

    def device_model(self, device: Node) -> ModelInfo:
        """The architecture device ``device`` runs (``model`` unless the scenario assigns
        per-device models)."""
        return self.models[self.device_model_names[device.index]]

    # -- helpers for algorithms --------------------------------------------
    def keep_finite(self, items: list, names: list[str]) -> list:
        """The items (device results, states, scores) whose tensors are all finite; each
        dropped one is recorded in ``round_faults`` (:func:`netfl.sim.faults.keep_finite`:
        ``training.on_nonfinite: abort`` raises at the first)."""
        policy = self.scenario.training.on_nonfinite
        return keep_finite(
            items, names, policy, self.recorder.round, self.source, self.round_faults
        )

    def num_samples(self, device: Node) -> int:
        return len(self.partitions[device.index])

    def submit_device_job(
        self,
        task_type: type,
        r: int,
        device: Node,
        *,
        seed_key: tuple[int, ...] = (),
        seed: int | None = None,
        config: TrainConfig | None = None,
        **fields: Any,
    ) -> Future | None:
        """Submit ``device``'s job of round ``r`` (a task type of
        :mod:`netfl.learning.tasks`) to the executor; ``None`` in timing mode.

        Filled in unless given: ``model`` (the device's architecture), ``indices`` (its
        partition), ``config`` (``training``'s local SGD) and ``seed`` (the ``torch``
        stream of ``(r, device, *seed_key)``: a device with two jobs in one round passes
        a distinct ``seed_key``). The job is submitted when the device's compute step
        starts and its result collected when the step ends (docs/architecture.md, "The executor seam").
        """
        if not self.learn or self.activities.is_cut(device):
            return None  # (timing mode; or the device left: its step fails, nothing to train)
        assert self.executor is not None
        fields.setdefault("model", self.device_model(device).name)
        fields.setdefault("indices", self.partitions[device.index])
        if seed is None:
            seed = self.streams.torch_seed("torch", r, device.index, *seed_key)
        task = task_type(
            config=self.train_config if config is None else config, seed=seed, **fields
        )
        return self.executor.submit(task)

    def init_model_state(self, name: str | None = None, *keys: int) -> dict[str, torch.Tensor]:
        """Initial parameters of model ``name`` (default: the global model), seeded from
        the ``model_init`` stream (of ``keys`` too, e.g. a device index, when given)."""
        spec = self.models[name or self.model.name].spec
        return initial_state(spec, self.dataset, self.streams.torch_seed("model_init", *keys))

    def evaluate(
        self, state: dict[str, torch.Tensor], name: str | None = None
    ) -> tuple[float, float]:
        """Accuracy and loss of ``state`` (of model ``name``, default the global model) on
        the server's test set (not charged in time)."""
        return self.evaluate_many([(state, name)])[0]

    def evaluate_many(
        self, items: list[tuple[dict[str, torch.Tensor], str | None]]
    ) -> list[tuple[float, float]]:
        """:meth:`evaluate` of every ``(state, model name)``, as jobs of the executor
        (:func:`netfl.sim.evaluation.evaluate_many`: in parallel on a pool, the serial
        executor's results)."""
        named = [(state, self.models[name or self.model.name].name) for state, name in items]
        n, batch = len(self.dataset.test_y_np), self.scenario.learning.eval_batch_size
        return evaluate_many(self.executor, n, batch, named)

    def __repr__(self) -> str:
        return (
            f"World({self.scenario.name!r}, devices={len(self.devices)}, "
            f"radio={self.radio!r}, t={self.env.now:.3f} s)"
        )
