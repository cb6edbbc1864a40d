"""RRC timers inferred from measured phones (issue 54): the inactivity (tail) timer and
the promotion delay of Verizon LTE, 5G NSA low band and mmWave, from the RTT of
RRC-Probe's packets after idle intervals (``validation/sigcomm21/fit_rrc_timers.py``;
per-interval medians in ``tests/reference/sigcomm21_rrc_timers.json``, no raw probe).
The inference holds on the fixture, the profiles carry its timers, and the fit re-run
on the artifact writes the fixture again."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from netfl.compute import get_compute_profile
from validation.sigcomm21 import fit_rrc_timers

FIXTURE = Path(__file__).resolve().parents[1] / "reference" / "sigcomm21_rrc_timers.json"
PROFILES = {"lte": "s20u_lte", "5g_lowband": "s20u_5g_lowband", "5g_mmwave": "s20u_5g_mmwave"}


@pytest.fixture(scope="module")
def measured() -> dict:
    return json.loads(FIXTURE.read_text())


@pytest.mark.parametrize("network", sorted(PROFILES))
def test_the_timers_follow_from_the_medians_and_the_profiles_carry_them(measured, network):
    t = fit_rrc_timers.timers(pd.DataFrame(measured["medians"][network]))
    assert t == measured["timers"][network]
    profile = get_compute_profile(PROFILES[network])
    assert profile.rrc_tail_s == t["tail_s"] and profile.rrc_promotion_s == t["promotion_s"]
    assert "fit_rrc_timers" in profile.sources["rrc_tail_s"]


@pytest.mark.parametrize("network", sorted(PROFILES))
def test_the_states_differ_as_rrc_says(measured, network):
    """Before the timer the medians stay within a DRX cycle of the network's RTT; after
    it an idle phone waits for paging (a 1.28 s cycle) and a promotion: the median RTT
    rises by more than half a paging cycle, and the timer is Verizon's ~10 s."""
    m = pd.DataFrame(measured["medians"][network])
    t = measured["timers"][network]
    before = m.loc[m["interval_s"] < t["tail_s"] - 1.0, "rtt_ms"]
    after = m.loc[m["interval_s"] > t["tail_s"] + 2.0, "rtt_ms"]
    assert before.max() < 450 and np.median(after) - np.median(before) > 640
    assert 9.0 <= t["tail_s"] <= 12.0 and 0.2 <= t["promotion_s"] <= 0.4
    assert (m["probes"] >= 3).all()


def test_a_clean_step_is_found_where_it_is():
    """On synthetic medians — a DRX sawtooth up to 8.3 s, then paging sawtooth plus a
    0.25 s promotion — the timer is the step and the promotion is recovered to the
    sawtooths' sampling."""
    t = np.round(np.arange(0.0, 20.0, 0.1), 1)
    drx = 60.0 + (t * 1000.0) % 320.0
    idle = 60.0 + 250.0 + (t * 1000.0) % 1280.0
    m = pd.DataFrame({"interval_s": t, "rtt_ms": np.where(t < 8.3, drx, idle), "probes": 5})
    got = fit_rrc_timers.timers(m)
    assert got["tail_s"] == pytest.approx(8.3, abs=0.15)
    assert got["promotion_s"] == pytest.approx(0.25, abs=0.07)


def test_the_fit_rerun_on_the_artifact_reproduces_the_fixture(
    tmp_path, measured, sigcomm21_artifact
):
    out = tmp_path / "rrc.json"
    assert fit_rrc_timers.main(["--artifact", str(sigcomm21_artifact), "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == measured
