"""``ofdma`` link mode: transfers over faded OFDMA carriers shared with CUEs.

Uplink and downlink are separate carriers of the channel profile's size (FDD)
or the two time-shares of one TDD carrier (each direction gets its slot
pattern's fraction of the carrier's rate). D2D transfers are an overlay on
the uplink resources (FedDif (16f)): they take uplink RBs that no CUE
session or uplink transfer holds — the scheduler keeps every RB with one
holder, so D2D and cellular users are orthogonal.

SNR per RB (β = 10^(−loss/10) of the link, the large-scale loss drawn once
per link and drop):

- downlink: P_BS·β / (N0·F_UE·B), the BS's power spread over the carrier;
- uplink and D2D, ``open_loop`` power control (TS 38.213 §7.1.1):
  min(P_CMAX/M, P0·2^μ·PL^α)·β / (N0·F_rx·B_RB) for a share of M RBs,
  recomputed whenever the shares change; ``full_carrier`` (FedDif eq. (9)):
  P_UE·β / (N0·F_BS·B).

Rayleigh (or Rician) block fading is drawn per transfer and block.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import simpy
from scipy.special import ndtri

from channel_models.channel_profiles import ChannelProfile
from channel_models.numerology import SUBFRAME_S
from channel_models.units import dbm_to_w, linear_to_db
from netfl.core.nodes import Node
from netfl.core.records import Recorder
from netfl.radio.link_fading import FADING_DRAWS, LinkBlockFading
from netfl.radio.ofdma import OfdmaCarrier
from netfl.radio.ofdma_flow import OfdmaFlow
from netfl.radio.radio import COVERAGE_COLUMNS, LinkRadio, UplinkGrant, direction_of
from netfl.radio.radio_energy import BsPowerModel
from netfl.radio.uplink_mac import cut_flows, deliver_in_grant_cycles, harq_tail

__all__ = ["OfdmaRadio"]

_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 arrays (wrapping arithmetic): a keyed hash
    whose outputs are uniform 64-bit words, vectorised over links."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _MIX1
        x = (x ^ (x >> np.uint64(27))) * _MIX2
    return x ^ (x >> np.uint64(31))


class OfdmaRadio(LinkRadio):
    """Uplink/downlink OFDMA carriers with a scheduler; D2D overlays the uplink.

    Parameters
    ----------
    profile : ChannelProfile
        Carrier, path loss, fading, noise, powers, duplexing, power control.
    scheduler : str
        A name of :data:`~netfl.radio.schedulers.SCHEDULERS` (each carrier has its own).
    scheduler_options : mapping, optional
        Its options (the scheduler's ``Config``).
    rng_for_transfer : callable
        ``k → numpy Generator`` for the k-th transfer's fading.
    rng_for_link : callable
        ``key → numpy Generator``; ``rng_for_link(0)`` seeds the keyed hash that gives
        every link its large-scale draws (LOS, shadowing).
    max_rbs_per_transfer : float
        Cap on the RBs one FL transfer may hold (``inf``: no cap).
    aggregate_above_flows : int
        A carrier with at least this many flows may rate its Rayleigh blocks G at a time
        (:class:`~netfl.radio.columns.ColumnRule`; 0: never).
    fading_draw : str
        ``"per_transfer"`` (each transfer's blocks from its own stream) or
        ``"per_link"`` (a link's gain in a block is the same for every transfer on it,
        and can be sounded: :mod:`netfl.radio.link_fading`).
    """

    mode = "ofdma"

    def __init__(
        self,
        env: simpy.Environment,
        recorder: Recorder,
        profile: ChannelProfile,
        scheduler: str,
        rng_for_transfer: Callable[[int], np.random.Generator],
        rng_for_link: Callable[[int], np.random.Generator] | None = None,
        max_rbs_per_transfer: float = float("inf"),
        scheduler_options: Mapping[str, Any] | None = None,
        bs: Node | None = None,
        bs_power: BsPowerModel | None = None,
        aggregate_above_flows: int = 0,
        fading_draw: str = "per_transfer",
    ):
        super().__init__(env, recorder, bs, bs_power)
        self.profile = profile
        self.pathloss = profile.build_pathloss()
        self.d2d_pathloss = profile.build_pathloss(d2d=True)
        self._rng_for_transfer = rng_for_transfer
        self._rng_for_link = rng_for_link or (lambda k: np.random.default_rng(k))
        self._name_keys: dict[str, np.uint64] = {}
        self._loss_cache: dict[tuple, float] = {}
        self._laws_at: dict[tuple, Any] = {}
        #: the seed of the links' keyed-hash draws (LOS states, shadowing, rays)
        self.link_seed = np.uint64(self._rng_for_link(0).integers(2**63))
        if fading_draw not in FADING_DRAWS:
            raise ValueError(f"fading_draw must be one of {FADING_DRAWS}, got {fading_draw!r}")
        #: fading per link and block (None: per transfer)
        self.link_fading = (
            LinkBlockFading(profile.build_fading(), int(self._rng_for_link(1).integers(2**63)))
            if fading_draw == "per_link"
            else None
        )
        self._count = 0
        self.max_rbs_per_transfer = max_rbs_per_transfer
        self.cues = None  # the CueTraffic on these carriers, set by the world
        self.carriers = {
            d: OfdmaCarrier(
                env,
                d,
                profile.data_rbs(d),  # (uplink: less the PUCCH RBs)
                profile.rb_bandwidth_hz,
                profile.build_fading(),
                profile.efficiency_for(d),
                scheduler,
                scheduler_options,
                time_fraction=profile.time_fraction(d),
                rb_groups=profile.rb_groups(d),
                aggregate_above_flows=aggregate_above_flows,
            )
            for d in ("uplink", "downlink")
        }
        if self.bs_meter is not None:
            self.carriers["downlink"].listen(self.bs_meter.update)

    def carrier_for(self, direction: str) -> OfdmaCarrier:
        return self.carriers["downlink" if direction == "downlink" else "uplink"]

    def link_loss_db(self, src: Node, dst: Node) -> float:
        """Large-scale loss of the link ``src → dst`` [dB]: :meth:`link_loss_matrix_db`
        of one link, kept per link and positions (it is fixed per link and drop)."""
        return self.link_now(src, dst)[0]

    def link_now(self, src: Node, dst: Node) -> tuple[float, float, float]:
        """``(loss_db, snr_per_rb, snr_total)`` of a link now (a network's cell: with its
        interference, a moving UE at its last measurement)."""
        return self.link_at_positions(src, dst)

    def forget_links(self) -> None:
        """Drop the kept links (their nodes moved: a re-drop, a re-attachment)."""
        self._loss_cache.clear()

    def link_at_positions(self, src: Node, dst: Node) -> tuple[float, float, float]:
        """``(loss_db, snr_per_rb, snr_total)`` of a link at the nodes' positions, kept
        per link and positions."""
        key = (src.name, dst.name, src.position_m.tobytes(), dst.position_m.tobytes())
        entry = self._loss_cache.get(key)
        if entry is None:
            if len(self._loss_cache) >= 100_000:  # re-drops leave stale positions behind
                self._loss_cache.clear()
            loss = float(self.link_loss_matrix_db([src], [dst])[0, 0])
            psd, total = self.snr_terms(loss, not src.is_device, not dst.is_device)
            entry = self._loss_cache[key] = (loss, float(psd), float(total))
        return entry

    def _law(self, src: Node, dst: Node):
        return self.d2d_pathloss if (src.is_device and dst.is_device) else self.pathloss

    def link_loss_matrix_db(self, srcs: Sequence[Node], dsts: Sequence[Node]) -> np.ndarray:
        """Large-scale loss of every link ``srcs[m] → dsts[i]`` [dB], shape (M, N).

        Path loss at the link's distance and, where the law draws them, its LOS
        state and shadowing. Those draws are a function of the link — the two
        nodes' names and positions and the ``shadowing`` stream — so they are
        fixed per link and drop, the same in both directions, and the same
        whether links are evaluated one by one or as a matrix, in any order.
        """
        out = np.zeros((len(srcs), len(dsts)))
        if not len(srcs) or not len(dsts):
            return out
        a = np.array([n.position_m for n in srcs], dtype=float)
        b = np.array([n.position_m for n in dsts], dtype=float)
        dist = self._distances_m(srcs, dsts, a, b)
        d2d = np.array([[s.is_device and d.is_device for d in dsts] for s in srcs])
        h_src = np.array([n.height_m for n in srcs], dtype=float)
        h_dst = np.array([n.height_m for n in dsts], dtype=float)
        heights = bool(np.isfinite(h_src).any() or np.isfinite(h_dst).any())
        # an indoor device's links to a BS shadow with the O2I σ_SF (TR 38.901 laws)
        in_src = np.array([n.o2i_loss_db > 0 for n in srcs])
        in_dst = np.array([n.o2i_loss_db > 0 for n in dsts])
        o2i = (in_src[:, None] | in_dst[None, :]) & ~d2d if in_src.any() or in_dst.any() else None
        # ... and draw their LOS state at d_2D-out (the device end's d_2D-in; the BS's is 0)
        in_m = (
            None
            if o2i is None
            else np.where(
                o2i,
                np.maximum(
                    np.array([n.o2i_inside_m for n in srcs])[:, None],
                    np.array([n.o2i_inside_m for n in dsts])[None, :],
                ),
                0.0,
            )
        )
        for law, mask in ((self.d2d_pathloss, d2d), (self.pathloss, ~d2d)):
            if not mask.any():
                continue
            los_u = shadow_z = None
            if law.random:
                los_u, shadow_z = self.link_variates(srcs, dsts, a, b)
                los_u, shadow_z = los_u[mask], shadow_z[mask]
            inside = None if o2i is None or law is self.d2d_pathloss else o2i[mask]
            inside_m = None if inside is None else in_m[mask]
            if not heights:
                out[mask] = law.loss_db_given(dist[mask], los_u, shadow_z, inside, inside_m)
                continue
            # per-device heights: cellular links put the device's height on the law's UE
            # side (whichever end it is), D2D links the sender's and receiver's
            if law is self.d2d_pathloss:
                htx = np.broadcast_to(h_src[:, None], dist.shape)[mask]
                hrx = np.broadcast_to(h_dst[None, :], dist.shape)[mask]
            else:
                htx = np.full(int(mask.sum()), np.nan)
                hrx = np.fmax(h_src[:, None], h_dst[None, :])[mask]  # (the BS's is NaN)
            htx = np.where(np.isnan(htx), law.height_tx_m, htx)
            hrx = np.where(np.isnan(hrx), law.height_rx_m, hrx)
            vals = np.empty(htx.size)
            pairs = np.stack([htx, hrx], axis=1)
            for ht, hr in np.unique(pairs, axis=0):
                sel = (htx == ht) & (hrx == hr)
                vals[sel] = self.law_at(law, float(ht), float(hr)).loss_db_given(
                    dist[mask][sel],
                    None if los_u is None else los_u[sel],
                    None if shadow_z is None else shadow_z[sel],
                    None if inside is None else inside[sel],
                    None if inside_m is None else inside_m[sel],
                )
            out[mask] = vals
        return out

    def _distances_m(
        self, srcs: Sequence[Node], dsts: Sequence[Node], a: np.ndarray, b: np.ndarray
    ) -> np.ndarray:
        """2-D distances of the links ``srcs[m] → dsts[i]`` from positions ``a``, ``b``
        [m] (a multi-cell radio takes a BS at its image nearest to the UE)."""
        return np.hypot(*np.moveaxis(a[:, None, :] - b[None, :, :], -1, 0))

    def law_at(self, law, height_tx_m: float, height_rx_m: float):
        """``law`` at other antenna heights, kept per law and heights."""
        key = (id(law), height_tx_m, height_rx_m)
        found = self._laws_at.get(key)
        if found is None:
            found = self._laws_at[key] = law.at_heights(height_tx_m, height_rx_m)
        return found

    def _node_key(self, node: Node) -> np.uint64:
        key = self._name_keys.get(node.name)
        if key is None:
            key = self._name_keys[node.name] = np.uint64(zlib.crc32(node.name.encode()))
        return key

    def link_variates(
        self, srcs: Sequence[Node], dsts: Sequence[Node], a: np.ndarray, b: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per link a U(0, 1) variate (LOS state) and a N(0, 1) variate (shadowing),
        from a keyed hash of the unordered link (names, positions) and the stream seed."""
        ka = np.array([self._node_key(n) for n in srcs], dtype=np.uint64)[:, None]
        kb = np.array([self._node_key(n) for n in dsts], dtype=np.uint64)[None, :]
        pa = a.view(np.uint64)[:, None, :]
        pb = b.view(np.uint64)[None, :, :]
        # order-free combination of the two ends: reciprocal links share their draws
        ea = _mix64(_mix64(ka ^ _mix64(pa[..., 0])) ^ pa[..., 1])
        eb = _mix64(_mix64(kb ^ _mix64(pb[..., 0])) ^ pb[..., 1])
        h = _mix64(self.link_seed ^ (ea + eb) ^ _mix64(ea ^ eb))
        u = (_mix64(h ^ np.uint64(1)) >> np.uint64(11)).astype(float) * 2.0**-53
        v = ((_mix64(h ^ np.uint64(2)) >> np.uint64(11)).astype(float) + 0.5) * 2.0**-53
        return u, ndtri(v)

    def snr_terms(
        self, loss_db, from_bs: bool, to_bs: bool, wideband: bool = False
    ) -> tuple[Any, Any]:
        """``(snr_per_rb, snr_total)`` of a link with ``loss_db`` (a number or an array;
        a BS–UE link gains the profile's ``antenna_gain_db`` on it, which open-loop power
        control sees too, as its RSRP-based path loss would): the per-RB SNR is ``min(snr_total / M, snr_per_rb)`` for M RBs (``snr_total`` =
        inf: no power control).

        A full-carrier UE transmitter's SNR is the wideband one (power over the carrier,
        as a sounding signal measures it) unless the profile's ``cqi_sinr`` is
        ``allocation``: then its power concentrates on the M RBs it holds (``snr_total``
        = all power in one RB, never more than that per RB). ``wideband`` asks for the
        wideband SNR whatever the option (FedDif's link planning).
        """
        p = self.profile
        if p.antenna_gain_db and (from_bs or to_bs):  # a serving link's beamforming gain
            loss_db = np.asarray(loss_db, dtype=float) - p.antenna_gain_db
        beta = 10.0 ** (-np.asarray(loss_db, dtype=float) / 10.0)
        receiver = "bs" if to_bs else "ue"
        if from_bs:
            return p.bs_tx_power_w * beta / p.noise_w(receiver), math.inf
        pc = p.uplink_power_control
        if pc["model"] == "full_carrier":
            if p.cqi_sinr == "allocation" and not wideband:
                one_rb = p.ue_tx_power_w * beta / p.noise_w(receiver, p.rb_bandwidth_hz)
                return one_rb, one_rb
            return p.ue_tx_power_w * beta / p.noise_w(receiver), math.inf
        noise_rb = p.noise_w(receiver, p.rb_bandwidth_hz)
        psd_dbm = pc["p0_dbm"] + 10.0 * math.log10(2.0**p.numerology) + pc["alpha"] * loss_db
        return dbm_to_w(psd_dbm) * beta / noise_rb, p.ue_tx_power_w * beta / noise_rb

    def mean_snr(self, src: Node, dst: Node, num_rbs: float = 1.0) -> float:
        """Mean per-RB SNR of ``src → dst`` holding ``num_rbs`` RBs (no fading) [linear]."""
        _, psd, total = self.link_now(src, dst)
        return float(min(psd, total / num_rbs))

    def link_states(
        self, srcs: Sequence[Node], dsts: Sequence[Node]
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(planning SNR, expected spectral efficiency)`` of every ``srcs[m] → dsts[i]``,
        shape (M, N) each; 0 where a node would send to itself (FedDif (9), (21)).

        The planning SNR [linear] is the mean (no fading) wideband one: ``P·β / (N0·F·B)``
        with the sender's full power over the bandwidth it spreads over, or under
        open-loop power control the per-RB SNR its power-spectral-density target gives,
        ``P0·2^μ·PL^α·β / (N0·F·B_RB)``, not capped at the UE's maximum power
        (:meth:`snr_terms` with ``wideband``; :class:`~netfl.algorithms.context.LinkStates`
        compares it with :meth:`allocation_states`). γ̃ = E_h[SE(SNR·|h|²)] over the
        profile's fading with the profile's efficiency (Shannon or CQI, after
        overhead) [bit/s/Hz]. All links must share one direction.
        """
        direction = self._one_direction(srcs, dsts, "link_states")
        snr = np.zeros((len(srcs), len(dsts)))
        if direction is None:
            return snr, snr.copy()
        psd, _ = self.snr_terms(
            self.link_loss_matrix_db(srcs, dsts),
            direction == "downlink",
            direction == "uplink",
            wideband=True,
        )
        self_pair = np.array([[s is d for d in dsts] for s in srcs], dtype=bool)
        snr = np.where(self_pair, 0.0, psd)
        return snr, self.expected_efficiency(snr, direction)

    @staticmethod
    def _one_direction(srcs: Sequence[Node], dsts: Sequence[Node], what: str) -> str | None:
        """The one direction of the links ``srcs × dsts`` (None: no link but self pairs)."""
        directions = {direction_of(s, d) for s in srcs for d in dsts if s is not d}
        if len(directions) > 1:
            raise ValueError(f"{what} needs links of one direction, got {sorted(directions)}")
        return next(iter(directions), None)

    def allocation_states(
        self, srcs: Sequence[Node], dsts: Sequence[Node], num_rbs: float = 1.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(allocation SNR, expected spectral efficiency)`` of every ``srcs[m] →
        dsts[i]`` for a transfer holding ``num_rbs`` RBs, shape (M, N) each; 0 where a
        node would send to itself.

        The allocation SNR [linear] is :meth:`mean_snr`: ``min(snr_psd, snr_one_rb /
        num_rbs)`` of the link now (:meth:`link_now`, a network's cell with its
        interference), what a transfer's blocks are rated at before fading; with
        ``num_rbs = 1`` it is :meth:`coverage`'s ``uplink_snr_db`` /
        ``downlink_snr_db``. γ̃ as :meth:`link_states` [bit/s/Hz].
        """
        if not num_rbs > 0:
            raise ValueError(f"allocation_states: num_rbs must be positive, got {num_rbs!r}")
        direction = self._one_direction(srcs, dsts, "allocation_states")
        snr = np.zeros((len(srcs), len(dsts)))
        if direction is None:
            return snr, snr.copy()
        for m, src in enumerate(srcs):
            for i, dst in enumerate(dsts):
                if src is not dst:
                    snr[m, i] = self.mean_snr(src, dst, num_rbs)
        return snr, self.expected_efficiency(snr, direction)

    def expected_efficiency(self, snr: np.ndarray, direction: str) -> np.ndarray:
        """γ̃ = E_h[SE(SNR·|h|²)] [bit/s/Hz] at mean SNRs ``snr`` over the profile's fading
        with the ``direction`` carrier's efficiency (FedDif (9))."""
        snr = np.asarray(snr, dtype=float)
        se = self.carrier_for(direction).efficiency
        flat = snr.reshape(-1)
        gamma = self.carriers["uplink"].fading.expectation(lambda g: se(flat[:, None] * g))
        return np.asarray(gamma, dtype=float).reshape(snr.shape)

    def d2d_budget(self, senders: Sequence[Node]) -> tuple[np.ndarray, np.ndarray]:
        """FedDif (16f)'s bandwidth pools of D2D pairs sent by ``senders``: the pool of
        each sender and the uplink bandwidth no CUE holds in each pool [Hz] (one cell:
        one pool, :meth:`d2d_free_bandwidth_hz`)."""
        return np.zeros(len(senders), dtype=int), np.array([self.d2d_free_bandwidth_hz()])

    def link_state(self, src: Node, dst: Node) -> tuple[float, float]:
        """:meth:`link_states` of one link."""
        snr, gamma = self.link_states([src], [dst])
        return float(snr[0, 0]), float(gamma[0, 0])

    def cue_mean_snr(
        self,
        position_m: np.ndarray,
        direction: str,
        rng: np.random.Generator | None = None,
        num_rbs: float = 1.0,
    ) -> float:
        """Mean per-RB SNR of a background UE at ``position_m`` holding ``num_rbs`` RBs."""
        loss_db = float(self.pathloss.loss_db(np.array([float(np.hypot(*position_m))]), rng)[0])
        psd, total = self.snr_terms(loss_db, direction == "downlink", direction != "downlink")
        return float(min(psd, total / num_rbs))

    def downlink_load(self) -> float:
        """FL share of the downlink RBs, times the downlink time fraction (TDD)."""
        c = self.carriers["downlink"]
        _, fl = c.held()
        return fl / c.num_rbs * c.time_fraction

    def d2d_free_bandwidth_hz(self) -> float:
        """Uplink bandwidth no CUE holds now: what D2D pairs may use (FedDif (16f))."""
        c = self.carriers["uplink"]
        cue, _ = c.held()
        return max(c.num_rbs - cue, 0.0) * c.rb_bandwidth_hz * c.time_fraction

    def send(
        self,
        carrier: OfdmaCarrier,
        size_bits: float,
        psd: float,
        total: float,
        rng: np.random.Generator | None = None,
        **kw: Any,
    ) -> OfdmaFlow:
        """Start a flow on ``carrier`` with the fading generator ``rng`` (default: the next
        transfer's; the grant cycles of one upload share their transfer's)."""
        if rng is None:
            rng = self._rng_for_transfer(self._count)
            self._count += 1
        cap = kw.pop("cap_rbs", self.max_rbs_per_transfer)
        link = kw.get("link")
        grant = self.grants.get(link[0].name) if link is not None and link[0].is_device else None
        if grant is not None and not link[1].is_device:  # (an uplink under a policy's grant)
            psd, total, cap = self._granted(carrier, psd, total, cap, grant)
        if self.link_fading is not None and link is not None and kw.get("multicast_snrs") is None:
            key = self.link_fading.link_key(link[0].name, link[1].name)
            kw["block_gains"] = functools.partial(self.link_fading.gains, key)
        return carrier.send(size_bits, psd, rng, cap_rbs=cap, snr_total=total, **kw)

    def _granted(
        self, carrier: OfdmaCarrier, psd: float, total: float, cap: float, grant: UplinkGrant
    ) -> tuple[float, float, float]:
        """An uplink's ``(per-RB SNR, one-RB SNR, RB cap)`` under ``grant``: the cap
        ``share`` × the carrier's data RBs; the SNRs × ``power_w`` / the power class (open
        loop: only the one-RB SNR, the power the target may use)."""
        if grant.share is not None:
            cap = min(cap, grant.share * carrier.num_rbs)
        if grant.power_w is not None:
            scale = grant.power_w / self.profile.ue_tx_power_w
            total = total * scale
            if self.profile.uplink_power_control["model"] == "full_carrier":
                psd = psd * scale
        return psd, total, cap

    def power_class_w(self, device: Node) -> float:
        """The UE power class of the profile [W] (every device's)."""
        return float(self.profile.ue_tx_power_w)

    def mean_snr_db(self, src: Node, dst: Node) -> float:
        return float(linear_to_db(self.mean_snr(src, dst, 1.0)))

    def block_snr_db(self, src: Node, dst: Node) -> float:
        if self.link_fading is None:
            return math.nan
        key = self.link_fading.link_key(src.name, dst.name)
        return self.mean_snr_db(src, dst) + float(
            linear_to_db(self.link_fading.gain(key, self.env.now))
        )

    def expected_rate_bps(
        self, src: Node, dst: Node, share: float = 1.0, power_w: float | None = None
    ) -> float:
        direction = direction_of(src, dst)
        carrier = self.carrier_for(direction)
        _, psd, total = self.link_now(src, dst)
        cap = self.max_rbs_per_transfer
        if direction == "uplink":
            psd, total, cap = self._granted(
                carrier, psd, total, cap, UplinkGrant(share=share, power_w=power_w)
            )
        else:
            cap = min(cap, share * carrier.num_rbs)
        num_rbs = float(carrier.usable_caps(cap, np.array([total]))[0])
        snr = min(psd, total / num_rbs)
        gamma = float(self.expected_efficiency(np.array([snr]), direction)[0])
        return gamma * num_rbs * carrier.rb_bandwidth_hz * carrier.time_fraction

    def _finish(self, carrier: OfdmaCarrier, flow: OfdmaFlow, start: float) -> dict[str, float]:
        duration = self.env.now - start
        snr = carrier.mean_snr(flow, duration)
        return {
            "rb_subframes": flow.rb_seconds / SUBFRAME_S,
            "mean_snr_db": float(linear_to_db(snr)),
            "airtime_s": flow.airtime_s if flow.size_bits > 0 else duration,
        }

    def _deliver(
        self, src: Node, dst: Node, size_bits: float, direction: str
    ) -> Generator[simpy.Event, Any, dict[str, float] | None]:
        carrier = self.carrier_for(direction)
        _, psd, total = self.link_now(src, dst)
        start = self.env.now
        grant = self.profile.uplink_grant
        sent: list[OfdmaFlow] = []  # (the flows started; a grant cycle's each)

        def send(bits: float, rng: np.random.Generator | None = None) -> OfdmaFlow:
            sent.append(self.send(carrier, bits, psd, total, rng, link=(src, dst)))
            return sent[-1]

        extra: dict[str, Any] = {}
        try:
            if direction == "downlink" and self.profile.downlink_delay_s > 0 and size_bits > 0:
                yield self.env.timeout(self.profile.downlink_delay_s)
            if direction != "uplink" or grant is None or size_bits <= 0:
                flow = send(size_bits)
                yield flow.done
                extra = self._finish(carrier, flow, start)
            else:
                rng = self._rng_for_transfer(self._count)  # (one per upload, its cycles share it)
                self._count += 1
                extra, flow = yield from deliver_in_grant_cycles(
                    self.env, lambda bits: send(bits, rng), size_bits, grant
                )
            yield from harq_tail(self.env, self.profile.harq, carrier.efficiency, extra, flow.rng)
        except simpy.Interrupt as stop:
            cut = cut_flows(carrier, sent, stop.cause)
            if "harq_retransmissions" in extra:  # (cut in the last block's round trips)
                cut.extra["harq_retransmissions"] = extra["harq_retransmissions"]
            raise cut from None
        return extra

    def _deliver_multicast(
        self, src: Node, receivers: list[Node], size_bits: float, progress: list
    ) -> Generator[simpy.Event, Any, dict[str, float] | None]:
        carrier = self.carriers["downlink"]
        snrs = np.array([self.link_now(src, r)[1] for r in receivers])
        start = self.env.now
        # (a receiver cut before the flow starts: nothing on air, no RB held)
        progress.append(lambda: (0.0, {"airtime_s": 0.0, "rb_subframes": 0.0}))
        if self.profile.downlink_delay_s > 0 and size_bits > 0:
            yield self.env.timeout(self.profile.downlink_delay_s)
        flow = self.send(carrier, size_bits, float(snrs.min()), math.inf, multicast_snrs=snrs)

        def sent() -> tuple[float, dict[str, float]]:
            bits, airtime = carrier.progress(flow)
            return bits, {
                "airtime_s": airtime,
                "rb_subframes": carrier.rb_seconds(flow) / SUBFRAME_S,
            }

        progress[:] = [sent]
        try:
            yield flow.done
        except simpy.Interrupt as stop:  # (every receiver left)
            raise cut_flows(carrier, [flow], stop.cause) from None
        extra = self._finish(carrier, flow, start)
        yield from harq_tail(self.env, self.profile.harq, carrier.efficiency, extra, flow.rng)
        return extra

    def tables(self) -> dict[str, pd.DataFrame]:
        """``occupancy`` (RBs held by CUE traffic and FL transfers over time, per
        carrier) and ``cues`` (positions of the background UEs)."""
        occupancy = pd.DataFrame(
            [(name, t, s, f) for name, c in self.carriers.items() for t, s, f in c.occupancy],
            columns=["carrier", "time_s", "session_rbs", "flow_rbs"],
        )
        pos = self.cues.positions_m if self.cues is not None else np.zeros((0, 2))
        return {"occupancy": occupancy, "cues": pd.DataFrame({"x_m": pos[:, 0], "y_m": pos[:, 1]})}

    def coverage(self, bs: Node, devices: Sequence[Node]) -> pd.DataFrame:
        """Per device the mean per-RB SNR [dB] of its uplink (all power in one RB under
        power control) and downlink, whether each direction is starved — no rate even at
        a fading peak exceeded with probability 1e-9 (:meth:`OfdmaCarrier.reachable`):
        ns-3's schedulers never serve a UE whose CQI is 0 — and ``starved``: either is
        (an FL round needs both)."""
        rows = []
        for d in devices:
            _, up_psd, up_total = self.link_now(d, bs)
            _, down, _ = self.link_now(bs, d)
            up_ok = self.carriers["uplink"].reachable(up_psd, up_total)
            down_ok = self.carriers["downlink"].reachable(down)
            rows.append(
                {
                    "device": d.name,
                    "uplink_snr_db": float(linear_to_db(min(up_psd, up_total))),
                    "downlink_snr_db": float(linear_to_db(down)),
                    "uplink_starved": not up_ok,
                    "downlink_starved": not down_ok,
                    "starved": not (up_ok and down_ok),
                }
            )
        return pd.DataFrame(rows, columns=COVERAGE_COLUMNS)

    def __repr__(self) -> str:
        return f"OfdmaRadio({self.profile.name!r}, {self.carriers['uplink']!r})"
