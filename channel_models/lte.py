"""LTE link adaptation with the TS 36.213 tables, as ns-3's LENA applies it.

The tables (package data ``data/lte_36213.yaml``) are exported from ns-3's ``LteAmc``
by ``validation/ns3/lte_tables.py``: CQI spectral efficiencies (TS 36.213 Table
7.2.3-1, as ns-3 rounds them), the CQI → MCS mapping ns-3's schedulers use, and the
transport block sizes per MCS and number of PRBs (Table 7.1.7.2.1-1 through Table
8.6.1-1 on the uplink, Table 7.1.7.1-1 on the downlink).

ns-3's uplink rule (``RrFfMacScheduler::DoSchedUlTriggerReq``): the SINR of the
grant's worst RB, measured on the sounding reference signal, gives the usable
efficiency ``s = log2(1 + SINR/Γ)`` with the gap ``Γ = −ln(5·BER)/1.5`` of a target
bit error rate (BER = 5·10⁻⁵, Γ ≈ 7.43 dB; Piro et al., "LTE-Sim", after Qiu &
Chuang's M-QAM bound); the CQI is the highest whose efficiency is *below* ``s``
(CQI 0: out of range, the UE is not scheduled), and the MCS the highest whose
efficiency does not exceed the CQI's. The eNB's PHY reports that SINR to the MAC in
the FF-API's S11.3 fixed point (``LteFfConverter::double2fpS11dot3``): in dB,
truncated toward zero to 1/8 dB (:func:`reported_sinr_db`), which moves a UE near
a CQI threshold to the CQI below it.
"""

from __future__ import annotations

import math
from functools import lru_cache
from importlib import resources

import numpy as np
import yaml
from numpy.typing import ArrayLike

from channel_models.link_abstraction import BlerLinkAdaptation

__all__ = [
    "TTI_S",
    "LteTables",
    "lte_tables",
    "ber_gap_db",
    "reported_sinr_db",
    "cqi_from_sinr",
    "mcs_from_cqi",
    "ul_tbs_bits",
    "dl_tbs_bits",
    "LteAmcEfficiency",
    "lte_amc_efficiency",
    "HARQ_RTT_S",
    "bler_curve_db",
    "LteBlerEfficiency",
    "lte_bler_efficiency",
]

#: LTE transmission time interval (one sub-frame) [s]
TTI_S = 1e-3
#: ns-3's target bit error rate of its gap-based CQI mapping
NS3_TARGET_BER = 5e-5


class LteTables:
    """The TS 36.213 tables (ns-3's copy): ``cqi_efficiency`` (16,), ``mcs_from_cqi``
    (16,), ``ul_tbs_bits`` and ``dl_tbs_bits`` (29 MCS, 110 PRB) [bit]."""

    def __init__(self, raw: dict):
        self.source = str(raw["source"])
        self.cqi_efficiency = np.asarray(raw["cqi_efficiency"], dtype=float)
        self.mcs_from_cqi = np.asarray(raw["mcs_from_cqi"], dtype=int)
        self.ul_tbs_bits = np.asarray(raw["ul_tbs_bits"], dtype=np.int64)
        self.dl_tbs_bits = np.asarray(raw["dl_tbs_bits"], dtype=np.int64)
        assert self.cqi_efficiency.shape == (16,) and self.mcs_from_cqi.shape == (16,)
        assert self.ul_tbs_bits.shape == (29, 110) == self.dl_tbs_bits.shape

    def __repr__(self) -> str:
        return f"LteTables(source={self.source!r})"


@lru_cache(maxsize=1)
def lte_tables() -> LteTables:
    text = resources.files("channel_models").joinpath("data/lte_36213.yaml").read_text()
    return LteTables(yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))


def ber_gap_db(ber: float = NS3_TARGET_BER) -> float:
    """SNR gap Γ = −ln(5·BER)/1.5 of a target bit error rate [dB] (7.43 dB at 5·10⁻⁵)."""
    return 10.0 * math.log10(-math.log(5.0 * ber) / 1.5)


