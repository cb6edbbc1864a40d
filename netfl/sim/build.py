"""The builders of a run's world, each from its spec (:mod:`netfl.sim.specs`, the
scenario resolved once) or the scenario's section it needs, and what it names
explicitly: the base station and the cells (:func:`build_infrastructure`), the devices
(:func:`build_devices`), the radio with its CUE traffic (:func:`build_radio`), the
models' sizes and FLOPs (:func:`build_models`) and the learning executor
(:func:`build_executor`). :class:`~netfl.sim.world.World` calls them in order and keeps
what they return: it is the run-time context algorithms use, not a builder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from netfl.algorithms.context import ModelInfo
from netfl.core.nodes import Node
from netfl.errors import UserError
from netfl.learning.tasks import TrainConfig
from netfl.radio import FixedRateRadio
from netfl.radio.cues import CueTraffic
from netfl.radio.ofdma_radio import OfdmaRadio
from netfl.sim.model_facts import model_facts
from netfl.sim.placement import Placement

if TYPE_CHECKING:
    import simpy
    import torch

    from channel_models import LinkProfile
    from channel_models.channel_profiles import ChannelProfile
    from netfl.core.nodes import ComputeProfile
    from netfl.core.records import Recorder
    from netfl.core.rng import Streams
    from netfl.learning.datasets import Dataset
    from netfl.learning.tasks import Executor
    from netfl.policies.control import PolicyControl
    from netfl.radio.radio import Radio
    from netfl.scenario.schema import LearningSection, ModelSection, TrainingSection
    from netfl.sim.specs import InfraSpec, RadioSpec

__all__ = [
    "Infrastructure",
    "RadioParts",
    "LearningParts",
    "build_infrastructure",
    "build_devices",
    "initial_state",
    "build_radio",
    "build_models",
    "build_executor",
    "build_policy",
    "train_config",
]


@dataclass
class Infrastructure:
    """The server's node ``bs``, every cell's BS node (a network's; empty for a single
    cell) and the network's deployment (None for a single cell)."""

    bs: Node
    cell_nodes: list[Node]
    deployment: Any


@dataclass
class RadioParts:
    radio: Radio
    channel: ChannelProfile | None  # (OFDMA links only)
    cues: CueTraffic | None  # (a single cell's, or a one-cell network's)


@dataclass
class LearningParts:
    executor: Executor | None = None
    torch_device: torch.device | None = None
    #: torch threads of a training job and where that number came from
    job_threads: int | None = None
    job_threads_source: str | None = None
    #: the caller's torch thread count (given back when the world closes)
    threads_before: int | None = None

    def close(self) -> None:
        """Stop the executor's workers (a no-op for the serial executor) and give this
        process back the torch thread count it had before (``learning.num_threads``
        applies to the run, not to what the caller does next)."""
        if self.executor is not None:
            self.executor.close()
        if self.threads_before is not None:
            import torch

            torch.set_num_threads(self.threads_before)


def build_infrastructure(spec: InfraSpec) -> Infrastructure:
    """The server's node and, in a network, the deployment and every cell's BS node."""
    bs = Node("bs", "bs", -1, np.zeros(2), spec.server_profile)
    cell_nodes: list[Node] = []
    deployment = None
    net = spec.network
    if net is not None:
        deployment = net.deployment(spec.cell_radius_m, spec.bs_height_m)
        sites = deployment.site_xy()
        cell_site = deployment.cell_site()
        hosted = isinstance(net.server_site, int)
        bs.position_m = sites[net.server_site] if hosted else np.full(2, np.nan)
        if len(cell_site) == 1 and hosted:
            cell_nodes = [bs]
        else:
            cell_nodes = [
                Node(f"cell{c}", "bs", -2 - c, sites[site].copy(), spec.server_profile)
                for c, site in enumerate(cell_site)
            ]
    return Infrastructure(bs, cell_nodes, deployment)


def build_devices(
    profiles: tuple[tuple[ComputeProfile, LinkProfile], ...], placement: Placement
) -> list[Node]:
    """Every device at its first drop (``placement`` keys ``(0,)``), with its compute and
    link profiles (:attr:`RunSpec.devices <netfl.sim.specs.RunSpec.devices>`), height and
    indoor state."""
    positions = placement.positions(0)
    devices = [
        Node(f"ue{i}", "pue", i, positions[i], compute, link)
        for i, (compute, link) in enumerate(profiles)
    ]
    for node, h in zip(devices, placement.heights(), strict=True):
        node.height_m = float(h)
    placement.place_indoors(devices, 0)
    return devices


def _ofdma(spec: RadioSpec, streams: Streams) -> dict[str, Any]:
    """The OFDMA radios' common arguments: random streams, caps, BS power model."""
    return {
        "rng_for_transfer": lambda k: streams.generator("fading", k),
        "rng_for_link": lambda k: streams.generator("shadowing", k),
        "max_rbs_per_transfer": spec.max_rbs_per_transfer,
        "scheduler_options": spec.scheduler_options,
        "aggregate_above_flows": spec.aggregate_above_flows,
        "fading_draw": spec.fading_draw,
        "bs_power": spec.bs_power,
    }


