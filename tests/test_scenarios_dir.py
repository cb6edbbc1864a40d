"""Every bundled scenario validates and runs (with tiny overrides)."""

from __future__ import annotations

from pathlib import Path

import pytest

from netfl.loading.scenarios import load_scenario, resolved
from netfl.sim.runner import run

ROOT = Path(__file__).resolve().parent.parent / "scenarios"
SCENARIOS = sorted(p for p in ROOT.rglob("*.yaml") if not p.name.endswith(".sweep.yaml"))
SWEEPS = sorted(ROOT.rglob("*.sweep.yaml"))
TINY = ["training.rounds=1", "outputs.figures=false", "outputs.progress=false"]
#: scenarios whose single round is long on a CPU get smaller server/public work too
EXTRA = {
    "fedzkt.yaml": ["algorithm.server_iterations=2", "training.local_epochs=1"],
    "fedmd.yaml": ["algorithm.public_samples=200", "training.local_epochs=1"],
}


def test_there_are_scenarios():
    assert {p.name for p in SCENARIOS} >= {"quickstart.yaml", "fedavg_timing.yaml", "feddif.yaml"}
    assert {p.name for p in SWEEPS} >= {"alpha.sweep.yaml", "epsilon.sweep.yaml"}


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: p.stem)
def test_sweep_expands_to_valid_scenarios(path):
    from netfl.sweep.run import expand, load_sweep

    spec, p = load_sweep(path)
    runs = expand(spec, p)
    want = max(len(spec.variants), 1) * len(spec.seeds or [0])
    for values in spec.grid.values():
        want *= len(values)
    want *= len(next(iter(spec.zip.values()))) if spec.zip else 1
    assert len(runs) == want and len({r.name for r in runs}) == want
    # and every run's data root and partition check out, as `netfl validate` finds them
    from netfl.cli.app import main

    assert main(["validate", str(path)]) == 0


#: the components of ``device_energy_j`` (docs/tables.md)
ENERGY_PARTS = [
    f"device_{k}_energy_j" for k in ("compute", "tx", "rx", "wait", "tail", "promotion", "idle")
]


def assert_energy_adds_up(result) -> None:
    """Conservation of device energy: each round's total is the sum of its seven named
    components, active + idle; the devices table's totals (from the meters over the whole
    run) equal the rounds' (from the meters' change over each round)."""
    rounds = result.rounds
    parts = rounds[ENERGY_PARTS].sum(axis=1).to_numpy()
    assert rounds["device_energy_j"].to_numpy() == pytest.approx(parts, rel=1e-12, abs=1e-9)
    active = rounds["device_energy_j"] - rounds["device_idle_energy_j"]
    assert rounds["device_active_energy_j"].to_numpy() == pytest.approx(
        active.to_numpy(), rel=1e-12
    )
    devices = result.devices[result.devices["kind"] == "pue"]
    assert devices["energy_j"].sum() == pytest.approx(rounds["device_energy_j"].sum(), rel=1e-9)
    assert (devices["energy_j"] == devices["active_energy_j"] + devices["idle_energy_j"]).all()


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: str(p.relative_to(ROOT)))
def test_scenario_runs(path):
    scenario = load_scenario(path, TINY + EXTRA.get(path.name, []))
    result = run(scenario, source=str(path))
    assert len(result.rounds) == 1
    assert result.rounds["sim_time_s"].iloc[0] > 0
    assert_energy_adds_up(result)
    if scenario.learning.mode == "learn":
        assert 0.0 <= result.rounds["accuracy"].iloc[0] <= 1.0


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: str(p.relative_to(ROOT)))
def test_resolved_scenario_reloads_identically(path, tmp_path):
    import yaml

    from netfl.loading.scenarios import parse_scenario

    want = resolved(load_scenario(path))
    again = parse_scenario(yaml.safe_load(yaml.safe_dump(want)), "resolved")
    assert resolved(again) == want


