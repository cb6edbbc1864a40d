"""Every bundled scenario validates and runs (with tiny overrides)."""

from __future__ import annotations

from pathlib import Path

import pytest

from netfl.runner import run
from netfl.scenario_io import load_scenario, resolved

SCENARIOS = sorted((Path(__file__).resolve().parent.parent / "scenarios").glob("*.yaml"))
TINY = ["training.rounds=1", "outputs.figures=false", "outputs.progress=false"]


def test_there_are_scenarios():
    assert {p.name for p in SCENARIOS} >= {"quickstart.yaml", "fedavg_timing.yaml"}


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario_runs(path):
    scenario = load_scenario(path, TINY)
    result = run(scenario, source=str(path))
    assert len(result.rounds) == 1
    assert result.rounds["sim_time_s"].iloc[0] > 0
    if scenario.learning.mode == "learn":
        assert 0.0 <= result.rounds["accuracy"].iloc[0] <= 1.0


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_resolved_scenario_reloads_identically(path, tmp_path):
    import yaml

    from netfl.scenario_io import parse_scenario

    want = resolved(load_scenario(path))
    again = parse_scenario(yaml.safe_load(yaml.safe_dump(want)), "resolved")
    assert resolved(again) == want
