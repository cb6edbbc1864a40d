"""DVFS compute (issue 51): a step of C CPU cycles at frequency f takes C / f seconds
and costs κ·C·f² joules (Tran et al., INFOCOM 2019, eqs. (5)-(6), with Yang et al.,
TWC 2021's κ: κ·c_k·D_k·f_k² per local iteration), checked by hand."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import simpy
import yaml

from netfl.compute import ComputeEngine, compute_profiles
from netfl.core.activity import Activities, DeviceCut
from netfl.core.records import Recorder
from netfl.errors import RegistrationError, ScenarioError
from netfl.loading.scenarios import parse_scenario
from netfl.scenario.registries import register_compute_profile
from netfl.sim.runner import run
from tests.conftest import make_node, tiny_scenario

KAPPA = 1e-28  # J/(cycle·Hz²), Yang et al.'s value
C_PER_SAMPLE = 2e4  # cycles/sample
F_MIN, F_MAX = 0.5e9, 2e9  # Hz
REL = 1e-12


def _dvfs_node(name: str = "ue0", **dvfs):
    """A Raspberry Pi 4 node with DVFS values (Yang et al.'s unless given)."""
    node = make_node(name)
    values = {
        "min_frequency_hz": F_MIN,
        "max_frequency_hz": F_MAX,
        "capacitance": KAPPA,
        "cycles_per_sample": C_PER_SAMPLE,
        **dvfs,
    }
    node.compute = replace(node.compute, **values)
    return node


def _one_step(engine, node, flops, samples=None):
    """Run one step to its end; its record and the time it ended."""
    out = []

    def job():
        out.append((yield engine.run(node, flops, "train", samples=samples)))

    engine.env.process(job())
    engine.env.run()
    return out[0]


@pytest.mark.parametrize("f", [F_MAX, 0.8e9])
def test_a_step_takes_c_d_over_f_and_costs_kappa_c_d_f_squared(f):
    env, recorder = simpy.Environment(), Recorder()
    engine = ComputeEngine(env, recorder)
    node = _dvfs_node()
    samples = 500.0
    if f != F_MAX:
        engine.set_frequency(node, f)
    assert engine.frequency_hz(node) == f
    rec = _one_step(engine, node, 1e12, samples)
    cycles = C_PER_SAMPLE * samples
    assert rec.cycles == pytest.approx(cycles, rel=REL)
    assert rec.frequency_hz == f
    assert rec.duration_s == pytest.approx(cycles / f, rel=REL)
    assert env.now == pytest.approx(cycles / f, rel=REL)
    assert rec.energy_j == pytest.approx(KAPPA * cycles * f**2, rel=REL)
    assert rec.flops == 1e12 and rec.outcome == "done"
    # the node's meter is charged what the record says
    assert node.energy.compute_j == rec.energy_j
    assert node.energy.compute_s == rec.duration_s
    # the expectations a resource policy reads are the same
    assert engine.step_time_s(node, 1e12, samples) == pytest.approx(cycles / f, rel=REL)
    assert engine.step_energy_j(node, 1e12, samples) == pytest.approx(
        KAPPA * cycles * f**2, rel=REL
    )
    assert engine.cycles(node, 1e12, samples) == pytest.approx(cycles, rel=REL)


def test_halving_f_doubles_time_and_quarters_energy():
    engine = ComputeEngine(simpy.Environment(), Recorder())
    node = _dvfs_node()
    t_hi, e_hi = (g(node, 0.0, 300.0, F_MAX) for g in (engine.step_time_s, engine.step_energy_j))
    t_lo, e_lo = (
        g(node, 0.0, 300.0, F_MAX / 2) for g in (engine.step_time_s, engine.step_energy_j)
    )
    assert t_lo == pytest.approx(2 * t_hi, rel=REL)
    assert e_lo == pytest.approx(e_hi / 4, rel=REL)


def test_derived_cycles_per_flop_makes_a_step_at_f_max_take_the_flops_time():
    """cycles_per_flop 0: f_max / effective_flops_per_s cycles per FLOP, so at f_max a
    step of F FLOPs (no samples, or no cycles_per_sample) takes F / effective_flops_per_s."""
    env = simpy.Environment()
    engine = ComputeEngine(env, Recorder())
    node = _dvfs_node(cycles_per_sample=0.0)
    flops = 7.5e9
    rate = node.compute.effective_flops_per_s
    assert node.compute.cycles_per_flop_resolved == F_MAX / rate
    rec = _one_step(engine, node, flops, samples=123.0)  # (no cycles_per_sample: ignored)
    assert rec.duration_s == pytest.approx(flops / rate, rel=REL)
    assert rec.cycles == pytest.approx(flops * F_MAX / rate, rel=REL)
    assert rec.energy_j == pytest.approx(KAPPA * rec.cycles * F_MAX**2, rel=REL)


def test_cycles_per_sample_counts_only_when_a_step_declares_its_samples():
    engine = ComputeEngine(simpy.Environment(), Recorder())
    node = _dvfs_node(cycles_per_flop=0.25)
    assert engine.cycles(node, 4e9, samples=10.0) == C_PER_SAMPLE * 10.0
    assert engine.cycles(node, 4e9) == 4e9 * 0.25  # (no samples: FLOPs × cycles_per_flop)
    assert engine.step_time_s(node, 4e9) == pytest.approx(1e9 / F_MAX, rel=REL)


def test_set_frequency_refuses_a_frequency_out_of_range_and_resets_with_none():
    engine = ComputeEngine(simpy.Environment(), Recorder())
    node = _dvfs_node()
    for bad in (F_MIN / 2, F_MAX * 1.01, 0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match=r"ue0: CPU frequency .* outside its range \[5e\+08"):
            engine.set_frequency(node, bad)
    with pytest.raises(ValueError, match="outside its range"):
        engine.step_time_s(node, 1e9, frequency_hz=F_MAX * 2)
    engine.set_frequency(node, F_MIN)
    assert engine.frequency_hz(node) == F_MIN
    engine.set_frequency(node, None)
    assert engine.frequency_hz(node) == F_MAX
    plain = make_node("ue1")
    with pytest.raises(ValueError, match="ue1: compute profile 'raspberry_pi_4' has no DVFS"):
        engine.set_frequency(plain, 1e9)
    engine.set_frequency(plain, None)  # (nothing to reset)
    assert math.isnan(engine.frequency_hz(plain))


def test_the_frequency_is_read_when_the_step_starts_after_its_wait_for_a_slot():
    """Two steps queue on one slot; f changes while the first runs: the first keeps its
    f to its end, the second (starting later) runs at the new one."""
    env = simpy.Environment()
    recorder = Recorder()
    engine = ComputeEngine(env, recorder)
    node = _dvfs_node()
    samples = 1000.0
    engine.run(node, 0.0, "a", samples=samples)
    engine.run(node, 0.0, "b", samples=samples)
    env.run(until=1e-3)
    engine.set_frequency(node, 1e9)
    env.run()
    a, b = recorder.computes
    t_a = C_PER_SAMPLE * samples / F_MAX
    assert (a.frequency_hz, b.frequency_hz) == (F_MAX, 1e9)
    assert a.end_s == pytest.approx(t_a, rel=REL) and b.start_s == a.end_s
    assert b.duration_s == pytest.approx(C_PER_SAMPLE * samples / 1e9, rel=REL)


def test_a_step_cut_midway_charges_the_cycles_done():
    env = simpy.Environment()
    recorder = Recorder()
    engine = ComputeEngine(env, recorder)
    engine.activities = Activities(env)
    node = _dvfs_node()
    f, samples, flops = 1e9, 500.0, 3e11
    engine.set_frequency(node, f)
    proc = engine.run(node, flops, "train", samples=samples)
    full = C_PER_SAMPLE * samples / f
    t_cut = 0.3 * full
    env.run(until=t_cut)
    engine.activities.cut(node, "left")
    with pytest.raises(DeviceCut):
        env.run(until=proc)
    (rec,) = recorder.computes
    assert rec.outcome == "left" and rec.end_s == t_cut
    assert rec.frequency_hz == f
    assert rec.cycles == pytest.approx(t_cut * f, rel=REL)
    assert rec.cycles == pytest.approx(0.3 * C_PER_SAMPLE * samples, rel=REL)
    assert rec.flops == pytest.approx(0.3 * flops, rel=REL)  # (in proportion to time)
    assert rec.energy_j == pytest.approx(KAPPA * rec.cycles * f**2, rel=REL)
    assert node.energy.compute_j == rec.energy_j and node.energy.compute_s == t_cut


def test_a_profile_without_dvfs_keeps_the_flops_model_exactly():
    """raspberry_pi_4: F / effective_flops_per_s seconds, busy power × that, whatever
    samples the step declares; frequency and cycles NaN."""
    env = simpy.Environment()
    engine = ComputeEngine(env, Recorder())
    node = make_node("ue0")
    p = node.compute
    assert not p.dvfs and math.isnan(p.cycles_per_flop_resolved)
    flops = 7.5e9
    rec = _one_step(engine, node, flops, samples=500.0)
    expected = flops / p.effective_flops_per_s
    assert env.now == expected and rec.duration_s == expected
    assert rec.energy_j == p.busy_power_w * expected
    assert node.energy.compute_j == rec.energy_j and node.energy.compute_s == expected
    assert math.isnan(rec.frequency_hz) and math.isnan(rec.cycles)
    assert engine.step_time_s(node, flops, 500.0) == expected
    assert engine.step_energy_j(node, flops, 500.0) == p.busy_power_w * expected
    assert math.isnan(engine.cycles(node, flops, 500.0))
    with pytest.raises(ValueError, match="has no DVFS"):
        engine.step_energy_j(node, flops, frequency_hz=1e9)


def test_yang2021_device_holds_their_simulation_values():
    p = compute_profiles()["yang2021_device"]
    assert p.dvfs
    assert (p.max_frequency_hz, p.capacitance, p.cycles_per_sample) == (2e9, 1e-28, 2e4)
    for key in ("max_frequency_hz", "min_frequency_hz", "capacitance", "cycles_per_sample"):
        assert p.sources.get(key), key
    # the others keep no DVFS
    assert not any(q.dvfs for n, q in compute_profiles().items() if n != "yang2021_device")


SCENARIO_YAML = """
devices:
  count: 2
  compute_overrides:
    min_frequency_hz: 5.0e8
    max_frequency_hz: 1.5e9
    capacitance: 1.0e-28
    cycles_per_sample: 2.0e4
training: {rounds: 1, local_epochs: 2}
"""


def test_a_scenario_turns_dvfs_on_with_compute_overrides_and_records_frequencies():
    data = tiny_scenario(**yaml.safe_load(SCENARIO_YAML))
    scenario = parse_scenario(data)
    result = run(scenario)
    c = result.computes
    assert {"frequency_hz", "cycles"} <= set(c.columns)
    train = c[c["kind"] == "train"]
    assert len(train) == 2
    assert (train["frequency_hz"] == 1.5e9).all()
    held = result.devices.set_index("node")["num_samples"]
    # FedAvg declares its samples: the device's samples × 2 local epochs
    expected = [C_PER_SAMPLE * held[n] * 2 for n in train["node"]]
    assert train["cycles"].tolist() == pytest.approx(expected, rel=REL)
    assert train["duration_s"].to_numpy() == pytest.approx(
        (train["cycles"] / 1.5e9).to_numpy(), rel=1e-9
    )
    assert train["energy_j"].to_numpy() == pytest.approx(
        (KAPPA * train["cycles"] * 1.5e9**2).to_numpy(), rel=REL
    )
    server = c[c["node"] == "bs"]
    assert len(server) and server["frequency_hz"].isna().all()  # (its FLOP/s profile)
    meters = result.devices.set_index("node")["compute_energy_j"]
    for node, energy in train.groupby("node")["energy_j"].sum().items():
        assert meters[node] == pytest.approx(energy, rel=REL)


@pytest.mark.parametrize(
    "overrides, key",
    [
        (
            {"min_frequency_hz": 3e9, "max_frequency_hz": 2e9, "capacitance": 1e-28},
            "min_frequency_hz",
        ),
        ({"max_frequency_hz": 2e9}, "capacitance"),
        ({"capacitance": 1e-28}, "capacitance"),
    ],
)
def test_a_bad_dvfs_override_is_one_line_naming_its_key(overrides, key):
    data = tiny_scenario(devices={"count": 2, "compute_overrides": overrides})
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data)
    (line,) = err.value.lines()
    assert "\n" not in line
    assert f"devices: compute_overrides.{key}: " in line, line
    assert "'raspberry_pi_4'" in line