def _same_run(scenario, source: str) -> None:
    """The run directory's ``scenario.yaml`` (the resolved scenario, through YAML) parses
    to the very scenario — but for an OFDMA link's grid, which it spells out as the run
    derived it — and re-runs to the same tables."""
    import yaml
    from pandas.testing import assert_frame_equal

    from netfl.loading.scenarios import parse_scenario

    again = parse_scenario(yaml.safe_load(yaml.safe_dump(resolved(scenario))), "resolved")
    derived = ("bandwidth_hz", "numerology", "num_rbs")
    mine, theirs = (s.model_dump(exclude={"algorithm"}) for s in (scenario, again))
    if scenario.cell.link.mode == "ofdma":
        profile = scenario.cell.link.channel_profile_resolved()
        for key in derived:
            assert theirs["cell"]["link"][key] == getattr(profile, key)
            assert mine["cell"]["link"][key] in (None, getattr(profile, key))
            mine["cell"]["link"][key] = theirs["cell"]["link"][key]
    assert mine == theirs
    assert (
        again.cell.link.channel_profile_resolved() == scenario.cell.link.channel_profile_resolved()
    )
    assert resolved(again) == resolved(scenario)
    a, b = run(scenario, source=source), run(again, source="resolved")
    assert_energy_adds_up(a)  # (every bundled scenario, in timing mode)
    assert_frame_equal(a.rounds, b.rounds)
    assert_frame_equal(a.transfers, b.transfers)
    assert_frame_equal(a.devices, b.devices)


TIMING = [*TINY, "learning.mode=timing"]


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_resolved_scenario_reproduces_the_run(path):
    _same_run(load_scenario(path, TIMING + EXTRA.get(path.name, [])), str(path))


NR = [*TIMING, "cell.radius_m=200", "cell.link={mode: ofdma, channel_profile: nr_fr1_uma}"]
VARIANTS = {
    "disc_height": [*NR, "devices.layout={kind: uniform_disc, height_m: 20}"],
    "annulus_height": [*NR, "devices.layout={kind: annulus, inner_m: 50, height_m: 7}"],
    "ring": [*NR, "devices.layout={kind: ring, radius_m: 90, phase_deg: 10, height_m: 3}"],
    "line": [*NR, "devices.layout={kind: line, start_m: [-100, 5], end_m: [100, 5]}"],
    "grid": [*NR, "devices.layout={kind: grid, spacing_m: 40, columns: 2, height_m: 1.5}"],
    "groups": [
        *NR,
        "devices.count=2",
        "devices.groups=[{count: 2, layout: {kind: uniform_disc, height_m: 30}}]",
    ],
    "lte": [*TIMING, "cell.link={mode: ofdma, channel_profile: lte_20mhz}"],
    "network_indoor_mobile": [
        *TIMING,
        "cell.link={mode: ofdma, channel_profile: nr_fr1_uma}",
        "network={sites: 7, isd_m: 200, indoor_fraction: 0.5}",
        "devices.mobility={model: random_waypoint}",
    ],
}


@pytest.mark.parametrize("name", VARIANTS)
def test_the_resolved_scenario_reproduces_layout_height_and_network_variants(name):
    _same_run(load_scenario(ROOT / "quickstart.yaml", VARIANTS[name]), "quickstart variant")


#: the modem profiles fitted to measured phones (issue 54), one per bundled scenario in turn
MEASURED_MODEMS = ("s20u_lte", "s20u_5g_lowband", "s20u_5g_mmwave")


@pytest.mark.parametrize(
    ("path", "profile"),
    [(p, MEASURED_MODEMS[i % len(MEASURED_MODEMS)]) for i, p in enumerate(SCENARIOS)],
    ids=lambda v: str(v.relative_to(ROOT)) if isinstance(v, Path) else v,
)
def test_energy_adds_up_with_the_measured_modem_profiles(path, profile):
    """Every bundled scenario in timing mode with its devices on a modem profile fitted to
    a measured phone (rate-dependent tx/rx power, promotion, tail): device energy is
    still the sum of its parts, and the modem is charged for the bits it moved."""
    overrides = [*TIMING, *EXTRA.get(path.name, []), f"devices.compute_profile={profile}"]
    result = run(load_scenario(path, overrides), source=str(path))
    assert_energy_adds_up(result)
    radio = result.rounds[["device_tx_energy_j", "device_rx_energy_j"]].to_numpy().sum()
    moved = result.transfers["size_bits"].sum() if len(result.transfers) else 0.0
    assert (radio > 0) == (moved > 0)  # (a policy may pick no one: DVFS-less devices)
