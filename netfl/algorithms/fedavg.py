"""FedAvg: federated averaging, the baseline of every family.

H. B. McMahan, E. Moore, D. Ramage, S. Hampson, B. Agüera y Arcas,
"Communication-Efficient Learning of Deep Networks from Decentralized Data",
AISTATS 2017 (Algorithm 1).

Per round: sample ``max(min_clients, round(fraction · N))`` devices; in
parallel each downloads the global model, trains locally (compute time from
FLOPs), and uploads; the server aggregates ``w ← Σ_k n_k w_k / Σ_k n_k``.

Devices that leave mid-round (``devices.availability``) and, with
``deadline_s``, those whose upload has not arrived by the deadline are cut there
(:mod:`netfl.core.activity`: their transfer or compute step stops, recorded with
what it did until then): the server aggregates the updates that arrived — the
classic wireless baseline (e.g. FedCS, Nishio & Yonetani, ICC 2019, aggregates the
clients that finish by a round deadline).

The round calls named hooks, each a step a variant overrides (and a resource policy or
an update codec plugs into) — never a check of which methods a subclass replaced:
select (:meth:`FedAvg.select_clients`: docs/tutorials/client-selection.md picks by
channel and by a deadline), configure (:meth:`FedAvg.configure_client`: a client's
epochs), local update (:meth:`FedAvg.local_update`, inside
:meth:`FedAvg.client_round`: one device's download, training, upload), payload
(:meth:`FedAvg.payload`: the upload's bits and what the server receives; a model copy's
size :meth:`FedAvg.model_bits`: docs/tutorials/payload.md) and aggregate
(:meth:`FedAvg.aggregator` as updates arrive, then :meth:`FedAvg.server_update`).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import simpy
from pydantic import Field

from netfl.algorithms.algorithm import Algorithm, RoundSummary, honours, register
from netfl.algorithms.hooks import Aggregator, ClientConfig, Payload, cut_counts, is_cut
from netfl.algorithms.over_the_air import OtaConfig, OverTheAir
from netfl.algorithms.update_coding import CodedConfig
from netfl.core.activity import DeviceCut
from netfl.core.nodes import Node
from netfl.learning.tasks import TrainTask
from netfl.policies.resource_policy import RoundWork

if TYPE_CHECKING:
    from netfl.algorithms.context import RoundContext
    from netfl.learning.train import TrainResult

__all__ = ["FedAvg", "FedAvgConfig", "is_cut", "cut_counts"]


class FedAvgConfig(CodedConfig):
    fraction: float = Field(1.0, gt=0.0, le=1.0, description="share of devices sampled per round")
    min_clients: int = Field(
        1, ge=1, description="at least this many devices per round", le=100_000
    )
    downlink: Literal["unicast", "multicast"] = Field(
        "unicast",
        description="send the global model to each client (unicast) or once to all "
        "(multicast, at the weakest client's rate)",
    )
    deadline_s: float | None = Field(
        None,
        gt=0.0,
        le=1e7,
        description="the server aggregates the updates that arrived within this many "
        "seconds of the round's start (when its clients are chosen, after any wait for a "
        "device to come back); the others are cut there and recorded late (none: wait "
        "for every client)",
    )
    aggregation: Literal["digital", "over_the_air"] = Field(
        "digital",
        description="digital: each update a transfer of its own; over_the_air: the round's "
        "clients transmit at once as analog symbols and the BS receives their weighted sum "
        "(broadband analog aggregation, docs/codecs.md; OFDMA cells: one, or a network)",
    )
    over_the_air: OtaConfig = Field(
        default_factory=OtaConfig,
        description="the analog uplink's options (aggregation: over_the_air)",
    )


@register
class FedAvg(Algorithm):
    """Federated averaging (McMahan et al., 2017, Algorithm 1)."""

    #: its rounds select among the devices available at their start; a variant that
    #: replaces :meth:`round` without calling it sets False
    supports_availability: ClassVar[bool] = True
    #: the download's kind and the model copies it carries, unicast or multicast (a
    #: variant whose payload is no model says so)
    download_kind: ClassVar[str] = "model_down"
    download_models: ClassVar[int] = 1
    #: the directions whose codec (``uplink_codec``, ``downlink_codec``) this class
    #: applies in its :meth:`download` and :meth:`payload`; a variant that moves other
    #: payloads declares none (``netfl validate`` then refuses a codec)
    codec_directions: ClassVar[frozenset[str]] = frozenset({"uplink", "downlink"})
    #: the codec keys whose majority vote (``sign``'s ``vote``) its aggregation applies
    codec_vote_fields: ClassVar[frozenset[str]] = frozenset({"uplink_codec"})
    #: its uplink may aggregate over the air (its round's model updates, FedAvg's
    #: weights); read from the class's own body: a subclass (a plugin) says it again
    #: (its payload and server update are bypassed by the analog slot)
    supports_over_the_air: ClassVar[bool] = True
    name = "fedavg"
    Config = FedAvgConfig
    config: FedAvgConfig

    def __init__(self, world: RoundContext, config: FedAvgConfig):
        super().__init__(world, config)
        self.global_state = world.init_model_state() if world.learn else None
        #: the round's aggregator (:meth:`aggregator`) while the round runs
        self._aggregator: Aggregator | None = None
        self._started: set[int] = set()  # (the round's clients whose part began)
        #: the update codecs at work (a part: :mod:`netfl.algorithms.update_coding`)
        self.coding = CodedConfig.coding(world, config, self.model_bits)
        #: the analog uplink (``aggregation: over_the_air``; None: digital transfers)
        self.ota: OverTheAir | None = None
        if getattr(config, "aggregation", "digital") == "over_the_air":
            raw = self.coding.raw_keys()
            values = sum(
                t.numel()
                for k, t in world.init_model_state().items()
                if t.is_floating_point() and k not in raw
            )
            self.ota = OverTheAir(world, config.over_the_air, values)

    # -- steps a variant may override ------------------------------------
    def select_clients(self, r: int) -> list[Node]:
        """The devices that take part in round ``r`` (the override point of a selection).

        FedAvg samples without replacement from the ``sampling`` stream of round ``r``,
        among those available at the round's start (``devices.availability``; with the
        default ``always``, every device in coverage): ``fraction`` of them, at least
        ``min_clients`` where that many are available. Called at the round's start
        (``env.now``), before any transfer; an override may read the round context
        (e.g. ``LinkStates`` of its radio) but should yield nothing.

        Parameters
        ----------
        r : int
            The round (0-based).

        Returns
        -------
        list of Node
            The clients; empty: nobody is available (:meth:`wait_for_clients` then waits
            for a device to come back and asks again).
        """
        devices = self.world.available_devices(r)
        if not devices:
            return []
        k = min(
            len(devices),
            max(self.config.min_clients, int(round(self.config.fraction * len(devices)))),
        )
        return self.world.policy.decide(r, devices, k, self.round_work())

    def round_work(self) -> RoundWork:
        """What a client's part of a round costs, for the resource policy's estimates:
        :meth:`model_bits` down and up, ``training.local_epochs`` epochs of its samples,
        the download's mode and ``deadline_s`` (None where a variant's options have
        none)."""
        world = self.world
        epochs = world.train_config.epochs

        def samples(device: Node) -> float:
            return float(world.num_samples(device) * epochs)

        return RoundWork(
            download_bits=lambda d: self.coding.estimated_bits(
                "downlink", None if self.multicast else d
            ),
            upload_bits=lambda d: self.coding.estimated_bits("uplink", d),
            train_flops=lambda d: world.device_model(d).flops.train_per_sample * samples(d),
            train_samples=samples,
            multicast=self.multicast,
            deadline_s=getattr(self.config, "deadline_s", None),
        )

    @property
    def multicast(self) -> bool:
        """Whether the global model goes to the round's clients in one multicast (a
        variant whose options have no ``downlink``: unicast)."""
        return getattr(self.config, "downlink", "unicast") == "multicast"

    def wait_for_clients(self, r: int) -> Generator[simpy.Event, Any, list[Node]]:
        """:meth:`select_clients`; when nobody is on, the server waits for the first
        device to come back (empty only under Bernoulli availability: nobody will).

        Parameters
        ----------
        r : int
            The round.

        Returns
        -------
        list of Node
            The clients (a SimPy process' value: ``yield from``); empty also when devices
            are on but the selection chose none (a resource policy whose deadline none
            fits: the round then has no clients and takes no time).
        """
        env = self.world.env
        clients = self.select_clients(r)
        while not clients and not self.world.available_devices(r):  # (a policy may choose none)
            t = self.world.wait_for_return_s()
            if t is None:
                return []
            yield env.timeout(t - env.now)
            clients = self.select_clients(r)
        return clients

    def configure_client(self, r: int, device: Node) -> ClientConfig:
        """A client's settings for round ``r`` (the configure hook, where a resource
        policy plugs in): :meth:`begin_client` asks it first, at the client's start, and
        trains ``epochs`` local epochs, and the round holds the uplink share, transmit
        power and CPU frequency in force while the client's part runs. It yields nothing
        and draws nothing. FedAvg's: ``training.local_epochs`` for every client, and what
        the resource policy allocated it (``policy``; none under ``random``)."""
        a = self.world.policy.allocation(r, device)
        return ClientConfig(
            epochs=self.world.train_config.epochs,
            share=a.share,
            power_w=a.power_w,
            frequency_hz=a.frequency_hz,
        )

    def begin_client(self, r: int, device: Node) -> ClientConfig:
        """A client's part of round ``r`` starts: its settings (:meth:`configure_client`)
        and the uplink share, transmit power and CPU frequency among them held in force
        until its part ends (the round releases them, arrived or cut). A
        :meth:`client_round` calls it first (an override of ``client_round`` too)."""
        settings = self.configure_client(r, device)
        self.world.policy.hold(device, settings.share, settings.power_w, settings.frequency_hz)
        return settings

    def model_bits(self, device: Node | None = None) -> float:
        """Bits on air of one model copy to or from a device [bit].

        FedAvg calls it three ways: ``model_bits(device)`` for a device's unicast
        download and, through :meth:`payload`, for its upload (both directions get the
        same size), and ``model_bits()`` with no device for the multicast download
        (``downlink: multicast``, :meth:`round`). An override changes the bits the radio
        carries — so airtime, RBs and modem energy — never the parameters' values: a
        quantiser that should also change what the server averages overrides
        :meth:`payload`. Aggregation FLOPs (:meth:`aggregation_flops`) count
        parameters, not bits.

        Parameters
        ----------
        device : Node, optional
            The device that receives or sends; None: the multicast download to every
            client.

        Returns
        -------
        float
            Size [bit]; FedAvg's is ``model.size_bits`` (32 bits per parameter).
        """
        return self.world.model.size_bits

    def payload(self, r: int, device: Node, result: TrainResult | None) -> Payload:
        """Client ``device``'s update ``result`` (None in timing mode) as it goes on air
        (the payload hook, where an update codec plugs in): :meth:`client_round` uploads
        ``bits`` and the server receives its ``result``. Asked once the local update is
        done, before its upload; it yields nothing. FedAvg's: without an
        ``uplink_codec``, ``model_bits(device)`` bits and ``result`` as it is; with one,
        the update Δ = w_k − w̃ (w̃ the model it trained from) encoded — its memory added
        and kept under error feedback — the encoding's exact size on air, and the server
        receives w + Δ̂ (w its own global model, Δ̂ what it decodes); in timing mode the
        size from the tensors' shapes."""
        start = self.download(r, device)[1]
        bits, state = self.coding.upload(
            (r, device.index),
            device,
            None if result is None else result.state,
            start,
            self.global_state,
        )
        return Payload(bits, result if state is None else replace(result, state=state))

    def download(self, r: int, device: Node | None) -> tuple[float, dict | None]:
        """Round ``r``'s global model on the way to ``device`` (None: the multicast to
        every client): its bits on air and the state the client trains from. Without a
        ``downlink_codec``: ``model_bits(device)`` and the global model; with one, the
        model encoded once per round (its size from the shapes in timing mode) and what
        a client decodes."""
        return self.coding.download((r,), self.global_state, device)

    def client_round(
        self, r: int, device: Node, download: bool = True
    ) -> Generator[simpy.Event, Any, TrainResult | None]:
        """One device's part of round ``r``: its settings (:meth:`begin_client`),
        download (unless multicast already did), train (:meth:`local_update`), upload
        (:meth:`payload`), each a SimPy event in simulated time.

        The download is a ``download_kind`` transfer BS → device of
        ``model_bits(device)`` bits, the upload a ``model_up`` transfer device → BS of
        ``payload(...).bits`` bits. What it returns reaches the round's
        :meth:`aggregator` as it arrives, whether FedAvg's or a variant's override.

        Parameters
        ----------
        r : int
            The round.
        device : Node
            The client.
        download : bool
            Whether to send it the global model (False after a multicast download).

        Returns
        -------
        TrainResult or None
            The local update (``state``, ``num_samples``, ``mean_loss`` [nats]); None in
            timing mode.
        """
        world = self.world
        settings = self.begin_client(r, device)
        bits, start = self.download(r, device)
        if download:
            yield world.radio.transfer(
                world.bs, device, bits, self.download_kind, num_models=self.download_models
            )
        result = yield from self.local_update(r, device, start, epochs=settings.epochs)
        if self.ota is not None:  # (its update goes up over the air with the others')
            return result
        upload = self.payload(r, device, result)
        yield world.radio.transfer(device, world.bs, upload.bits, "model_up", num_models=1)
        return upload.result

    def _arrive(
        self, r: int, index: int, device: Node, download: bool
    ) -> Generator[simpy.Event, Any, Any]:
        """:meth:`client_round`, its update folded into the round's aggregator when it
        arrives (its state then let go: statistics kept) or dropped when it is cut; an
        update lost in an outage (``policy.outage_sinr_db``) is dropped and its outcome
        is the :class:`~netfl.core.activity.DeviceCut` that says so."""
        aggregator, policy = self._aggregator, self.world.policy
        self._started.add(index)
        try:
            result = yield from self.client_round(r, device, download)
        except (DeviceCut, simpy.Interrupt) as stop:
            cut = stop if isinstance(stop, DeviceCut) else stop.cause
            reason = getattr(cut, "reason", "cut")
            policy.release(r, device, reason)
            if reason == "left":  # (the device's state is lost: its codec memory too)
                self.coding.forget(device)
            if aggregator is not None:
                aggregator.drop(index)
            raise
        if self.ota is not None:  # (its update goes up in the round's analog slot)
            return result
        if not policy.release(r, device, "arrived"):  # (lost in an outage: not decoded)
            if aggregator is not None:
                aggregator.drop(index)
            return DeviceCut(device.name, "outage", self.world.env.now)
        if aggregator is None:
            return result
        if result is not None and self.world.keep_finite([result], [device.name]):
            aggregator.add(index, result.state)
        else:
            aggregator.drop(index)
        return result if result is None else replace(result, state=None)

    def guarded(
        self, device: Node, steps: Generator[simpy.Event, Any, Any]
    ) -> Generator[simpy.Event, Any, Any]:
        """Run ``steps`` (a client's part of the round, e.g. :meth:`client_round`), or
        return the :class:`~netfl.core.activity.DeviceCut` that stopped it (the device
        left, or the deadline passed): its update is lost (:func:`is_cut`). The process
        running it is the device's activity too, so a cut also ends a wait that no
        transfer or compute step covers (a backhaul hop, the server's work for it).

        Returns
        -------
        object
            What ``steps`` returns, or the ``DeviceCut`` (``reason`` ``"left"`` or
            ``"late"``).
        """
        activities, me = self.world.activities, self.world.env.active_process
        try:
            activities.enter((device,), me)  # (a wait no transfer or step covers is cut too)
            result = yield from steps
        except (DeviceCut, simpy.Interrupt) as stop:
            return stop if isinstance(stop, DeviceCut) else stop.cause
        activities.leave((device,), me)
        return result

    def local_update(
        self,
        r: int,
        device: Node,
        state: dict | None,
        epochs: int | None = None,
        seed_key: tuple[int, ...] = (),
        proximal_weight: float = 0.0,
    ) -> Generator[simpy.Event, Any, TrainResult | None]:
        """Train on the device: charge its compute time; run torch through the executor.

        The device's own architecture (``World.device_model``) is trained from
        ``state``, with ``proximal_weight``·‖w − state‖² added to the loss if non-zero.

        The torch seed comes from the ``torch`` stream of ``(r, device, *seed_key)``
        (a device training twice in one round passes a distinct ``seed_key``).
        The job is submitted when the compute step starts and collected when it
        ends in simulated time (docs/architecture.md, "The executor seam").

        The step costs ``flops.train_per_sample · num_samples(device) · epochs`` FLOPs,
        so ``that / device.compute.effective_flops_per_s`` seconds once the device is
        free (and ``busy_power_w`` times that in joules).

        Parameters
        ----------
        r : int
            The round.
        device : Node
            The device that trains.
        state : dict or None
            The parameters it starts from (None in timing mode).
        epochs : int, optional
            Local epochs (default: ``training.local_epochs``).
        seed_key : tuple of int
            Further keys of the torch seed.
        proximal_weight : float
            Weight of ‖w − state‖² in the loss (0: none).

        Returns
        -------
        TrainResult or None
            The trained state, its sample count and mean loss [nats]; None in timing mode.
        """
        world = self.world
        cfg = world.train_config
        if epochs is not None and epochs != cfg.epochs:
            cfg = replace(cfg, epochs=epochs)
        info = world.device_model(device)
        flops = info.flops.train_per_sample * world.num_samples(device) * cfg.epochs
        future = world.submit_device_job(
            TrainTask,
            r,
            device,
            seed_key=seed_key,
            config=cfg,
            state=state,
            proximal_weight=proximal_weight,
        )
        yield world.compute.run(
            device, flops, "train", samples=world.num_samples(device) * cfg.epochs
        )
        return future.result() if future is not None else None

    def aggregation_flops(self, num_models: int) -> float:
        """Aggregation's cost [FLOP]: one multiply and one add per parameter and model
        (``2 · num_params · num_models``), charged to the BS by :meth:`server_update`."""
        return 2.0 * self.world.model.num_params * num_models

    def aggregator(self, r: int, clients: list[Node]) -> Aggregator | None:
        """The aggregate hook: what folds round ``r``'s updates as they arrive (their
        states then let go), its ``result()`` the new global model in
        :meth:`server_update`. Asked once the clients are chosen, before any transfer.

        FedAvg's: :class:`~netfl.learning.params.OrderedAverage` weighted by the clients'
        samples (bit-identical to averaging them all at the end; in memory one state, not
        one per client); None in timing mode. None: the results keep their states and
        :meth:`server_update` gets them all — what a variant whose aggregation needs
        every update returns (DFL, FD, the split family)."""
        if not self.world.learn or self.ota is not None:
            return None
        if self.coding.vote:
            from netfl.codecs.sign_sgd import MajorityVote

            return MajorityVote(self.global_state, self.coding.raw_keys())
        from netfl.learning.params import OrderedAverage

        return OrderedAverage([self.world.num_samples(d) for d in clients])

    def server_update(
        self, r: int, clients: list[Node], results: list[TrainResult | None]
    ) -> Generator[simpy.Event, Any, None]:
        """Aggregate the updates that arrived, weighted by local data size:
        ``w ← Σ_k n_k w_k / Σ_k n_k`` (McMahan et al., Algorithm 1), after charging
        :meth:`aggregation_flops` to the BS's compute (simulated time [s] and energy [J]):
        the round's :meth:`aggregator`'s result, or (none) the average of ``results``.

        Parameters
        ----------
        r : int
            The round.
        clients : list of Node
            The clients whose update arrived (cut ones are left out).
        results : list of TrainResult or None
            Their updates, in order (None in timing mode).
        """
        if self.ota is not None:
            yield from self.over_the_air(r, clients, results)
            return
        yield self.world.compute.run(
            self.world.bs, self.aggregation_flops(len(results)), "aggregate"
        )
        aggregator, self._aggregator = self._aggregator, None
        if aggregator is not None:
            state = aggregator.result()
            if state is not None:
                self.global_state = state
        elif self.world.learn:
            from netfl.learning.params import weighted_average

            results = self.world.keep_finite(results, [d.name for d in clients])
            if results:
                self.global_state = weighted_average(
                    [res.state for res in results], [res.num_samples for res in results]
                )

    def over_the_air(
        self, r: int, clients: list[Node], results: list[TrainResult | None]
    ) -> Generator[simpy.Event, Any, None]:
        """The round's clients upload at once as analog symbols
        (:mod:`netfl.algorithms.over_the_air`): one upload's time T whatever their
        number, after their RRC promotion; each gets a ``model_up`` record over T
        (``airtime_s`` the blocks it transmitted in, ``delivered_bits`` the share of its
        symbols not truncated — or sent before it left during T —, ``mean_snr_db`` the
        receive SNR ρ0) and its policy outcome; the BS's estimate of Σ w_k Δ_k, noise
        and truncation included, moves the global model, the buffers averaged as
        FedAvg's."""
        assert self.ota is not None
        new = yield from self.ota.slot(
            r, clients, results, self.global_state, self.model_bits, self.coding.raw_keys()
        )
        if new is not None:
            self.global_state = new

    # -- protocol ------------------------------------------------------------
    @honours("deadline_s", "policy", "outage")
    def round(self, r: int) -> Generator[simpy.Event, Any, RoundSummary]:
        env = self.world.env
        clients = yield from self.wait_for_clients(r)
        if not clients:  # (Bernoulli availability, or a policy chose none: an empty round)
            self.world.policy.close_round(r, {})
            return RoundSummary(num_clients=0, train_loss=float("nan"))
        deadline = (
            env.timeout(self.config.deadline_s) if self.config.deadline_s is not None else None
        )
        self._aggregator = self.aggregator(r, clients)
        self._started: set[int] = set()
        multicast = self.multicast
        if multicast:
            sent = self.world.radio.broadcast(
                self.world.bs,
                clients,
                self.download(r, None)[0],
                self.download_kind,
                num_models=self.download_models,
            )
            yield sent if deadline is None else sent | deadline
        jobs = [
            env.process(self.guarded(dev, self._arrive(r, i, dev, not multicast)))
            for i, dev in enumerate(clients)
        ]
        everyone = simpy.AllOf(env, jobs)
        yield everyone if deadline is None else everyone | deadline
        if not everyone.triggered:  # the deadline: the others are late
            for dev, job in zip(clients, jobs, strict=True):
                if job.is_alive:
                    self.world.activities.cut(dev, "late")
            # (a new condition: SimPy detaches the one nested in a triggered `|`)
            yield simpy.AllOf(env, jobs)
        outcomes = [job.value for job in jobs]
        if self.ota is not None:  # (promoted for the slot; one that left before it: cut)
            yield from self.world.radio.promote(
                [d for d, o in zip(clients, outcomes, strict=True) if not is_cut(o)]
            )
            for i, (dev, o) in enumerate(zip(clients, outcomes, strict=True)):
                cut = self.world.activities.is_cut(dev)
                if cut is not None and not is_cut(o):
                    outcomes[i] = cut
                    self.world.policy.release(r, dev, cut.reason)
        for i, (dev, o) in enumerate(zip(clients, outcomes, strict=True)):
            if is_cut(o) and i not in self._started:  # (cut before its part began, e.g.
                if self._aggregator is not None:  # it left during the multicast)
                    self._aggregator.drop(i)
                if o.reason == "left":
                    self.coding.forget(dev)
        arrived = [(d, o) for d, o in zip(clients, outcomes, strict=True) if not is_cut(o)]
        yield from self.server_update(r, [d for d, _ in arrived], [o for _, o in arrived])
        self._aggregator = None
        cuts = {d.name: o.reason for d, o in zip(clients, outcomes, strict=True) if is_cut(o)}
        self.world.policy.close_round(r, cuts)  # (one cut before its part began: recorded)
        losses = [res.mean_loss for _, res in arrived if res is not None]
        return RoundSummary(
            num_clients=len(clients),
            train_loss=float(np.mean(losses)) if losses else float("nan"),
            extra=cut_counts(outcomes),
        )

    def evaluate(self) -> tuple[float, float]:
        return self.world.evaluate(self.global_state)

    def state_dict(self) -> dict[str, Any]:
        from netfl.learning.params import clone_state

        return {
            "global_state": clone_state(self.global_state) if self.global_state else None,
            "codec_memory": self.coding.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.global_state = state["global_state"]
        self.coding.load_state_dict(state.get("codec_memory", {}))
