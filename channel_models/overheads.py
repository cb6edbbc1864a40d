"""Named physical-layer overheads of a profile, each with its 3GPP source.

A profile's ``overheads`` section (scenario: ``cell.link.overheads``) names what the
resource grid spends on other things than data; each removes a share of one
direction's resources:

``cyclic_prefix``: ``normal`` | ``extended`` | ``none``
    The cyclic prefix's share of each symbol time (TS 36.211 Table 6.12-1 / TS 38.211
    §5.3.1): normal CP 2·160 + 12·144 = 2048 of 30,720 samples per ms, 6.67 %; extended
    12·512 of 30,720, 20 %. Shannon/CQI models only (a TBS counts data REs already).
``reference_signals``: ``none`` | ``lte`` | ``nr``
    Uplink DMRS: LTE one SC-FDMA symbol per slot, 2 of 14 (TS 36.211 §5.5.2.1.2); NR one
    front-loaded symbol per slot, 1 of 14 (TS 38.211 §6.4.1.1.3, type A, no additional
    positions). Downlink: LTE CRS of two antenna ports, 16 of 168 REs per PRB pair
    (TS 36.211 §6.10.1.2); NR PDSCH DMRS, 12 of 168 (TS 38.211 §7.4.1.1). Shannon/CQI
    models only.
``pdcch_symbols``: 0..3
    The downlink control region: LTE's PCFICH CFI (TS 36.211 §6.7) or an NR CORESET's
    duration (TS 38.211 §7.3.2.2) — n of 14 symbols carry no PDSCH. On ``nr_bler`` (a
    TBS on 13 data symbols) n of 13. Not on LTE TBS models: TS 36.213's TBS does not
    depend on the control region (nor does ns-3's).
``pucch_rbs``: RBs
    Uplink RBs kept for PUCCH at the band edges (TS 36.211 §5.4.3 / TS 38.211 §6.3.2):
    the uplink carrier schedules PUSCH on the others.
"""

from __future__ import annotations

from typing import Any

__all__ = ["OVERHEAD_KEYS", "validate_overheads", "overhead_share"]

OVERHEAD_KEYS = ("cyclic_prefix", "reference_signals", "pdcch_symbols", "pucch_rbs")
CYCLIC_PREFIX = {"none": 0.0, "normal": 2048 / 30720, "extended": 6144 / 30720}
REFERENCE_SIGNALS = {
    "none": {"uplink": 0.0, "downlink": 0.0},
    "lte": {"uplink": 2 / 14, "downlink": 16 / 168},
    "nr": {"uplink": 1 / 14, "downlink": 12 / 168},
}


def validate_overheads(overheads: dict[str, Any], model: str, num_rbs: int) -> None:
    """``ValueError`` naming the key at fault (unknown key, value out of range, or an
    overhead the efficiency ``model``'s TBS already holds)."""
    unknown = sorted(set(overheads) - set(OVERHEAD_KEYS))
    if unknown:
        raise ValueError(
            f"overheads: unknown key {', '.join(unknown)} (valid: {', '.join(OVERHEAD_KEYS)})"
        )
    cp = overheads.get("cyclic_prefix", "none")
    rs = overheads.get("reference_signals", "none")
    if cp not in CYCLIC_PREFIX:
        raise ValueError(f"overheads.cyclic_prefix: {cp!r} (valid: {', '.join(CYCLIC_PREFIX)})")
    if rs not in REFERENCE_SIGNALS:
        raise ValueError(
            f"overheads.reference_signals: {rs!r} (valid: {', '.join(REFERENCE_SIGNALS)})"
        )
    tbs = model in ("lte_amc", "lte_bler", "nr_bler")
    for key, value in (("cyclic_prefix", cp), ("reference_signals", rs)):
        if tbs and value != "none":
            raise ValueError(
                f"overheads.{key}: efficiency model {model!r} is a transport block size, "
                "which counts data resource elements only (set it to none)"
            )
    pdcch = overheads.get("pdcch_symbols", 0)
    if not (isinstance(pdcch, int) and not isinstance(pdcch, bool) and 0 <= pdcch <= 3):
        raise ValueError(f"overheads.pdcch_symbols: {pdcch!r} must be an integer 0..3")
    if pdcch and model in ("lte_amc", "lte_bler"):
        raise ValueError(
            "overheads.pdcch_symbols: TS 36.213's TBS (LTE profiles) does not depend on "
            "the control region; set it on Shannon, CQI or NR profiles"
        )
    pucch = overheads.get("pucch_rbs", 0)
    if not (isinstance(pucch, int) and not isinstance(pucch, bool) and 0 <= pucch < num_rbs):
        raise ValueError(f"overheads.pucch_rbs: {pucch!r} must be an integer 0..{num_rbs - 1}")


def overhead_share(overheads: dict[str, Any], model: str, direction: str) -> float:
    """Share of ``direction``'s rate the named CP, RS and PDCCH overheads take (PUCCH
    RBs are taken from the uplink carrier instead)."""
    keep = 1.0 - CYCLIC_PREFIX[overheads.get("cyclic_prefix", "none")]
    keep *= 1.0 - REFERENCE_SIGNALS[overheads.get("reference_signals", "none")][direction]
    pdcch = overheads.get("pdcch_symbols", 0)
    if direction == "downlink" and pdcch:
        keep *= 1.0 - pdcch / (13 if model == "nr_bler" else 14)
    return 1.0 - keep
