"""TR 38.901 Phase-1 calibration of netfl's multi-cell geometry against Sionna
(``tests/reference/multicell_calibration.json``, written by
``validation/sionna/multicell_calibration.py``): UMa and UMi, 19 sites × 3 sectors,
wrap-around: the 5th/50th/95th percentiles of the serving cell's coupling loss and of
the downlink geometry SINR against Sionna's.

The issue's bar is 1 dB. Measured (8 drops, 4,560 UEs a side): UMa within 1 dB but the
median coupling loss (1.1 dB); UMi's coupling loss within 1.7 dB and its SINR 0.7 / 1.2 /
2.8 dB above Sionna's (netfl's interference from the other cells is lower at the top of
the distribution). The tolerances below are those measured, as a regression bound, not
the bar: closing UMi's gap is the open part of the calibration (README)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from validation.sionna.multicell_calibration import PERCENTILES, netfl_side

FIXTURE = Path(__file__).resolve().parents[1] / "reference" / "multicell_calibration.json"
DATA = json.loads(FIXTURE.read_text())


#: |netfl − Sionna| reached per scenario and metric [dB] (5th, 50th, 95th percentiles)
TOLERANCE_DB = {
    ("uma", "coupling_loss_db"): (1.0, 1.2, 1.0),
    ("uma", "geometry_sinr_db"): (1.0, 1.0, 1.0),
    ("umi", "coupling_loss_db"): (1.8, 1.0, 1.0),
    ("umi", "geometry_sinr_db"): (1.0, 1.3, 3.0),
}


@pytest.mark.parametrize("scenario", sorted(DATA["scenarios"]))
def test_percentiles_against_sionna(scenario):
    entry = DATA["scenarios"][scenario]
    drops = entry["ues"] // (57 * 10)
    cl, sinr = netfl_side(scenario, drops, 10)
    ours = {
        "coupling_loss_db": np.percentile(cl, PERCENTILES),
        "geometry_sinr_db": np.percentile(sinr, PERCENTILES),
    }
    for metric, values in ours.items():
        # the stored netfl numbers are this code's (the drop is seeded)
        np.testing.assert_allclose(values, entry["netfl"][metric], atol=0.006)
        gap = np.abs(values - np.asarray(entry["sionna"][metric]))
        assert np.all(gap <= TOLERANCE_DB[(scenario, metric)]), (metric, gap)
