"""What asynchronous FL on the wireless clock shares: the training slots, versions and
staleness, and one-update rounds; the algorithms are :mod:`netfl.algorithms.fedasync`
and :mod:`netfl.algorithms.fedbuff`.

Both keep ``concurrency`` devices training at every instant (all devices by default):
a slot's device downloads the current global model (recording its version τ), trains
``training.local_epochs`` on its data (compute time from FLOPs) and uploads; when its
upload has arrived the slot picks a device anew, uniformly among the available idle
devices (with every device training, the same one: it downloads the new global model
and starts again at once) — or, under a resource policy other than ``random``
(docs/policies.md), the one the policy decides among them, with its uplink share,
transmit power and CPU frequency held until its update has arrived or it was cut (a
*pick* is the policy's decision: ``decide(k, idle, 1, work)`` with k the run's pick
number, its row in the ``policy`` table under ``round`` = k). Under
``policy.outage_sinr_db`` an update whose upload's SINR is below θ is lost: the server
never sees it. A device that leaves (``devices.availability``) is cut
where it is and its slot picks another; with nobody available the slot waits for the
first device to come back. The server's work per arrival is a compute step.

A *round* of these algorithms is one server update (``rounds.csv``: one row per
update): it ends when the update is applied, while the other devices go on training
across it. Its row says how many client updates it contained (``updates``), their
staleness (``staleness_mean``, ``staleness_max``) and, as every row, the bits, energy
and time of the window since the last update. ``training.rounds`` counts updates.

Checkpoints are taken at update instants and hold the global model, the versions that
devices still train from and the buffered updates; a resume replays the clock (the
schedule never depends on learned values) and the devices in flight then train from
their saved versions, as the uninterrupted run did (their torch job is a pure function
of the version, the data and the seed).
"""

from __future__ import annotations

import logging
import math
from abc import abstractmethod
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import simpy
from pydantic import Field

from netfl.algorithms.algorithm import Algorithm, RoundSummary, honours
from netfl.algorithms.update_coding import CodedConfig
from netfl.core.activity import DeviceCut
from netfl.core.nodes import Node
from netfl.learning.tasks import TrainTask
from netfl.policies.resource_policy import RoundWork

if TYPE_CHECKING:
    from netfl.algorithms.context import RoundContext

__all__ = ["AsyncAlgorithm", "AsyncConfig", "Arrival", "staleness_weight"]

log = logging.getLogger(__name__)

#: a slot that draws nobody available this many times in a row stops (Bernoulli
#: availability draws anew at every pick; the run ends when every slot has stopped)
MAX_EMPTY_DRAWS = 1000
#: this many updates in a row lost in an outage (``policy.outage_sinr_db`` above what
#: the devices reach) and the slots stop: no server update would ever come
MAX_LOST_IN_A_ROW = 1000


def staleness_weight(kind: str, staleness: int, a: float = 0.5, b: float = 4.0) -> float:
    """s(t − τ) of FedAsync's eq. (2): ``constant`` 1; ``polynomial`` (t − τ + 1)^−a;
    ``hinge`` 1 for t − τ ≤ b, else 1 / (a·(t − τ − b) + 1). FedBuff's ``inverse_sqrt``:
    1 / √(1 + t − τ)."""
    if kind == "constant":
        return 1.0
    if kind == "polynomial":
        return float((staleness + 1.0) ** (-a))
    if kind == "hinge":
        return 1.0 if staleness <= b else 1.0 / (a * (staleness - b) + 1.0)
    if kind == "inverse_sqrt":
        return 1.0 / math.sqrt(1.0 + staleness)
    raise ValueError(f"staleness function {kind!r}")


class AsyncConfig(CodedConfig):
    concurrency: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="devices training at once (default: every device in coverage)",
    )


@dataclass
class Arrival:
    """One client update that reached the server: its device, the version it trained
    from, the staleness at arrival, its training loss and state (learning mode)."""

    device: str
    version: int
    staleness: int
    loss: float
    state: dict | None = None
    delta: dict | None = field(default=None, repr=False)