def test_a_bad_dvfs_override_min_above_max_says_so():
    data = tiny_scenario(
        devices={
            "compute_profile": "yang2021_device",
            "compute_overrides": {"min_frequency_hz": 3e9},
        }
    )
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data)
    (line,) = err.value.lines()
    assert line.endswith(
        "devices: compute_overrides.min_frequency_hz: 3e+09 Hz exceeds max_frequency_hz "
        "2e+09 Hz (compute profile 'yang2021_device')"
    ), line


def test_a_negative_or_huge_dvfs_override_is_refused_by_the_schema():
    for value, word in ((-1.0, "greater than or equal"), (1e-10, "less than or equal")):
        data = tiny_scenario(devices={"compute_overrides": {"capacitance": value}})
        with pytest.raises(ScenarioError) as err:
            parse_scenario(data)
        (line,) = err.value.lines()
        assert "devices.compute_overrides.capacitance: " in line and word in line, line


def test_the_server_takes_dvfs_overrides_and_checks_them():
    ok = tiny_scenario(
        server={"compute_overrides": {"max_frequency_hz": 2.5e9, "capacitance": 1e-28}}
    )
    parse_scenario(ok)
    bad = tiny_scenario(server={"compute_overrides": {"max_frequency_hz": 2.5e9}})
    with pytest.raises(ScenarioError) as err:
        parse_scenario(bad)
    (line,) = err.value.lines()
    assert "server: compute_overrides.capacitance: must be > 0 with DVFS" in line, line


def test_registering_a_profile_with_min_above_max_is_refused():
    base = compute_profiles()["yang2021_device"]
    bad = replace(base, name="dvfs_test_bad", min_frequency_hz=3e9)
    with pytest.raises(RegistrationError, match="'dvfs_test_bad': min_frequency_hz 3e"):
        register_compute_profile(bad)
    assert "dvfs_test_bad" not in compute_profiles()
