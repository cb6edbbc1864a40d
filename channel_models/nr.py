"""NR link adaptation: TS 38.214 MCS tables and transport block sizes, Sionna's LDPC
transport-block error curves, for the ``nr_bler`` link abstraction.

The data (package data ``data/nr_sionna.json``) is exported from Sionna
(``sionna-no-rt``) by ``validation/sionna/nr_tables.py``: the modulation order and
target code rate of every MCS of TS 38.214 Table 5.1.3.1-1 ("table 1", up to 64QAM)
and 5.1.3.1-2 ("table 2", up to 256QAM) for PUSCH and PDSCH; the TBS of each MCS by
the procedure of TS 38.214 §5.1.3.2 (a slot of 14 OFDM symbols, one DMRS symbol, one
layer) on the allocations of six channel bandwidths at 30 kHz; and the TB error rate
on a 0.05-dB SINR grid from Sionna's PHY abstraction tables (AWGN, LDPC, per MCS and
code-block size; TBLER = 1 − (1 − BLER_CB)^C). Sionna has no curve for some MCSs
(PUSCH table 1: MCS 0–2, 28; table 2: 0–8): they are never chosen, as in Sionna's
own link adaptation.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

import numpy as np
from numpy.typing import ArrayLike

from channel_models.link_abstraction import BlerLinkAdaptation

__all__ = [
    "nr_data",
    "nr_allocation_prbs",
    "nr_tbs_bits",
    "nr_bler_curve_db",
    "NrBlerEfficiency",
    "nr_bler_efficiency",
]


@lru_cache(maxsize=1)
def nr_data() -> dict:
    """The exported tables (``data/nr_sionna.json``)."""
    return json.loads(resources.files("channel_models").joinpath("data/nr_sionna.json").read_text())


def _key(direction: str, mcs_table: int) -> str:
    if mcs_table not in (1, 2):
        raise ValueError(f"mcs_table: {mcs_table} (valid: 1 = up to 64QAM, 2 = up to 256QAM)")
    return f"{'uplink' if direction != 'downlink' else 'downlink'}/table{mcs_table}"


def nr_allocation_prbs(num_prbs: int) -> int:
    """The tabulated allocation used for ``num_prbs`` PRBs: the largest not above it
    (24, 51, 106, 133, 217 or 273), or the smallest."""
    prbs = nr_data()["prbs"]
    return max([p for p in prbs if p <= num_prbs], default=prbs[0])


def nr_tbs_bits(direction: str, mcs_table: int, num_prbs: int) -> np.ndarray:
    """TBS [bit] of every MCS of ``mcs_table`` on the tabulated allocation for
    ``num_prbs`` PRBs (:func:`nr_allocation_prbs`), one slot."""
    rows = nr_data()["tables"][_key(direction, mcs_table)]["curves"][
        str(nr_allocation_prbs(num_prbs))
    ]
    return np.array([r["tbs_bits"] for r in rows], dtype=float)


def nr_bler_curve_db(
    direction: str, mcs_table: int, num_prbs: int, mcs: int, sinr_db: ArrayLike
) -> np.ndarray | None:
    """TB error rate of ``mcs`` at flat SINR ``sinr_db`` on the tabulated allocation
    (None: Sionna has no curve for this MCS), interpolated linearly in dB."""
    data = nr_data()
    rows = data["tables"][_key(direction, mcs_table)]["curves"][str(nr_allocation_prbs(num_prbs))]
    row = rows[int(mcs)]
    if row["bler"] is None:
        return None
    b = np.asarray(row["bler"], dtype=float)
    grid = row["start_db"] + data["step_db"] * np.arange(b.size)
    return np.interp(np.asarray(sinr_db, dtype=float), grid, b, left=1.0, right=0.0)


class NrBlerEfficiency(BlerLinkAdaptation):
    """The ``nr_bler`` abstraction: TS 38.214 TBS per slot (``1 ms / 2^μ``) of each MCS of
    ``mcs_table`` with Sionna's TB error curves, OLLA and HARQ
    (:class:`~channel_models.link_abstraction.BlerLinkAdaptation`)."""

    def __init__(
        self,
        direction: str,
        reference_prbs: int,
        numerology: int,
        rb_bandwidth_hz: float,
        mcs_table: int = 1,
        bler_target: float = 0.1,
        max_mcs: int | None = None,
    ):
        prbs = nr_allocation_prbs(reference_prbs)
        tbs = nr_tbs_bits(direction, mcs_table, prbs)
        if max_mcs is not None:
            if not 0 <= max_mcs < tbs.size:
                raise ValueError(
                    f"max_mcs: {max_mcs} outside MCS table {mcs_table}'s 0..{tbs.size - 1}"
                )
            tbs = tbs[: max_mcs + 1]
        super().__init__(
            tbs,
            lambda m, db: nr_bler_curve_db(direction, mcs_table, prbs, m, db),
            1e-3 / 2**numerology,
            prbs * rb_bandwidth_hz,
            bler_target,
            f"NR {direction}, MCS table {mcs_table}",
        )


#: a shared :class:`NrBlerEfficiency` per argument tuple (the link-abstraction tables are
#: built once per profile and direction)
nr_bler_efficiency = lru_cache(maxsize=64)(NrBlerEfficiency)