def reported_sinr_db(sinr_db: ArrayLike) -> np.ndarray:
    """An SINR [dB] as the FF MAC API carries it (S11.3 fixed point): truncated toward
    zero to a multiple of 1/8 dB and clipped to [−4096, 4095.875] dB."""
    x = np.clip(np.asarray(sinr_db, dtype=float), -4096.0, 4095.88)
    return np.trunc(x * 8.0) / 8.0


def cqi_from_sinr(sinr: ArrayLike, gap_db: float | None = None) -> np.ndarray:
    """ns-3's CQI of a linear SINR: the highest CQI whose efficiency is below
    ``log2(1 + SINR/Γ)`` (0: out of range). ``gap_db`` default: :func:`ber_gap_db`."""
    gap = 10.0 ** ((ber_gap_db() if gap_db is None else gap_db) / 10.0)
    s = np.log2(1.0 + np.asarray(sinr, dtype=float) / gap)
    # strictly below: searchsorted 'left' counts the entries < s among CQI 1..15
    return np.searchsorted(lte_tables().cqi_efficiency[1:], s, side="left")


def mcs_from_cqi(cqi: ArrayLike) -> np.ndarray:
    """The MCS ns-3's schedulers pick for a CQI (CQI 0 maps to MCS 0, but is not scheduled)."""
    return lte_tables().mcs_from_cqi[np.asarray(cqi, dtype=int)]


def ul_tbs_bits(mcs: ArrayLike, num_prbs: ArrayLike) -> np.ndarray:
    """Uplink transport block size [bit] of ``mcs`` (0..28) on ``num_prbs`` (1..110) PRBs."""
    return lte_tables().ul_tbs_bits[np.asarray(mcs, dtype=int), np.asarray(num_prbs, dtype=int) - 1]


def dl_tbs_bits(mcs: ArrayLike, num_prbs: ArrayLike) -> np.ndarray:
    """Downlink transport block size [bit] of ``mcs`` on ``num_prbs`` PRBs (one layer)."""
    return lte_tables().dl_tbs_bits[np.asarray(mcs, dtype=int), np.asarray(num_prbs, dtype=int) - 1]


