"""Nodes of the simulated cell: the base station/server and the UEs, each with its
compute profile (what it computes and draws; the catalogue of bundled profiles is
:mod:`netfl.compute.profiles`) and its energy meter (:mod:`netfl.core.meter`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from channel_models import LinkProfile
from netfl.core.meter import EnergyMeter

__all__ = ["MODEM_FIELDS", "ComputeProfile", "Node", "NodeKind"]

NodeKind = Literal["bs", "pue", "cue"]

#: a compute profile's modem values: what :meth:`ComputeProfile.with_modem` takes from
#: another profile (the rest — compute, busy and idle power — is the platform's)
MODEM_FIELDS = (
    "tx_power_w",
    "tx_power_per_mbps_w",
    "tx_power_per_w",
    "rx_power_w",
    "rx_power_per_mbps_w",
    "radio_wait_power_w",
    "rrc_tail_power_w",
    "rrc_tail_s",
    "rrc_promotion_power_w",
    "rrc_promotion_s",
)


@dataclass(frozen=True)
class ComputeProfile:
    """What a node computes per second and what it draws.

    Parameters
    ----------
    name : str
        Registry name.
    effective_flops_per_s : float
        Sustained training throughput [FLOP/s].
    reference_flops_per_s : float
        The published figure (measurement or datasheet peak) it derives from [FLOP/s].
    busy_power_w, idle_power_w : float
        Electrical power while computing / idle [W].
    tx_power_w, rx_power_w : float
        Electrical radio power while transmitting / receiving [W].
    parallel_jobs : int
        Compute steps that may run at once; further steps queue.
    radio_wait_power_w : float
        Modem power while a transfer is active but holds no RBs (queued, RRC
        connected) [W].
    rrc_tail_power_w, rrc_tail_s : float
        Modem power [W] and length [s] of the RRC tail after the last transfer
        ends (cut short when the next transfer starts).
    tx_power_per_w : float
        Electrical transmit power per watt radiated [W/W]: while transmitting at power p
        [W] (its power class's, or what a resource policy grants) the modem draws
        ``tx_power_w + tx_power_per_w · p`` (a linear power amplifier of efficiency
        1/``tx_power_per_w``; Yang et al., TWC 2021, charge p itself: ``tx_power_w`` 0,
        ``tx_power_per_w`` 1); 0: the radiated power does not change what it draws. Links
        without a transmit power (fixed rate) add nothing.
    tx_power_per_mbps_w, rx_power_per_mbps_w : float
        Radio power that grows with the transfer's throughput on air [W per Mbit/s]
        (Huang et al. 2012's α_u, α_d: P = α·R + β with β the ``tx``/``rx`` power);
        0: a constant power.
    rrc_promotion_power_w, rrc_promotion_s : float
        Modem power [W] and length [s] of the promotion from RRC idle to connected
        that a transfer of an idle UE waits for (0: none).
    min_frequency_hz, max_frequency_hz : float
        DVFS: the CPU frequency range [Hz] a resource policy may set
        (:meth:`netfl.compute.engine.ComputeEngine.set_frequency`); a step runs at
        ``max_frequency_hz`` unless one is set. ``max_frequency_hz`` 0: no DVFS (the
        FLOP/s model above, unchanged).
    capacitance : float
        DVFS: κ, the effective switched capacitance [J/(cycle·Hz²)]: a cycle at f costs
        κ·f² joules, so C cycles cost κ·C·f² (Yang et al., TWC 2021's convention; Tran
        et al., INFOCOM 2019, eqs. (5)-(6), write (α/2)·c·D·f²: their α is 2κ).
    cycles_per_flop : float
        DVFS: CPU cycles per FLOP [cycle/FLOP]; 0: derived as ``max_frequency_hz /
        effective_flops_per_s``, so that a step at f_max takes exactly the FLOP/s
        model's time.
    cycles_per_sample : float
        DVFS: CPU cycles per training sample [cycle/sample] (Yang et al.'s c_k); when
        > 0, a step that declares its samples D costs c·D cycles instead of its FLOPs ×
        ``cycles_per_flop``; 0: FLOPs alone count.
    """

    name: str
    effective_flops_per_s: float
    busy_power_w: float
    idle_power_w: float
    tx_power_w: float
    rx_power_w: float
    parallel_jobs: int = 1
    radio_wait_power_w: float = 0.0
    reference_flops_per_s: float = 0.0
    rrc_tail_power_w: float = 0.0
    rrc_tail_s: float = 0.0
    tx_power_per_mbps_w: float = 0.0
    tx_power_per_w: float = 0.0
    rx_power_per_mbps_w: float = 0.0
    rrc_promotion_power_w: float = 0.0
    rrc_promotion_s: float = 0.0
    min_frequency_hz: float = 0.0
    max_frequency_hz: float = 0.0
    capacitance: float = 0.0
    cycles_per_flop: float = 0.0
    cycles_per_sample: float = 0.0
    description: str = ""
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    #: the profile whose modem powers (:data:`MODEM_FIELDS`) these are, where not this
    #: one's own (:meth:`with_modem`); empty: its own
    modem_profile: str = ""

    def with_modem(self, modem: ComputeProfile) -> ComputeProfile:
        """A copy that draws ``modem``'s radio powers (:data:`MODEM_FIELDS`: transmit,
        receive, wait, RRC promotion and tail) with this profile's platform (compute,
        busy and idle power): a measured phone's modem on another device."""
        if modem.name == (self.modem_profile or self.name):
            return self
        sources = dict(self.sources)
        for k in MODEM_FIELDS:
            sources[k] = f"modem profile {modem.name!r}: {modem.sources.get(k, '')}".rstrip(": ")
        values = {k: getattr(modem, k) for k in MODEM_FIELDS}
        return replace(self, sources=sources, modem_profile=modem.name, **values)

    def with_overrides(self, **overrides: Any) -> ComputeProfile:
        """A copy with some values replaced (scenario-level overrides)."""
        clean = {k: v for k, v in overrides.items() if v is not None}
        if not clean:
            return self
        sources = dict(self.sources)
        for k in clean:
            sources[k] = "scenario override"
        return replace(self, sources=sources, **clean)

    @property
    def dvfs(self) -> bool:
        """Whether the node's CPU frequency is modelled (``max_frequency_hz`` > 0)."""
        return self.max_frequency_hz > 0

    @property
    def cycles_per_flop_resolved(self) -> float:
        """``cycles_per_flop``, or where 0 ``max_frequency_hz / effective_flops_per_s``
        [cycle/FLOP] (NaN without DVFS)."""
        if not self.dvfs:
            return float("nan")
        if self.cycles_per_flop > 0:
            return self.cycles_per_flop
        return self.max_frequency_hz / self.effective_flops_per_s

    def __repr__(self) -> str:
        return (
            f"ComputeProfile({self.name!r}, {self.effective_flops_per_s:.3g} FLOP/s, "
            f"busy={self.busy_power_w:g} W, idle={self.idle_power_w:g} W"
            + (
                f", DVFS {self.min_frequency_hz:.3g}-{self.max_frequency_hz:.3g} Hz)"
                if self.dvfs
                else ")"
            )
        )


@dataclass(eq=False)
class Node:
    """A node: the BS (which hosts the FL server) or a UE.

    ``link`` is the node's fixed-rate access profile (None for the BS, whose
    capacity is configured on the radio). ``index`` is the device index
    (0..N-1) for PUEs and -1 for the BS. ``height_m`` is the antenna height of a
    device placed with one (NaN: the path-loss law's UE height applies);
    ``o2i_loss_db`` the outdoor-to-indoor penetration loss of an indoor device's links
    to its BSs (a network with ``indoor_fraction``; 0 outdoors) and ``o2i_inside_m``
    its distance inside the building, d_2D-in (TR 38.901 §7.4.3: its LOS probability is
    that of d_2D-out = d_2D − d_2D-in, Table 7.4.2-1's note).
    """

    name: str
    kind: NodeKind
    index: int
    position_m: np.ndarray
    compute: ComputeProfile
    link: LinkProfile | None = None
    energy: EnergyMeter = field(default_factory=EnergyMeter)
    height_m: float = float("nan")
    o2i_loss_db: float = 0.0
    o2i_inside_m: float = 0.0

    @property
    def is_device(self) -> bool:
        return self.kind != "bs"

    def __repr__(self) -> str:
        return f"Node({self.name!r}, {self.kind})"