def build_radio(
    spec: RadioSpec,
    env: simpy.Environment,
    recorder: Recorder,
    streams: Streams,
    infra: Infrastructure,
    placement: Placement,
) -> RadioParts:
    """The radio: fixed-rate links, an OFDMA cell with its CUE traffic, or a network's
    multi-cell radio with the CUEs' PPP over its area."""
    if spec.network is not None:
        return _network_radio(spec, env, recorder, streams, infra, placement)
    if spec.mode == "ofdma":
        channel = spec.channel
        radio = OfdmaRadio(
            env, recorder, channel, spec.scheduler, bs=infra.bs, **_ofdma(spec, streams)
        )
        cues = CueTraffic(
            env,
            radio.carriers,
            spec.cues,
            spec.cell_radius_m,
            streams.generator("cue_traffic"),
            mean_snr=radio.cue_mean_snr,
        )
        radio.cues = cues
        return RadioParts(radio, channel, cues)
    radio = FixedRateRadio(
        env,
        recorder,
        shared=spec.shared,
        uplink_capacity_bps=spec.uplink_capacity_bps,
        downlink_capacity_bps=spec.downlink_capacity_bps,
        bs=infra.bs,
        bs_power=spec.bs_power,
    )
    return RadioParts(radio, None, None)


def _network_radio(
    spec: RadioSpec,
    env: simpy.Environment,
    recorder: Recorder,
    streams: Streams,
    infra: Infrastructure,
    placement: Placement,
) -> RadioParts:
    """A :class:`~netfl.radio.multicell_radio.MultiCellRadio` over the deployment, with
    the CUEs' PPP over its area attached to their cells."""
    from netfl.radio.multicell_radio import MultiCellRadio

    net, channel, cfg = spec.network, spec.channel, spec.cues
    assert net is not None and infra.deployment is not None and cfg is not None
    radio = MultiCellRadio(
        env,
        recorder,
        channel,
        spec.scheduler,
        infra.deployment,
        infra.cell_nodes,
        infra.bs,
        net.server_site if isinstance(net.server_site, int) else None,
        interference=net.interference.model,
        load=net.interference.load,
        antenna=net.antenna,
        array_rows=net.antenna_rows,
        tilt_zenith_deg=net.tilt_zenith_deg,
        shadowing=net.mobility.shadowing,
        backhaul_bps=net.backhaul.capacity_mbps * 1e6,
        backhaul_latency_s=net.backhaul.latency_ms * 1e-3,
        handover={
            "hysteresis_db": net.handover.hysteresis_db,
            "ttt_s": net.handover.ttt_s,
            "interruption_s": net.handover.interruption_ms * 1e-3,
            "sample_s": net.handover.sample_ms * 1e-3,
            "filter_k": net.handover.filter_k,
        },
        **_ofdma(spec, streams),
    )
    rng = streams.generator("cue_traffic")
    num = int(rng.poisson(cfg.density_per_km2 * infra.deployment.area_m2() / 1e6))
    positions = placement.drop_over_network(num, rng)
    cells = radio.attach_cues(positions, cfg.demand_rbs)
    one = len(radio.cells) == 1
    for k, cell in enumerate(radio.cells):
        cell.cues = CueTraffic(
            env,
            cell.carriers,
            cfg,
            spec.cell_radius_m,
            rng if one else streams.generator("cue_traffic", k + 1),
            mean_snr=cell.cue_mean_snr,
            positions_m=positions[cells == k],
        )
    return RadioParts(radio, channel, radio.cells[0].cues if one else None)


def build_policy(section: Any, env: Any, states: Any, streams: Streams) -> PolicyControl:
    """The run's resource policy (the ``policy`` section) at work: its options validated
    by its ``Config``, its decisions checked, honoured and recorded."""
    from netfl.policies import POLICIES
    from netfl.policies.control import PolicyControl

    kind = POLICIES[section.name]
    config = kind.Config(**(section.options or {})) if kind.Config is not None else None
    policy = kind(config, states, streams)
    return PolicyControl(
        policy, env, states.radio, states.compute, outage_sinr_db=section.outage_sinr_db
    )


def model_info(m: ModelSection, dataset: Dataset, name: str) -> ModelInfo:
    """Size and FLOPs of model ``name`` on this data set (``model.size_bits``, if set,
    overrides the size of ``model.name`` only; others send ``bits_per_param`` each)."""
    num_params, flops = model_facts(name, dataset.input_shape, dataset.num_classes)
    size_bits = num_params * m.bits_per_param
    if name == m.name and m.size_bits is not None:
        size_bits = m.size_bits
    return ModelInfo(name, num_params, float(size_bits), flops)


def build_models(
    m: ModelSection, device_names: list[str], dataset: Dataset
) -> dict[str, ModelInfo]:
    """Every model the run uses by name: the global ``model.name`` first, then each
    device's own architecture (``device_names``)."""
    return {name: model_info(m, dataset, name) for name in dict.fromkeys([m.name, *device_names])}