class LteAmcEfficiency:
    """ns-3's link adaptation as a spectral efficiency: linear SINR of one RB →
    ``TBS(MCS(CQI(SINR)), N)/(N · rb_bandwidth · TTI)`` [bit/s/Hz], the data rate a
    grant of ``N = reference_prbs`` PRBs carries per Hz (0 at CQI 0: not scheduled).

    The SINR is that of the sounding (uplink) or reference signal (downlink) over the
    carrier, i.e. the transmit power spread over all its RBs; on the uplink it is
    reported in 1/8 dB (:func:`reported_sinr_db`). The TBS per PRB varies little with
    the grant (MCS 28: 712 bit on 1 PRB, 753.8 per PRB on 100), so one reference
    grant serves every share. Transport-block errors are not counted: the data of a
    grant narrower than the sounding band has a higher SINR than the one its MCS was
    chosen for (ns-3 saw ~1 % errors in its runs).
    """

    def __init__(
        self,
        direction: str,
        reference_prbs: int,
        rb_bandwidth_hz: float = 180e3,
        gap_db: float | None = None,
        max_mcs: int = 28,
    ):
        if not 1 <= reference_prbs <= 110:
            raise ValueError(f"reference_prbs: {reference_prbs} outside the TBS table's 1..110")
        if not 0 <= max_mcs <= 28:
            raise ValueError(f"max_mcs: {max_mcs} outside the LTE MCS range 0..28")
        self.uplink = direction == "uplink"
        self.gap_db = ber_gap_db() if gap_db is None else float(gap_db)
        table = ul_tbs_bits if self.uplink else dl_tbs_bits
        mcs = np.minimum(mcs_from_cqi(np.arange(16)), max_mcs)  # (the MCS cap)
        tbs = table(mcs, reference_prbs).astype(float)
        tbs[0] = 0.0  # CQI 0: out of range, not scheduled
        self.by_cqi = tbs / (reference_prbs * rb_bandwidth_hz * TTI_S)
        self.thresholds = self._thresholds()

    def _thresholds(self) -> np.ndarray:
        """The smallest linear SINR (a float64) from which each CQI 1..15 is chosen by
        :meth:`cqi_of`: the rule folded into one ``searchsorted`` (it runs at every
        allocation change), found by bisection over the floats around its analytic
        value (uplink reports step at multiples of 1/8 dB)."""
        gap = 10.0 ** (self.gap_db / 10.0)
        eff = lte_tables().cqi_efficiency[1:]
        exact_db = 10.0 * np.log10(gap * (2.0**eff - 1.0))  # CQI c needs s > eff_c
        out = []
        for c, t_db in enumerate(exact_db, start=1):
            lo, hi = 10.0 ** ((t_db - 0.25) / 10.0), 10.0 ** ((t_db + 0.25) / 10.0)
            assert self._cqi1(lo) < c <= self._cqi1(hi)
            a, b = (int(np.array(v).view(np.int64)) for v in (lo, hi))
            while b - a > 1:  # positive floats order as their bit patterns
                m = (a + b) // 2
                if self._cqi1(float(np.array(m, dtype=np.int64).view(np.float64))) >= c:
                    b = m
                else:
                    a = m
            out.append(float(np.array(b, dtype=np.int64).view(np.float64)))
        return np.asarray(out, dtype=float)

    def _cqi1(self, x: float) -> int:
        return int(self.cqi_of(np.array([x]))[0])

    def cqi_of(self, sinr: np.ndarray) -> np.ndarray:
        """CQI of linear SINRs by the rule itself (reported in 1/8 dB on the uplink)."""
        x = np.asarray(sinr, dtype=float)
        if self.uplink:
            with np.errstate(divide="ignore"):
                x = 10.0 ** (reported_sinr_db(10.0 * np.log10(x)) / 10.0)
        return cqi_from_sinr(x, self.gap_db)

    def __call__(self, sinr: np.ndarray) -> np.ndarray:
        return self.by_cqi[self.thresholds.searchsorted(sinr, side="right")]

    def __repr__(self) -> str:
        return f"LteAmcEfficiency(uplink={self.uplink}, gap_db={self.gap_db:.2f})"


@lru_cache(maxsize=64)
def lte_amc_efficiency(
    direction: str,
    reference_prbs: int,
    rb_bandwidth_hz: float = 180e3,
    gap_db: float | None = None,
    max_mcs: int = 28,
) -> LteAmcEfficiency:
    """A shared :class:`LteAmcEfficiency` (its thresholds take ~50 ms to find)."""
    return LteAmcEfficiency(direction, reference_prbs, rb_bandwidth_hz, gap_db, max_mcs)


#: LTE FDD HARQ round-trip time: a NACKed transport block is retransmitted 8 TTIs later
#: (TS 36.213 §8; 8 stop-and-wait processes)
HARQ_RTT_S = 8e-3


@lru_cache(maxsize=1)
def _bler_data() -> dict:
    import json

    text = resources.files("channel_models").joinpath("data/lte_bler_ns3.json").read_text()
    return json.loads(text)


def bler_curve_db(direction: str, num_prbs: int, mcs: int, sinr_db: ArrayLike) -> np.ndarray:
    """Transport-block error rate of ``mcs`` at flat SINR ``sinr_db`` (TBS of the nearest
    standard allocation not above ``num_prbs``: 6, 15, 25, 50, 75 or 100 PRBs), from ns-3's
    ``LteMiErrorModel`` (MIESM, turbo-code ECR curves; ``data/lte_bler_ns3.json``,
    exported by ``validation/ns3/lte_bler.py``), interpolated linearly in dB."""
    data = _bler_data()
    prbs = max([p for p in data["prbs"] if p <= num_prbs], default=data["prbs"][0])
    row = data["curves"][direction][str(prbs)][int(mcs)]
    b = np.asarray(row["bler"], dtype=float)
    grid = row["start_db"] + data["step_db"] * np.arange(b.size)
    return np.interp(np.asarray(sinr_db, dtype=float), grid, b, left=1.0, right=0.0)


