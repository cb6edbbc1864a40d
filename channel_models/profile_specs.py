"""What a channel profile's spec mappings build: the spectral efficiency of a direction
(the link abstraction: Shannon, the CQI table, LTE AMC, LTE / NR BLER curves) and the
block fading. Plain mappings in, models out: :class:`channel_models.channel_profiles.
ChannelProfile` calls these with its own fields."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from channel_models.fading import FADING_MODELS, BlockFading
from channel_models.link_abstraction import BlerLinkAdaptation
from channel_models.link_budget import CQI_TABLES, shannon_efficiency
from channel_models.lte import (
    LteAmcEfficiency,
    LteBlerEfficiency,
    LteMiCqiEfficiency,
    lte_amc_efficiency,
    lte_bler_efficiency,
    lte_mi_cqi_efficiency,
)
from channel_models.nr import NrBlerEfficiency, nr_bler_efficiency
from channel_models.registry import lookup
from channel_models.units import db_to_linear
from channel_models.value_ranges import FADING_BOUNDS

__all__ = [
    "EFFICIENCY_MODELS",
    "TBS_MODELS",
    "Efficiency",
    "build_fading",
    "link_adaptation",
]


#: spectral-efficiency models of a profile: Shannon (gap, cap), the TS 38.214 CQI
#: table, and the two LTE link abstractions (channel_models.lte)
EFFICIENCY_MODELS = ("shannon", "cqi", "lte_amc", "lte_bler", "nr_bler")
#: models whose rate is a transport block size per slot (their overheads are in the TBS)
TBS_MODELS = ("lte_amc", "lte_bler", "nr_bler")


def build_fading(spec: dict[str, Any]) -> BlockFading:
    """A :class:`BlockFading` from ``{model: NAME, coherence_time_s: ..., k_factor: ...}``;
    ``ValueError`` names a parameter outside :data:`FADING_BOUNDS`."""
    params = dict(spec)
    name = params.pop("model")
    cls = lookup(FADING_MODELS, name, "fading model")
    for key, (lo, hi) in FADING_BOUNDS.items():
        v = params.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"fading.{key}: expected a number, got {str(v)[:40]!r}")
        if not (math.isfinite(v) and lo <= v <= hi):
            raise ValueError(f"fading.{key}: {v:g} is outside {lo:g} … {hi:g}")
    return cls(**params)


def link_adaptation(
    spec: dict[str, Any],
    direction: str,
    num_rbs: int,
    numerology: int,
    rb_bandwidth_hz: float,
) -> LteAmcEfficiency | LteBlerEfficiency | LteMiCqiEfficiency | NrBlerEfficiency:
    """The TBS-based link abstraction of ``direction`` that an ``efficiency`` spec of a
    :data:`TBS_MODELS` model names: ``lte_amc`` (ns-3's gap-based CQI → MCS, no errors;
    with ``downlink_cqi: mi_error_model`` the downlink follows the CQI ns-3's UE reports
    from its MI error model, TB errors and HARQ included), ``lte_bler`` or ``nr_bler``
    (BLER curves, OLLA, HARQ) — on a carrier of ``num_rbs`` RBs."""
    p = spec
    target = 0.1 if p.get("bler_target") is None else float(p["bler_target"])
    cap = p.get("max_mcs")
    if p["model"] == "nr_bler":
        return nr_bler_efficiency(
            direction,
            int(p.get("reference_prbs") or num_rbs),
            numerology,
            rb_bandwidth_hz,
            int(p.get("mcs_table") or 1),
            target,
            None if cap is None else int(cap),
        )
    prbs = int(p.get("reference_prbs") or min(num_rbs, 110))
    cap = 28 if cap is None else int(cap)
    if p["model"] == "lte_bler":
        return lte_bler_efficiency(direction, prbs, rb_bandwidth_hz, target, cap)
    if direction == "downlink" and p.get("downlink_cqi") == "mi_error_model":
        return lte_mi_cqi_efficiency(prbs, rb_bandwidth_hz, cap)
    return lte_amc_efficiency(direction, prbs, rb_bandwidth_hz, p.get("gap_db"), cap)


class Efficiency:
    """``snr → data bits per s per Hz`` of one direction, parameters resolved once:
    :meth:`channel_models.channel_profiles.ChannelProfile.efficiency_bps_per_hz` with the
    same operations in the same order, so the same floats. ``spec``: the profile's
    ``efficiency`` mapping; ``oh``: the direction's overhead share; ``adaptation``: the
    direction's :func:`link_adaptation` (used by the :data:`TBS_MODELS` only)."""

    def __init__(self, spec: dict[str, Any], oh: float, adaptation: Any = None):
        params = dict(spec)
        self.model = params.pop("model")
        self.cap = params.pop("max_bps_per_hz", None)
        self.gap_db = params.pop("gap_db", 0.0)
        self.gap = db_to_linear(self.gap_db)
        self.oh = oh
        #: the ``lte_bler`` abstraction (its HARQ draws), else None
        self.bler_model: BlerLinkAdaptation | None = None
        if self.model in TBS_MODELS:  # the TBS holds the overheads: no OH, no cap
            self.amc = adaptation
            if isinstance(self.amc, BlerLinkAdaptation):
                self.bler_model = self.amc
        if self.model == "cqi":
            table = CQI_TABLES[params.pop("table", "64qam")][:, 2]
            self.steps = np.ascontiguousarray(table)
            # the CQI's efficiency, capped and after overhead, per table index: the same
            # element-wise operations as cqi_efficiency → minimum → × (1 − OH), done once
            eff = np.concatenate([[0.0], table])
            if self.cap is not None:
                eff = np.minimum(eff, self.cap)
            self.eff = eff * (1.0 - self.oh) if self.oh else eff

    def __call__(self, snr: np.ndarray) -> np.ndarray:
        if self.model in TBS_MODELS:
            se = self.amc(snr)
            return se * (1.0 - self.oh) if self.oh else se
        if self.model == "cqi":  # cqi_efficiency (x / 1.0 is x: no division without a gap)
            x = np.asarray(snr, dtype=float)
            usable = np.log2(1.0 + (x / self.gap if self.gap_db else x))
            return self.eff[self.steps.searchsorted(usable, side="right")]
        se = shannon_efficiency(snr, self.cap, self.gap_db)
        return se * (1.0 - self.oh) if self.oh else se