class AsyncAlgorithm(Algorithm):
    """What FedAsync and FedBuff share: the training slots, versions, staleness and the
    one-update rounds (see the module docstring). Subclasses implement :meth:`absorb`."""

    supports_availability: ClassVar[bool] = True
    #: the directions whose codec it applies (docs/codecs.md)
    codec_directions: ClassVar[frozenset[str]] = frozenset({"uplink", "downlink"})
    #: no majority vote: an arrival is mixed or buffered on its own
    codec_vote_fields: ClassVar[frozenset[str]] = frozenset()
    config: AsyncConfig

    def __init__(self, world: RoundContext, config: AsyncConfig):
        super().__init__(world, config)
        self.global_state = world.init_model_state() if world.learn else None
        #: server updates applied so far (the global model's version)
        self.version = 0
        #: the global models devices train from, by version (learning mode)
        self.versions: dict[int, dict] = {0: self.global_state} if world.learn else {}
        #: version each device in flight received
        self.in_flight: dict[str, int] = {}
        #: trained and not yet arrived: device → (its state, its loss) — learned values a
        #: checkpoint keeps (a resumed run replays the clock without training)
        self.pending: dict[str, tuple[dict | None, float]] = {}
        self._updates: simpy.Store | None = None
        self._freed: simpy.Event | None = None
        self._live = 0
        self._stopped = False
        self._picks = 0
        #: the update codecs at work: a version's download encoded once, an upload
        #: against the version it trained from (:mod:`netfl.algorithms.update_coding`)
        self.coding = CodedConfig.coding(world, config, lambda _device: world.model.size_bits)
        self._lost_in_a_row = 0
        self._stopped_lost = False

    # -- the slots ---------------------------------------------------------------
    def _start(self) -> None:
        env = self.world.env
        self._updates = simpy.Store(env)
        self._freed = env.event()
        slots = len(self.world.devices)
        if self.config.concurrency is not None:
            slots = min(slots, self.config.concurrency)
        self._live = slots
        for k in range(slots):
            env.process(self._slot(k))
        if not slots:
            self._updates.put([])  # (no device in coverage: an empty round, then none)

    def _pick(self, slot: int) -> Generator[simpy.Event, Any, Node | None]:
        """A device for ``slot``: uniform among the available devices not in flight, or
        the resource policy's choice among them (none chosen: as if none were idle)."""
        misses = 0
        policy = self.world.policy
        while True:
            self._picks += 1
            on = self.world.available_devices(self._picks)
            idle = [d for d in on if d.name not in self.in_flight]
            if idle and policy.name != "random":
                chosen = policy.decide(self._picks, idle, 1, self.round_work())
                if chosen:
                    self.world.activities.restore(chosen[:1])
                    return chosen[0]
                policy.end_round(self._picks)
                idle = []
            if idle:
                rng = self.world.streams.generator("sampling", slot, self._picks)
                device = idle[int(rng.integers(len(idle)))]
                self.world.activities.restore([device])
                return device
            env = self.world.env
            # (with nobody in flight the server can only wait for a return: bounded)
            t = self.world.next_available_s() if self.in_flight else self.world.wait_for_return_s()
            if t is None and not self.in_flight:
                # Bernoulli availability draws anew at every pick; with nobody in
                # coverage, or every draw empty this often, nobody will come: it stops
                misses += 1
                if not self.world.devices or misses > MAX_EMPTY_DRAWS:
                    return None
                continue
            misses = 0
            assert self._freed is not None
            wake = self._freed if t is None else self._freed | env.timeout(max(t - env.now, 0.0))
            yield wake  # (a device comes back, or one in flight becomes idle)

    def _slot(self, slot: int) -> Generator[simpy.Event, Any, None]:
        iteration = 0
        while True:
            hopeless = self._lost_in_a_row >= MAX_LOST_IN_A_ROW
            if hopeless and not self._stopped_lost:
                self._stopped_lost = True
                log.warning(
                    "%s: the last %d updates were all lost in an outage (policy."
                    "outage_sinr_db): no server update can come, the run ends",
                    self.name,
                    MAX_LOST_IN_A_ROW,
                )
            device = None if hopeless else (yield from self._pick(slot))
            if device is None:
                self._live -= 1
                if not self._live and self._updates is not None:
                    self._stopped = True
                    self._updates.put([])  # (every slot stopped: the run ends)
                return
            iteration += 1
            pick, policy = self._picks, self.world.policy
            a = policy.allocation(pick, device)
            policy.hold(device, a.share, a.power_w, a.frequency_hz)
            try:
                yield from self._client(device, slot, iteration, pick)
            except DeviceCut as cut:
                policy.release(pick, device, cut.reason)  # (its update is lost)
                if cut.reason == "left":  # (its state, codec memory included, is lost)
                    self.coding.forget(device)
            finally:
                policy.end_round(pick)
                self.in_flight.pop(device.name, None)
                self.pending.pop(device.name, None)
                self._forget_versions()
                freed, self._freed = self._freed, self.world.env.event()
                if freed is not None:
                    freed.succeed()

    def _client(
        self, device: Node, slot: int, iteration: int, pick: int
    ) -> Generator[simpy.Event, Any, None]:
        world, env = self.world, self.world.env
        activities, me = world.activities, env.active_process
        activities.enter((device,), me)
        version = self.version
        self.in_flight[device.name] = version
        try:
            # (it receives the model of the version current when the download starts)
            down = self.coding.download((version,), self.versions.get(version), device)[0]
            yield world.radio.transfer(world.bs, device, down, "model_down", num_models=1)
            result = yield from self._train(device, version, slot, iteration)
            state, loss = None, float("nan")
            if result is not None:
                loss = float(result.mean_loss)
                state = result.state if world.keep_finite([result], [device.name]) else None
            # (what it trained from, decoded anew: a resume's replay had no values)
            base = self.versions.get(version)
            start = self.coding.download((version,), base, device)[1]
            up, state = self.coding.upload((version, slot, iteration), device, state, start, base)
            self.pending[device.name] = (state, loss)
            yield world.radio.transfer(device, world.bs, up, "model_up", num_models=1)
        except simpy.Interrupt as stop:
            raise (stop.cause if isinstance(stop.cause, DeviceCut) else stop) from None
        finally:
            activities.leave((device,), me)
        if not self.world.policy.release(pick, device, "arrived"):  # (lost in an outage)
            self.pending.pop(device.name, None)
            self._lost_in_a_row += 1
            return
        self._lost_in_a_row = 0
        yield from self.absorb(device.name, version)

    def round_work(self) -> RoundWork:
        """What one client's part costs, for a resource policy's estimates: the model
        down and up, ``training.local_epochs`` epochs of its samples; no deadline."""
        world = self.world
        epochs = world.train_config.epochs

        def samples(device: Node) -> float:
            return float(world.num_samples(device) * epochs)

        return RoundWork(
            download_bits=lambda d: self.coding.estimated_bits("downlink", d),
            upload_bits=lambda d: self.coding.estimated_bits("uplink", d),
            train_flops=lambda d: world.device_model(d).flops.train_per_sample * samples(d),
            train_samples=samples,
        )

    def _train(
        self, device: Node, version: int, slot: int, iteration: int
    ) -> Generator[simpy.Event, Any, Any]:
        """Local training from global version ``version``: the compute step, and the torch
        job (submitted when the step starts; after a resume, when it ends, from the saved
        version — the same job)."""
        world = self.world
        cfg = world.train_config
        flops = world.device_model(device).flops.train_per_sample * world.num_samples(device)
        key = (version, slot, iteration)

        def submit():
            start = self.coding.download((version,), self.versions[version], device)[1]
            return world.submit_device_job(TrainTask, 0, device, seed_key=key, state=start)

        future = submit() if world.learn else None
        yield world.compute.run(device, flops * cfg.epochs, "train")
        if world.learn and future is None and not world.activities.is_cut(device):
            future = submit()  # (a resumed run: the job of a device in flight at the checkpoint)
        return future.result() if future is not None else None

    def _forget_versions(self) -> None:
        keep = set(self.in_flight.values()) | {self.version}
        for v in [v for v in self.versions if v not in keep]:
            del self.versions[v]

    # -- the server ----------------------------------------------------------------
    @abstractmethod
    def absorb(self, device: str, version: int) -> Generator[simpy.Event, Any, None]:
        """What the server does with the update of ``device``, trained from ``version``
        (may apply a server update: :meth:`publish`)."""

    def arrival(self, device: str, version: int) -> Arrival:
        """The update of ``device`` as the server takes it in, after its compute step: its
        state and loss leave :attr:`pending` only now (a checkpoint in between keeps them);
        its staleness is t − τ at this instant."""
        state, loss = self.pending.pop(device)
        return Arrival(device, version, self.version - version, loss, state)

    def publish(self, new_state: dict | None, arrivals: list[Arrival]) -> None:
        """A server update is applied: the global model becomes ``new_state`` (learning
        mode), the version advances, the round waiting for it ends."""
        if self.world.learn and new_state is not None:
            self.global_state = new_state
        self.version += 1
        if self.world.learn:
            self.versions[self.version] = self.global_state
        self._forget_versions()
        assert self._updates is not None
        self._updates.put(arrivals)

    def server_step(self, flops: float) -> simpy.Event:
        return self.world.compute.run(self.world.bs, flops, "aggregate")

    # -- protocol ----------------------------------------------------------------
    @honours("policy", "outage")
    def round(self, r: int) -> Generator[simpy.Event, Any, RoundSummary]:
        if self._updates is None:
            self._start()
        assert self._updates is not None
        env, budget = self.world.env, self.world.scenario.training.time_budget_s
        get = self._updates.get()
        if budget is not None and budget > env.now:
            # (every attempt may be cut by departures: the clock must still reach the budget)
            yield get | env.timeout(budget - env.now)
            if not get.triggered:
                get.cancel()
                return RoundSummary(num_clients=0)
            arrivals = get.value
        else:
            arrivals = yield get
        if not arrivals:  # (no device left to train: an empty round, and every one after)
            self._updates.put([])
            return RoundSummary(num_clients=0)
        stale = [a.staleness for a in arrivals]
        losses = [a.loss for a in arrivals if not math.isnan(a.loss)]
        return RoundSummary(
            num_clients=len(arrivals),
            train_loss=float(np.mean(losses)) if losses else float("nan"),
            extra={
                "updates": float(len(arrivals)),
                "staleness_mean": float(np.mean(stale)),
                "staleness_max": float(np.max(stale)),
                "in_flight": float(len(self.in_flight)),
            },
        )

    @property
    def finished(self) -> bool:
        """Every slot stopped: nobody will train again (the runner ends the run)."""
        return self._stopped

    def evaluate(self) -> tuple[float, float]:
        return self.world.evaluate(self.global_state)

    def state_dict(self) -> dict[str, Any]:
        from netfl.learning.params import clone_state

        return {
            "global_state": clone_state(self.global_state) if self.global_state else None,
            "versions": {v: clone_state(s) for v, s in self.versions.items() if s is not None},
            "pending": {
                d: (clone_state(st) if st is not None else None, loss)
                for d, (st, loss) in self.pending.items()
            },
            # (updates published at the checkpoint's instant that rounds have yet to report)
            "queued_losses": [[a.loss for a in q] for q in self._queued()],
            "codec_memory": self.coding.state_dict(),
        }

    def _queued(self) -> list[list[Arrival]]:
        return list(self._updates.items) if self._updates is not None else []

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.global_state = state["global_state"]
        self.versions = dict(state["versions"])
        self.pending = {d: (st, float(loss)) for d, (st, loss) in state["pending"].items()}
        self.coding.load_state_dict(state.get("codec_memory", {}))
        for queued, losses in zip(self._queued(), state["queued_losses"], strict=True):
            for arrival, loss in zip(queued, losses, strict=True):
                arrival.loss = float(loss)
