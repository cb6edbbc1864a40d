"""TR 38.901 Phase-1 calibration of netfl's multi-cell geometry against Sionna
(``tests/reference/multicell_calibration.json``, written by
``validation/sionna/multicell_calibration.py``): UMa and UMi, 19 sites × 3 sectors,
wrap-around: the 5th/50th/95th percentiles of the serving cell's coupling loss and of
the downlink geometry SINR against Sionna's, with the same release's TR 38.901 tables
(Sionna's ``spec_version="16.1"``; netfl implements the Rel-16/17 tables).

The issue's bar, 1 dB, holds at all twelve points (measured, 48 drops a side: at most
0.42 dB; Sionna seeded through ``sionna.phy.config.seed``, its drops' two halves
differing by up to 1.3 dB at the coupling loss's 5th percentile, its own sampling
noise). The stored netfl
numbers are this code's (the drop is seeded), checked to 0.01 dB as a regression."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from validation.sionna.multicell_calibration import PERCENTILES, netfl_side

FIXTURE = Path(__file__).resolve().parents[1] / "reference" / "multicell_calibration.json"
DATA = json.loads(FIXTURE.read_text())


#: the issue's bar [dB] (5th, 50th, 95th percentiles)
TOLERANCE_DB = 1.0


@pytest.mark.slow  # (about 50 s each: `make test-slow`, which CI runs too)
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
        assert np.all(gap <= TOLERANCE_DB), (metric, gap)
