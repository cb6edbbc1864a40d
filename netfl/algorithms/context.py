"""The round context: exactly what an algorithm may use of the simulation.

An algorithm is constructed with a :class:`RoundContext` and reaches the simulation
only through it (docs/architecture.md, "The algorithm protocol"). :class:`netfl.sim.world.World`
implements it; a test checks that every attribute an algorithm module reads of its
context is a member named here, so this class is the whole contract: a tool can
follow a transfer from ``context.radio.transfer`` into the radio, and a new member
is a deliberate change of this file.

Members, by what they are for:

========== ===================================================================
clock      ``env`` (the SimPy environment: ``env.now``, ``env.process``)
radio      ``radio`` (``transfer``, ``broadcast``; on OFDMA links also the
           :class:`LinkStates` and, in a single cell, :class:`CellCarriers`
           capabilities, checked with ``isinstance``),
           ``redrop`` (re-drop devices, FedDif's mobility between diffusion rounds)
compute    ``compute`` (``run(node, flops, kind)``: charged time and energy)
executor   ``executor`` (where torch jobs run), ``submit_device_job`` (one device's
           job, seeded per round and device), ``learn`` (False in timing mode),
           ``torch_device``
data       ``dataset``, ``partitions``, ``num_samples``
models     ``model``, ``models``, ``device_model``, ``init_model_state``,
           ``train_config``, ``evaluate``, ``evaluate_many``
nodes      ``bs``, ``devices`` (those in coverage: a starved device — no rate at the
           lowest CQI either way — takes no part), ``all_devices``,
           ``downlink_devices`` (those whose downlink is served), ``edge_of`` (the BS node
           of a device's serving cell: an edge server; ``bs`` in a single cell),
           ``available_devices`` (those on at a round's start, ``devices.availability``)
           and ``next_available_s`` (when the next one off turns on),
           ``activities`` (``cut(device, reason)``: stop a device's transfer or
           compute step now — a deadline — and ``is_cut``; departures cut by themselves)
state      ``states`` (:class:`~netfl.policies.states.DeviceStates`: each device's mean
           SNR, expected rate and time for N bits at a bandwidth share, last measured
           transfer, compute speed, energy spent — what a decision can know now)
policy     ``policy`` (:class:`~netfl.policies.control.PolicyControl`: ``decide`` a
           round's participants with the scenario's resource policy, ``allocation``,
           ``hold`` and ``release`` a participant's uplink share, power and CPU
           frequency; docs/policies.md)
rng        ``streams`` (named child streams: ``generator``, ``torch_seed``)
records    ``keep_finite`` (drops and records NaN/Inf updates)
scenario   ``scenario`` (read-only) and ``source`` (the file, for error messages)
========== ===================================================================
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np
    import simpy
    import torch

    from netfl.compute.engine import ComputeEngine
    from netfl.compute.flops import ModelFlops
    from netfl.core.activity import Activities
    from netfl.core.nodes import Node
    from netfl.core.rng import Streams
    from netfl.learning.datasets import Dataset
    from netfl.learning.models import ModelSpec
    from netfl.learning.tasks import Executor, TrainConfig
    from netfl.policies.control import PolicyControl
    from netfl.policies.states import DeviceStates
    from netfl.radio.radio import Radio
    from netfl.scenario.schema import Scenario

__all__ = ["RoundContext", "ModelInfo", "JobT", "LinkStates", "CellCarriers"]

JobT = TypeVar("JobT")


@dataclass(frozen=True)
class ModelInfo:
    """What the simulator needs to know of a model: its size and FLOPs.

    ``name`` is the model's catalogue name; ``size_bits`` what one copy of the
    parameters costs on air [bit]; ``flops`` the per-sample forward and training
    FLOPs. ``spec`` (the builder and loss) is looked up when first used, so a
    timing-only run never imports torch.
    """

    name: str
    num_params: int
    size_bits: float
    flops: ModelFlops

    @property
    def spec(self) -> ModelSpec:
        from netfl.learning.models import get_model_spec

        return get_model_spec(self.name)


@runtime_checkable
class LinkStates(Protocol):
    """What an OFDMA radio — a cell's or a network's — tells an algorithm that picks
    links or clients by their channel (FedDif's auction, a channel-aware selection):
    every link's mean SNR and expected spectral efficiency, and the D2D bandwidth pools
    of senders (FedDif (9), (16f)).

    Every SNR here is a *mean*: the link's large-scale loss β = 10^(−loss_dB/10) (path
    loss, shadowing and LOS state, fixed per link and drop) with E|h|² = 1, before the
    Rayleigh or Rician block fading that each transfer draws per block when it runs
    (no per-block state exists before a transfer). Two definitions serve two purposes
    (``N0`` noise density [W/Hz], ``F`` the receiver's noise figure, ``B`` the bandwidth
    full power spreads over — the carrier, or its RBs under ``power_spread: rbs`` —,
    ``B_RB`` one RB's):

    - the *planning SNR* of :meth:`link_states`: downlink ``P_BS·β / (N0·F·B)``;
      uplink and D2D ``P_UE·β / (N0·F·B)`` (full-carrier power, FedDif (9)) or,
      under open-loop power control, the per-RB target
      ``P0·2^μ·PL^α·β / (N0·F·B_RB)`` *not* capped by the UE's maximum power;
    - the *allocation SNR* of :meth:`allocation_states`: the mean per-RB SNR a
      transfer holding ``num_rbs`` RBs is rated at, ``min(snr_psd, snr_one_rb /
      num_rbs)`` (``snr_one_rb``: the UE's whole power in one RB; the downlink has no
      such cap). With ``num_rbs = 1`` it is the ``coverage`` table's
      ``uplink_snr_db`` / ``downlink_snr_db`` (in dB).

    The two are equal on the downlink and on a full-carrier uplink whose profile has
    ``cqi_sinr: wideband`` (``feddif``, ``lte_*``). Under open-loop power control
    (``nr_fr1_uma``) the allocation SNR of one RB is the planning SNR capped at
    ``P_CMAX·β / (N0·F·B_RB)``: lower for a device power-limited on one RB. On a
    full-carrier uplink with ``cqi_sinr: allocation`` the one-RB SNR is the planning
    SNR plus ``10·log10(B / B_RB)`` dB (all power in one RB).
    """

    def link_states(
        self, srcs: Sequence[Node], dsts: Sequence[Node]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Planning SNR and expected spectral efficiency of every link ``srcs[m] →
        dsts[i]`` (FedDif (9), (21)).

        Parameters
        ----------
        srcs, dsts : sequence of Node
            Senders and receivers; every link must have one direction (all uplink:
            devices to ``context.bs``; all downlink; or all D2D). A network plans D2D
            links only (devices to devices), each on its sender's cell's uplink with
            the interference now (an SINR).

        Returns
        -------
        snr : ndarray, shape (M, N)
            Planning SNR [linear, not dB] (the class docstring's definition); 0 where a
            node would send to itself.
        efficiency : ndarray, shape (M, N)
            γ̃ = E_h[SE(snr·|h|²)] [bit/s/Hz]: the expectation over the profile's fading
            of the direction's spectral efficiency (Shannon or the CQI/MCS table, after
            overheads). An RB of bandwidth ``B_RB`` carries on average
            ``γ̃ · B_RB · time_fraction`` bit/s.

        Raises
        ------
        ValueError
            Links of more than one direction (or, on a network, a cellular link).
        """
        ...

    def allocation_states(
        self, srcs: Sequence[Node], dsts: Sequence[Node], num_rbs: float = 1.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """Allocation SNR and expected spectral efficiency of every link ``srcs[m] →
        dsts[i]`` for a transfer holding ``num_rbs`` RBs: what the radio rates its
        blocks at on average.

        Parameters
        ----------
        srcs, dsts : sequence of Node
            As :meth:`link_states` (one direction; a network: D2D links only).
        num_rbs : float
            RBs the transfer holds [RB] (a share of the carrier's, e.g. its RBs over the
            number of concurrent transfers under round robin); an open-loop or
            ``cqi_sinr: allocation`` uplink spreads its power over them.

        Returns
        -------
        snr : ndarray, shape (M, N)
            Mean per-RB SNR of the allocation [linear]; with ``num_rbs = 1`` the
            ``coverage`` table's ``uplink_snr_db`` / ``downlink_snr_db`` (10·log10 of
            it); 0 where a node would send to itself.
        efficiency : ndarray, shape (M, N)
            γ̃ = E_h[SE(snr·|h|²)] at that SNR [bit/s/Hz]; the transfer's expected rate
            is ``γ̃ · num_rbs · B_RB · time_fraction`` [bit/s].
        """
        ...

    def d2d_budget(self, senders: Sequence[Node]) -> tuple[np.ndarray, np.ndarray]:
        """FedDif (16f)'s bandwidth pools of the D2D pairs that ``senders`` send.

        Parameters
        ----------
        senders : sequence of Node
            The sending devices.

        Returns
        -------
        pool : ndarray of int, shape (M,)
            Each sender's pool (a single cell: 0; a network: the sender's cell).
        free_hz : ndarray, shape (P,)
            Uplink bandwidth no background UE holds now in each pool [Hz].
        """
        ...


@runtime_checkable
class CellCarriers(Protocol):
    """A single cell's OFDMA radio: its carriers by direction (e.g. to hold RBs for
    devices that take no part, as a link probe does)."""

    def carrier_for(self, direction: str) -> Any:
        """The carrier that carries ``direction``'s transfers.

        Parameters
        ----------
        direction : str
            ``"uplink"``, ``"downlink"`` or ``"d2d"`` (D2D overlays the uplink carrier).

        Returns
        -------
        OfdmaCarrier
            Its ``num_rbs`` (RBs that carry data), ``rb_bandwidth_hz`` [Hz] and
            ``time_fraction`` (share of time it serves the direction: 1 under FDD, the
            slot pattern's share under TDD) give its bandwidth; read it, never change it.
        """
        ...


@runtime_checkable
class RoundContext(Protocol):
    """What an algorithm may use (see the module docstring for the table).

    Units: simulated time in seconds (``env.now``), sizes in bits, energies in joules.
    An algorithm that picks clients by their channel checks ``isinstance(context.radio,
    LinkStates)`` (OFDMA links) and reads :meth:`LinkStates.link_states` or
    :meth:`LinkStates.allocation_states` of ``(devices, [bs])``; a single cell's
    carriers (:class:`CellCarriers`) give the bandwidth those rates scale.
    """

    # clock, nodes, radio, compute
    env: simpy.Environment
    activities: Activities
    bs: Node
    devices: list[Node]  # those in coverage (World.update_coverage)
    all_devices: list[Node]  # every device, starved ones included
    downlink_devices: list[Node]  # those whose downlink is served (downlink-only traffic)
    radio: Radio
    compute: ComputeEngine
    # scenario, learning switch, executor
    scenario: Scenario
    source: str
    learn: bool
    executor: Executor | None
    torch_device: torch.device | None  # None in timing mode
    # data and models
    dataset: Dataset
    partitions: list[np.ndarray]
    model: ModelInfo
    models: dict[str, ModelInfo]
    train_config: TrainConfig
    # randomness
    streams: Streams
    # device state and the resource policy
    states: DeviceStates
    policy: PolicyControl

    def num_samples(self, device: Node) -> int:
        """How many training samples ``device`` holds (its partition's size).

        Parameters
        ----------
        device : Node
            A device.

        Returns
        -------
        int
            Samples [count]; a local epoch costs ``model.flops.train_per_sample`` FLOPs
            per sample.
        """
        ...

    def device_model(self, device: Node) -> ModelInfo:
        """The architecture ``device`` runs (``model`` unless models are per device).

        Parameters
        ----------
        device : Node
            A device.

        Returns
        -------
        ModelInfo
            Its ``size_bits`` [bit] (one copy on air at full precision) and ``flops``
            (per-sample FLOPs: ``train_per_sample`` covers forward and backward).
        """
        ...

    def init_model_state(self, name: str | None = None, *keys: int) -> dict[str, torch.Tensor]:
        """Seeded initial parameters of a model.

        Parameters
        ----------
        name : str, optional
            The model's catalogue name (default: the global model).
        *keys : int
            Further keys of the seed (e.g. a device index: one initial model each).

        Returns
        -------
        dict of str to Tensor
            The state dict.
        """
        ...

    def submit_device_job(
        self,
        task_type: type[JobT],
        r: int,
        device: Node,
        *,
        seed_key: tuple[int, ...] = (),
        seed: int | None = None,
        config: TrainConfig | None = None,
        **fields: Any,
    ) -> Future[Any] | None:
        """Submit ``device``'s torch job of round ``r`` to the executor.

        The job's model, data indices, training config and seed are filled in; it costs
        no simulated time (charge it with ``compute.run``).

        Parameters
        ----------
        task_type : type
            A task dataclass of :mod:`netfl.learning.tasks` (e.g. ``TrainTask``).
        r : int
            The round (a key of the torch seed).
        device : Node
            The device whose data and model the job uses.
        seed_key : tuple of int
            Further keys of the seed (a device training twice in one round).
        seed : int, optional
            An explicit seed instead of the ``torch`` stream's.
        config : TrainConfig, optional
            Instead of ``train_config``.
        **fields
            The task's other fields (e.g. ``state``, ``proximal_weight``).

        Returns
        -------
        Future or None
            The job's result when collected; None in timing mode (nothing runs).
        """
        ...

    def evaluate(
        self, state: dict[str, torch.Tensor], name: str | None = None
    ) -> tuple[float, float]:
        """Evaluate ``state`` on the server's test set (not charged in simulated time).

        Parameters
        ----------
        state : dict of str to Tensor
            Parameters of model ``name``.
        name : str, optional
            The model (default: the global model).

        Returns
        -------
        accuracy : float
            Share of test samples classified right, in [0, 1].
        loss : float
            Mean test loss [nats].
        """
        ...

    def evaluate_many(
        self, items: list[tuple[dict[str, torch.Tensor], str | None]]
    ) -> list[tuple[float, float]]:
        """:meth:`evaluate` of every ``(state, model name)``: ``(accuracy, loss [nats])``
        each, in order."""
        ...

    def keep_finite(self, items: list, names: list[str]) -> list:
        """The items whose tensors are all finite; the others are recorded as faults.

        Parameters
        ----------
        items : list
            Device results, states or scores.
        names : list of str
            The device of each item (for the record).

        Returns
        -------
        list
            The finite items, in order (``training.on_nonfinite: abort`` raises instead).
        """
        ...

    def edge_of(self, device: Node) -> Node:
        """The BS node of ``device``'s serving cell: an edge server (``bs`` in a single
        cell)."""
        ...

    def available_devices(self, r: int) -> list[Node]:
        """The devices in coverage that are on at round ``r``'s start.

        Parameters
        ----------
        r : int
            The round.

        Returns
        -------
        list of Node
            Every device of ``devices`` under ``devices.availability: always``; each one
            is cut where its on-period ends.
        """
        ...

    def next_available_s(self) -> float | None:
        """The first instant after now at which a device that is off turns on [s of
        simulated time] (timed availability models; None otherwise)."""
        ...

    def wait_for_return_s(self) -> float | None:
        """:meth:`next_available_s` for a server with nobody on and nothing in flight,
        which can only wait [s of simulated time]: without ``training.time_budget_s``, a
        return more than one simulated day away stops the run with one line (a
        :class:`~netfl.errors.UserError`) instead of simulating that long."""
        ...

    def redrop(self, *keys: int) -> None:
        """Re-drop every device over the cell from the ``placement`` stream of ``keys``
        (the same keys give the same positions) and update ``devices``."""
        ...