def train_config(t: TrainingSection) -> TrainConfig:
    """The local SGD of the ``training`` section."""
    return TrainConfig(
        lr=t.lr,
        momentum=t.momentum,
        weight_decay=t.weight_decay,
        batch_size=t.batch_size,
        epochs=t.local_epochs,
        augment=tuple(t.augment),
    )


def _check_threads(learning: LearningSection, source: str) -> None:
    """``learning.num_threads`` within this machine's CPUs (where the jobs run here: not
    on Ray's cluster): more threads than cores only slow every job, and OpenMP may fail
    to create them at all ("Thread creation failed") — one line instead. Checked when a
    run starts, not when a scenario is read: a run directory from a larger machine stays
    readable here."""
    import os

    wanted = learning.num_threads
    if not wanted or learning.executor == "ray":
        return
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # (not Linux)
        cpus = os.cpu_count() or 1
    if wanted > cpus:
        raise UserError(
            f"{source}: learning.num_threads: {wanted} threads per job on a machine that "
            f"gives this process {cpus} CPUs; use at most {cpus} (leave it unset for netfl's "
            "choice)"
        )


def build_executor(
    learning: LearningSection,
    dataset: Dataset,
    models: dict[str, ModelInfo],
    source: str,
    batch_size: int = 32,
    devices: int = 1,
) -> LearningParts:
    """Where torch jobs run (learn mode; nothing in timing mode, which imports no torch):
    the device, the thread count (``learning.num_threads``, else for the jobs that run
    in this process :func:`netfl.core.threads.auto_threads` of the largest model's step
    at ``batch_size`` — × ``devices`` for the batched executor —, until the world
    closes) and the executor with the data and the models' specs."""
    if learning.mode != "learn":
        return LearningParts()
    import torch

    _check_threads(learning, source)
    parts = LearningParts(threads_before=torch.get_num_threads())
    try:
        _build_executor(parts, learning, dataset, models, source, batch_size, devices)
    except BaseException:  # (the caller's thread count back: no run holds it)
        parts.close()
        raise
    return parts


def _stacked(device: torch.device, dataset: Dataset, models: dict[str, ModelInfo]) -> bool:
    """Whether the batched executor stacks the jobs of every model on ``device`` — the
    executor's own verdict (:func:`netfl.learning.batched.why_not_stacked`: not on a
    CPU for models with convolutions, nor for other losses or buffers)."""
    from netfl.learning.batched import why_not_stacked

    return all(
        why_not_stacked(
            info.spec.build(dataset.input_shape, dataset.num_classes), info.spec.loss_fn(), device
        )
        is None
        for info in models.values()
    )


def _build_executor(
    parts: LearningParts,
    learning: LearningSection,
    dataset: Dataset,
    models: dict[str, ModelInfo],
    source: str,
    batch_size: int,
    devices: int,
) -> None:
    import torch

    from netfl.learning.executor import LearningContext
    from netfl.learning.parallel import make_executor
    from netfl.learning.train import resolve_device

    try:
        parts.torch_device = resolve_device(learning.device)
    except RuntimeError as err:
        raise UserError(f"{source}: learning.device: {err}") from None
    auto = None
    if learning.num_threads:  # (until close(): the caller's count returns)
        torch.set_num_threads(learning.num_threads)
    elif learning.executor in ("serial", "batched"):  # (jobs in this process)
        from netfl.core.threads import auto_threads

        step = max(info.flops.train_per_sample for info in models.values()) * batch_size
        if learning.executor == "batched" and _stacked(parts.torch_device, dataset, models):
            step *= devices  # (at most: the jobs pending at one instant)
        threads, auto = auto_threads(step, torch.get_num_threads())
        torch.set_num_threads(threads)
    context = LearningContext(
        train_x=dataset.train_x,
        train_y=dataset.train_y,
        input_shape=dataset.input_shape,
        num_classes=dataset.num_classes,
        specs={name: info.spec for name, info in models.items()},
        device=parts.torch_device,
        test_x=dataset.test_x,
        test_y=dataset.test_y,
    )
    try:
        parts.executor = make_executor(context, learning)
    except ImportError as err:
        raise UserError(f"{source}: learning.executor: {err}") from None
    except ConnectionError as err:  # (an unreachable learning.ray_address)
        raise UserError(f"{source}: learning.ray_address: {err}") from None
    parts.job_threads = getattr(parts.executor, "threads", torch.get_num_threads())
    parts.job_threads_source = (
        "learning.num_threads"
        if learning.num_threads
        else auto or "the cores divided among the workers"
    )


def initial_state(spec: Any, dataset: Any, seed: int) -> dict[str, torch.Tensor]:
    """A model's initial parameters (``spec`` built for ``dataset``) under torch seed
    ``seed``, the caller's torch generator left as it was."""
    import torch

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = spec.build(dataset.input_shape, dataset.num_classes)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}