class LteBlerEfficiency(BlerLinkAdaptation):
    """The ``bler`` abstraction on LTE: TS 36.213 TBS of each MCS 0..28 on
    ``reference_prbs`` PRBs per 1-ms TTI, with ns-3's TB error curves
    (:func:`bler_curve_db`), OLLA and HARQ (:class:`BlerLinkAdaptation`)."""

    def __init__(
        self,
        direction: str,
        reference_prbs: int,
        rb_bandwidth_hz: float = 180e3,
        bler_target: float = 0.1,
        max_mcs: int = 28,
    ):
        if not 1 <= reference_prbs <= 110:
            raise ValueError(f"reference_prbs: {reference_prbs} outside the TBS table's 1..110")
        if not 0 <= max_mcs <= 28:
            raise ValueError(f"max_mcs: {max_mcs} outside the LTE MCS range 0..28")
        table = ul_tbs_bits if direction == "uplink" else dl_tbs_bits
        tbs = table(np.arange(max_mcs + 1), reference_prbs).astype(float)
        super().__init__(
            tbs,
            lambda m, db: bler_curve_db(direction, reference_prbs, m, db),
            TTI_S,
            reference_prbs * rb_bandwidth_hz,
            bler_target,
            f"LTE {direction}",
        )


#: a shared :class:`LteBlerEfficiency` per argument tuple (tabulating one takes ~0.1 s)
lte_bler_efficiency = lru_cache(maxsize=64)(LteBlerEfficiency)


def mi_cqi_from_sinr_db(sinr_db: ArrayLike) -> np.ndarray:
    """The wideband CQI an ns-3 LTE UE reports at a flat downlink SINR [dB]: LteAmc's
    default ``MiErrorModel`` rule (the highest MCS whose TB error rate under
    ``LteMiErrorModel`` is at most 10 %, as a CQI), read from the thresholds ns-3 gave
    (``data/lte_bler_ns3.json``, ``downlink_cqi``; 0: out of range). The thresholds lie
    on ns-3's 0.01-dB grid: an SINR within 1e-6 dB below one (a float's rounding) reaches it."""
    rule = _bler_data()["downlink_cqi"]
    thresholds = np.array([np.inf if t is None else t for t in rule["thresholds_db"]])
    return np.searchsorted(thresholds, np.asarray(sinr_db, dtype=float) + 1e-6, side="right")


class LteMiCqiEfficiency(BlerLinkAdaptation):
    """ns-3 LENA's LTE downlink: the UE reports the CQI of :func:`mi_cqi_from_sinr_db`,
    the eNB sends the CQI's MCS (:func:`mcs_from_cqi`), and each TB fails with that MCS's
    ``LteMiErrorModel`` error rate (HARQ resends it): goodput ``TBS·(1 − BLER)`` of the
    TS 36.213 downlink TBS on ``reference_prbs`` PRBs per 1-ms TTI, no OLLA."""

    def __init__(self, reference_prbs: int, rb_bandwidth_hz: float = 180e3, max_mcs: int = 28):
        if not 1 <= reference_prbs <= 110:
            raise ValueError(f"reference_prbs: {reference_prbs} outside the TBS table's 1..110")
        if not 0 <= max_mcs <= 28:
            raise ValueError(f"max_mcs: {max_mcs} outside the LTE MCS range 0..28")
        tbs = dl_tbs_bits(np.arange(max_mcs + 1), reference_prbs).astype(float)

        def choose(sinr_db: np.ndarray) -> np.ndarray:
            cqi = mi_cqi_from_sinr_db(sinr_db)
            return np.where(cqi > 0, np.minimum(mcs_from_cqi(cqi), max_mcs), -1)

        super().__init__(
            tbs,
            lambda m, db: bler_curve_db("downlink", reference_prbs, m, db),
            TTI_S,
            reference_prbs * rb_bandwidth_hz,
            label="LTE downlink, ns-3's MI-error-model CQI",
            choose_mcs=choose,
        )


#: a shared :class:`LteMiCqiEfficiency` per argument tuple
lte_mi_cqi_efficiency = lru_cache(maxsize=16)(LteMiCqiEfficiency)
