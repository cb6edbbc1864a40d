"""The run-time world of a run: the :class:`~netfl.algorithms.context.RoundContext`
algorithms use.

It holds the simulation clock, the random streams, the cell and its nodes, the
federated data, the models' sizes and FLOPs, the radio, the compute engine, the
learning executor and the recorder — built by :mod:`netfl.sim.build` from a validated
:class:`~netfl.scenario.schema.Scenario`, each part from what it names explicitly.
"""

from __future__ import annotations

import logging
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
from netfl.learning.tasks import EvalTask, Executor, TrainConfig
from netfl.scenario.schema import Scenario
from netfl.sim.build import (
    build_devices,
    build_executor,
    build_infrastructure,
    build_models,
    build_radio,
    train_config,
)
from netfl.sim.data import build_data
from netfl.sim.device_availability import DeviceAvailability
from netfl.sim.device_mobility import DeviceMobility
from netfl.sim.placement import Placement

if TYPE_CHECKING:
    import pandas as pd
    import torch

#: ModelInfo (netfl.algorithms.context) and build_data (netfl.sim.data) are re-exported
__all__ = ["World", "ModelInfo", "build_data"]

log = logging.getLogger(__name__)


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
        self.dataset, self.partitions = build_data(scenario, self.streams, source)
        infra = build_infrastructure(scenario)
        self.bs, self.cell_nodes, self.deployment = infra.bs, infra.cell_nodes, infra.deployment
        self.placement = Placement(scenario, self.streams, infra.deployment)
        #: every device of the scenario; ``devices`` are those in coverage (see
        #: :meth:`update_coverage`), the ones algorithms use
        self.all_devices = build_devices(scenario, self.placement)
        self.devices = list(self.all_devices)
        parts = build_radio(scenario, self.env, self.recorder, self.streams, infra, self.placement)
        self.radio, self.channel, self.cues = parts.radio, parts.channel, parts.cues
        # (before the first association: moving UEs use the fields)
        self.mobility = DeviceMobility(
            scenario, self.env, self.streams, self.all_devices, self.radio, self.placement
        )
        self.trajectories = self.mobility.trajectories
        self.availability = DeviceAvailability(
            scenario, self.env, self.streams, self.all_devices, self.activities
        )
        self.coverage_frames: list[pd.DataFrame] = []
        self.update_coverage()
        self.compute = ComputeEngine(self.env, self.recorder)
        self.radio.watch(self.activities)
        self.compute.activities = self.activities
        self.models, self.device_model_names = build_models(scenario, self.dataset)
        self.model = self.models[scenario.model.name]
        self.train_config = train_config(scenario)
        learning = build_executor(scenario, self.dataset, self.models, source)
        self.executor: Executor | None = learning.executor
        self.torch_device: torch.device | None = learning.torch_device
        #: torch threads of a training job (None in timing mode: no torch work, and no
        #: torch import — a timing run of models counted before starts in a fraction of it)
        self.job_threads = learning.job_threads
        self.job_threads_source = learning.job_threads_source
        self._threads_before = learning.threads_before

    def close(self) -> None:
        """Stop the executor's workers (a no-op for the serial executor) and give this
        process back the torch thread count it had before (``learning.num_threads``
        applies to the run, not to what the caller does next)."""
        if self.executor is not None:
            self.executor.close()
        if self._threads_before is not None:
            import torch

            torch.set_num_threads(self._threads_before)

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
        """Which devices the cell can serve at their positions: a device whose uplink or
        downlink to the BS has no rate even at a fading peak (e.g. below the lowest CQI of
        an LTE profile) is *starved* — a scheduler never serves it, so it takes no part
        in the rounds (``devices`` leaves it out). Each drop appends one row per device to
        the ``coverage`` table (mean SNRs, starved or not); a starved device is logged;
        no device in coverage is a :class:`~netfl.errors.UserError`."""
        frame = self.radio.coverage(self.bs, self.all_devices)
        frame.insert(0, "round", self.recorder.round)
        self.coverage_frames.append(frame)
        starved = set(frame.loc[frame["starved"], "device"])
        self.devices = [d for d in self.all_devices if d.name not in starved]
        if not self.devices:
            raise UserError(
                f"{self.source}: no device is in coverage of the BS (all {len(starved)} "
                "starved: no rate even at the lowest CQI/MCS); shrink cell.radius_m, move "
                "the devices closer (devices.layout) or raise the transmit power"
            )
        if starved:
            log.warning(
                "round %d: %d device(s) out of coverage (no rate at the lowest CQI/MCS), "
                "left out: %s",
                self.recorder.round,
                len(starved),
                ", ".join(sorted(starved, key=lambda n: (len(n), n))),
            )

    def coverage_table(self) -> pd.DataFrame:
        """Every drop's per-device coverage rows (:meth:`update_coverage`)."""
        import pandas as pd

        return pd.concat(self.coverage_frames, ignore_index=True)

    def tables(self) -> dict[str, pd.DataFrame]:
        """``coverage`` on OFDMA links (which devices the cell can serve, at each drop;
        fixed-rate links serve every device)."""
        return {"coverage": self.coverage_table()} if self.radio.mode == "ofdma" else {}

    def device_model(self, device: Node) -> ModelInfo:
        """The architecture device ``device`` runs (``model`` unless the scenario assigns
        per-device models)."""
        return self.models[self.device_model_names[device.index]]

    # -- helpers for algorithms --------------------------------------------
    def keep_finite(self, items: list, names: list[str]) -> list:
        """The items (device results, states, scores) whose tensors are all finite.

        Each dropped one is recorded in ``round_faults`` (the runner writes the count
        as ``nonfinite_updates``); with ``training.on_nonfinite: abort`` the first one
        raises :class:`~netfl.errors.NumericalFault`. A global model is therefore
        never aggregated from NaN/Inf values.
        """
        from netfl.errors import NumericalFault
        from netfl.learning.params import all_finite

        kept = []
        for item, name in zip(items, names, strict=True):
            if item is None or all_finite(item):
                kept.append(item)
                continue
            if self.scenario.training.on_nonfinite == "abort":
                raise NumericalFault(
                    f"{self.source}: training.on_nonfinite: round {self.recorder.round}: "
                    f"{name}'s update holds NaN/Inf values (lower training.lr, or set "
                    "on_nonfinite: drop to leave such updates out)"
                )
            log.warning(
                "round %d: %s's update holds NaN/Inf values; dropped", self.recorder.round, name
            )
            self.round_faults.append(name)
        return kept

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
        starts and its result collected when the step ends (DESIGN.md, executor seam).
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
        import torch

        with torch.random.fork_rng():
            torch.manual_seed(self.streams.torch_seed("model_init", *keys))
            model = spec.build(self.dataset.input_shape, self.dataset.num_classes)
        return {k: v.detach().clone() for k, v in model.state_dict().items()}

    def evaluate(
        self, state: dict[str, torch.Tensor], name: str | None = None
    ) -> tuple[float, float]:
        """Accuracy and loss of ``state`` (of model ``name``, default the global model) on
        the server's test set (not charged in time)."""
        return self.evaluate_many([(state, name)])[0]

    def evaluate_many(
        self, items: list[tuple[dict[str, torch.Tensor], str | None]]
    ) -> list[tuple[float, float]]:
        """:meth:`evaluate` of every ``(state, model name)``, as jobs of the executor: on a
        pool the evaluations run in parallel, and a single one is split into runs of whole
        test batches over the workers. The per-batch scores are summed in batch order, so
        the results are the serial executor's (with the same job threads)."""
        n = len(self.dataset.test_y_np)
        batch = self.scenario.learning.eval_batch_size
        batches = -(-n // batch)
        workers = getattr(self.executor, "workers", 1)
        chunks = max(1, min(batches, -(-workers // max(len(items), 1))))
        bounds = [
            (batches * i // chunks * batch, min(batches * (i + 1) // chunks * batch, n))
            for i in range(chunks)
        ]
        jobs = [
            [
                self.executor.submit(
                    EvalTask(self.models[name or self.model.name].name, state, a, b, batch)
                )
                for a, b in bounds
            ]
            for state, name in items
        ]
        from netfl.learning.train import combine_scores

        return [combine_scores([s for job in row for s in job.result()], n) for row in jobs]

    def __repr__(self) -> str:
        return (
            f"World({self.scenario.name!r}, devices={len(self.devices)}, "
            f"radio={self.radio!r}, t={self.env.now:.3f} s)"
        )
