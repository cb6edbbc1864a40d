"""Build a :class:`World` from a validated :class:`~netfl.scenario.schema.Scenario`.

The world holds the simulation clock, the random streams, the cell and its
nodes, the federated data, the model's size and FLOPs, the radio, the compute
engine, the learning executor and the recorder.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from channel_models import get_link_profile
from channel_models.channel_profiles import ChannelProfile
from netfl.algorithms.context import ModelInfo
from netfl.compute import ComputeEngine, get_compute_profile
from netfl.core.activity import Activities
from netfl.core.nodes import Node
from netfl.core.records import Recorder
from netfl.core.rng import Streams
from netfl.errors import UserError
from netfl.learning.tasks import EvalTask, Executor, TrainConfig
from netfl.radio import FixedRateRadio
from netfl.radio.cues import CueTraffic, CueTrafficConfig
from netfl.radio.energy import BsPowerModel
from netfl.radio.ofdma_radio import OfdmaRadio
from netfl.scenario.schema import Scenario
from netfl.sim.data import build_data
from netfl.sim.model_facts import model_facts

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
        self._build_data(source)
        self._build_nodes()
        self._build_radio()
        self._build_mobility()  # (before the first association: moving UEs use the fields)
        self.coverage_frames: list[pd.DataFrame] = []
        self.update_coverage()
        self.compute = ComputeEngine(self.env, self.recorder)
        #: what each device is doing now: a departure or a deadline cuts it there
        self.activities = Activities(self.env)
        self.radio.watch(self.activities)
        self.compute.activities = self.activities
        self._build_model()
        self.train_config = TrainConfig(
            lr=scenario.training.lr,
            momentum=scenario.training.momentum,
            weight_decay=scenario.training.weight_decay,
            batch_size=scenario.training.batch_size,
            epochs=scenario.training.local_epochs,
            augment=tuple(scenario.training.augment),
        )
        self.executor: Executor | None = None
        self.torch_device: torch.device | None = None
        #: torch threads of a training job (None in timing mode: no torch work, and no
        #: torch import — a timing run of models counted before starts in a fraction of it)
        self.job_threads: int | None = None
        self.job_threads_source: str | None = None
        self._threads_before: int | None = None
        if self.learn:
            import torch

            from netfl.learning.executor import LearningContext
            from netfl.learning.parallel import make_executor
            from netfl.learning.train import resolve_device

            self._threads_before = torch.get_num_threads()
            if scenario.learning.num_threads:  # (until close(): the caller's count returns)
                torch.set_num_threads(scenario.learning.num_threads)
            try:
                self.torch_device = resolve_device(scenario.learning.device)
            except RuntimeError as err:
                raise UserError(f"{source}: learning.device: {err}") from None
            context = LearningContext(
                train_x=self.dataset.train_x,
                train_y=self.dataset.train_y,
                input_shape=self.dataset.input_shape,
                num_classes=self.dataset.num_classes,
                specs={name: info.spec for name, info in self.models.items()},
                device=self.torch_device,
                test_x=self.dataset.test_x,
                test_y=self.dataset.test_y,
            )
            try:
                self.executor = make_executor(context, scenario.learning)
            except ImportError as err:
                raise UserError(f"{source}: learning.executor: {err}") from None
            except ConnectionError as err:  # (an unreachable learning.ray_address)
                raise UserError(f"{source}: learning.ray_address: {err}") from None
            self.job_threads = getattr(self.executor, "threads", torch.get_num_threads())
            self.job_threads_source = (
                "learning.num_threads"
                if scenario.learning.num_threads
                else "the cores divided among the workers"
                if hasattr(self.executor, "threads")
                else "this process's (torch's default: the cores; in a sweep: the cores "
                "divided among its parallel runs)"
            )

    def close(self) -> None:
        """Stop the executor's workers (a no-op for the serial executor) and give this
        process back the torch thread count it had before (``learning.num_threads``
        applies to the run, not to what the caller does next)."""
        if self.executor is not None:
            self.executor.close()
        if self._threads_before is not None:
            import torch

            torch.set_num_threads(self._threads_before)

    # -- construction ------------------------------------------------------
    def _build_data(self, source: str) -> None:
        self.dataset, self.partitions = build_data(self.scenario, self.streams, source)

    def _build_nodes(self) -> None:
        s = self.scenario
        server_profile = get_compute_profile(s.server.compute_profile).with_overrides(
            **s.server.compute_overrides.model_dump()
        )
        self.bs = Node("bs", "bs", -1, np.zeros(2), server_profile)
        #: the BS of every cell of a ``network`` (the server's own node in a one-cell one)
        self.cell_nodes: list[Node] = []
        self.deployment = None
        net = s.network
        if net is not None:
            law = s.cell.link.channel_profile_resolved().build_pathloss()
            self.deployment = net.deployment(s.cell.radius_m, float(law.height_tx_m))
            sites = self.deployment.site_xy()
            cell_site = self.deployment.cell_site()
            hosted = isinstance(net.server_site, int)
            self.bs.position_m = sites[net.server_site] if hosted else np.full(2, np.nan)
            if len(cell_site) == 1 and hosted:
                self.cell_nodes = [self.bs]
            else:
                self.cell_nodes = [
                    Node(f"cell{c}", "bs", -2 - c, sites[site].copy(), server_profile)
                    for c, site in enumerate(cell_site)
                ]
        positions = self.layout_positions(0)
        specs: list[tuple[str, str]] = []
        for g in s.devices.groups:
            specs += [
                (
                    g.compute_profile or s.devices.compute_profile,
                    g.link_profile or s.devices.link_profile,
                )
            ] * g.count
        specs += [(s.devices.compute_profile, s.devices.link_profile)] * (
            s.devices.count - len(specs)
        )
        overrides = s.devices.compute_overrides.model_dump()
        #: every device of the scenario; ``devices`` are those in coverage (see
        #: :meth:`update_coverage`), the ones algorithms use
        self.all_devices = [
            Node(
                f"ue{i}",
                "pue",
                i,
                positions[i],
                get_compute_profile(cp).with_overrides(**overrides),
                get_link_profile(lp),
            )
            for i, (cp, lp) in enumerate(specs)
        ]
        self._layout_heights = self.layout_heights()
        for node, h in zip(self.all_devices, self._layout_heights, strict=True):
            node.height_m = float(h)
        self._place_indoors(0)
        self.devices = list(self.all_devices)

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

    def _build_radio(self) -> None:
        link = self.scenario.cell.link
        self.cues: CueTraffic | None = None
        self.channel: ChannelProfile | None = None
        bp = self.scenario.cell.bs_power
        if self.scenario.network is not None:
            self._build_network_radio()
            return
        if link.mode == "ofdma":
            self.channel = link.channel_profile_resolved()
            self.radio = OfdmaRadio(
                self.env, self.recorder, self.channel, link.scheduler, bs=self.bs, **self._ofdma()
            )
            self.cues = CueTraffic(
                self.env,
                self.radio.carriers,
                self._cue_config(),
                self.scenario.cell.radius_m,
                self.streams.generator("cue_traffic"),
                mean_snr=self.radio.cue_mean_snr,
            )
            self.radio.cues = self.cues
            return
        up = down = None
        if link.shared:
            cap = get_link_profile(link.capacity_profile or self.scenario.devices.link_profile)
            up = link.uplink_capacity_mbps * 1e6 if link.uplink_capacity_mbps else cap.uplink_bps
            down = (
                link.downlink_capacity_mbps * 1e6
                if link.downlink_capacity_mbps
                else cap.downlink_bps
            )
        self.radio = FixedRateRadio(
            self.env,
            self.recorder,
            shared=link.shared,
            uplink_capacity_bps=up,
            downlink_capacity_bps=down,
            bs=self.bs,
            bs_power=BsPowerModel(bp.p0_w, bp.delta_p, bp.max_tx_power_w or 20.0, bp.num_trx),
        )

    def _ofdma(self) -> dict[str, Any]:
        """The OFDMA radios' common arguments: random streams, caps, BS power model."""
        link, bp = self.scenario.cell.link, self.scenario.cell.bs_power
        assert self.channel is not None
        return {
            "rng_for_transfer": lambda k: self.streams.generator("fading", k),
            "rng_for_link": lambda k: self.streams.generator("shadowing", k),
            "max_rbs_per_transfer": link.max_rbs_per_transfer or float("inf"),
            "pf_window_blocks": link.pf_window_blocks or 100.0,
            "bs_power": BsPowerModel(
                bp.p0_w, bp.delta_p, bp.max_tx_power_w or self.channel.bs_tx_power_w, bp.num_trx
            ),
        }

    def _cue_config(self) -> CueTrafficConfig:
        c = self.scenario.cell.cues
        return CueTrafficConfig(
            c.density_per_km2,
            c.session_rate_per_s,
            c.mean_session_s,
            c.demand_rbs,
            c.uplink_fraction,
            c.mean_session_bits,
        )

    def _build_network_radio(self) -> None:
        """A :class:`~netfl.radio.multicell_radio.MultiCellRadio` over the deployment, with
        the CUEs' PPP over its area attached to their cells."""
        from netfl.radio.multicell_radio import MultiCellRadio

        s = self.scenario
        net, link = s.network, s.cell.link
        assert net is not None and self.deployment is not None
        self.channel = link.channel_profile_resolved()
        self.radio = MultiCellRadio(
            self.env,
            self.recorder,
            self.channel,
            link.scheduler,
            self.deployment,
            self.cell_nodes,
            self.bs,
            net.server_site if isinstance(net.server_site, int) else None,
            interference=net.interference.model,
            load=net.interference.load,
            antenna=net.antenna,
            array_rows=net.antenna_rows,
            tilt_zenith_deg=net.tilt_zenith_deg,
            backhaul_bps=net.backhaul.capacity_mbps * 1e6,
            backhaul_latency_s=net.backhaul.latency_ms * 1e-3,
            **self._ofdma(),
        )
        c, cfg = s.cell.cues, self._cue_config()
        rng = self.streams.generator("cue_traffic")
        num = int(rng.poisson(c.density_per_km2 * self.deployment.area_m2() / 1e6))
        positions = self._drop_over_network(num, rng)
        cells = self.radio.attach_cues(positions, c.demand_rbs)
        one = len(self.radio.cells) == 1
        for k, cell in enumerate(self.radio.cells):
            cell.cues = CueTraffic(
                self.env,
                cell.carriers,
                cfg,
                s.cell.radius_m,
                rng if one else self.streams.generator("cue_traffic", k + 1),
                mean_snr=cell.cue_mean_snr,
                positions_m=positions[cells == k],
            )
        if one:
            self.cues = self.radio.cells[0].cues

    def _drop_over_network(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` points uniform over the network's area (one site of ``site_positions_m``:
        its disc, drawn as a single cell draws it)."""
        from channel_models.multicell import SiteList

        dep = self.deployment
        if isinstance(dep, SiteList) and dep.num_sites == 1:
            from netfl.radio.geometry import drop_uniform_disc

            return dep.site_xy()[0] + drop_uniform_disc(rng, n, dep.radius_m)
        return dep.drop_uniform(n, rng)

    def _build_mobility(self) -> None:
        """The moving devices' trajectories (:class:`~netfl.sim.mobility.DeviceMobility`)."""
        from netfl.sim.mobility import DeviceMobility

        self.mobility = DeviceMobility(self)
        self.trajectories = self.mobility.trajectories
        from netfl.sim.availability import DeviceAvailability

        self.availability = DeviceAvailability(self)

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
        for node, pos in zip(self.all_devices, self.layout_positions(*keys), strict=True):
            node.position_m = pos
        self._place_indoors(*keys)
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

    def layout_positions(self, *keys: int) -> np.ndarray:
        """Every device's position [m], shape ``(devices, 2)``, from the scenario's layouts
        (:mod:`netfl.scenario.layout`): random ones draw from the ``placement`` stream of
        ``keys`` (``devices.layout``) or of ``(*keys, group + 1)`` (a group's layout), so
        a scenario without layouts drops exactly as before; explicit ones never move."""
        s = self.scenario
        out = np.zeros((s.devices.count, 2))
        for _, layout, devices, group in s.layout_slots():
            stream = keys if group is None else (*keys, group + 1)
            rng = self.streams.generator("placement", *stream) if layout.random else None
            if self.deployment is not None and layout.kind == "uniform_disc":
                if s.network.drop == "per_cell":
                    out[devices] = self.deployment.drop_per_cell(len(devices), rng)
                else:
                    out[devices] = self._drop_over_network(len(devices), rng)
            else:
                out[devices] = layout.positions(len(devices), rng, s.cell.radius_m)
        return out

    def _place_indoors(self, *keys: int) -> None:
        """A network's ``indoor_fraction``: the devices its random drop placed are indoor
        or not, from the ``indoor`` stream of the drop's ``keys`` (TR 38.901 floors,
        heights and O2I loss); the others keep their layout's height, outdoors."""
        net = self.scenario.network
        if net is None or net.indoor_fraction == 0.0:
            return
        from channel_models.multicell import indoor_states, o2i_loss_db

        placed = [
            i
            for _, layout, devices, _ in self.scenario.layout_slots()
            if layout.kind == "uniform_disc"
            for i in devices
        ]
        if not placed:
            return
        rng = self.streams.generator("indoor", *keys)
        xy = np.array([self.all_devices[i].position_m for i in placed])
        drop = indoor_states(xy, rng, net.indoor_fraction, net.high_loss_fraction)
        carrier = self.scenario.cell.link.channel_profile_resolved().carrier_hz
        loss = o2i_loss_db(drop, carrier, rng)
        for k, i in enumerate(placed):
            node = self.all_devices[i]
            node.height_m = (
                float(drop.height_m[k]) if drop.indoor[k] else float(self._layout_heights[i])
            )
            node.o2i_loss_db = float(loss[k])
            node.o2i_inside_m = float(drop.d_in_m[k])

    def layout_heights(self) -> np.ndarray:
        """Every device's antenna height [m] from its layout (NaN: the law's UE height)."""
        s = self.scenario
        out = np.full(s.devices.count, np.nan)
        for _, layout, devices, _ in s.layout_slots():
            out[devices] = layout.heights(len(devices))
        return out

    def _build_model(self) -> None:
        """``model`` (the scenario's ``model.name``: the global model) and ``models`` by
        name, with every device's own architecture (``device_model``)."""
        m = self.scenario.model
        self.device_model_names = self.scenario.devices.model_names(m.name)
        self.models = {
            name: self.model_info(name)
            for name in dict.fromkeys([m.name, *self.device_model_names])
        }
        self.model = self.models[m.name]

    def model_info(self, name: str) -> ModelInfo:
        """Size and FLOPs of model ``name`` on this data set (``model.size_bits``, if set,
        overrides the size of ``model.name`` only; others send ``bits_per_param`` each)."""
        m = self.scenario.model
        num_params, flops = model_facts(name, self.dataset.input_shape, self.dataset.num_classes)
        size_bits = num_params * m.bits_per_param
        if name == m.name and m.size_bits is not None:
            size_bits = m.size_bits
        return ModelInfo(name, num_params, float(size_bits), flops)

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
