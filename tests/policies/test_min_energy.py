"""``min_energy`` (Yang et al., TWC 2021): the least device energy of a round that must
end by its deadline, against a brute-force grid on two devices (within 1 %), its
deadline met in the run, its energies the ones netfl then charges, and against equal
shares."""

from __future__ import annotations

import math

import numpy as np
import pytest

from netfl.algorithms.fedavg import FedAvg
from netfl.loading.scenarios import algorithm_config, parse_scenario
from netfl.sim.runner import run
from netfl.sim.world import World
from tests.conftest import tiny_scenario

DEADLINE_S = 0.6


def _scenario(policy: dict, deadline_s: float = DEADLINE_S):
    groups = [
        {"count": 1, "compute_profile": "yang2021_device"},
        {"count": 1, "compute_profile": "yang2021_device"},
    ]
    return parse_scenario(
        tiny_scenario(
            cell={
                "link": {
                    "mode": "ofdma",
                    "channel_profile": "feddif",
                    "fading": "none",
                    "cqi_sinr": "allocation",  # (Yang et al.'s r = b·log2(1 + g·p/(N0·b)))
                }
            },
            devices={"count": 2, "groups": groups},
            algorithm={"name": "fedavg", "deadline_s": deadline_s},
            training={"rounds": 1, "batch_size": 16},
            policy=policy,
        ),
        "s.yaml",
    )


def _brute(world, work, budget_s):
    """min over b1 (b2 = 1 − b1), p1, p2 of Σ κ·c·f² + P_el(p)·s/r(b, p) with f the least
    frequency meeting the budget — on grids, with formulas written here."""
    states = world.states
    p_max = world.radio.profile.ue_tx_power_w
    powers = np.geomspace(p_max * 1e-3, p_max, 160)

    def least(d, b):
        c = d.compute
        cycles = c.cycles_per_sample * work.train_samples(d)
        s = work.upload_bits(d)
        best = math.inf
        for p in powers:
            up = s / states.expected_rate_bps(d, "uplink", b, float(p))
            if up >= budget_s:
                continue
            f = max(cycles / (budget_s - up), 1e-9 * c.max_frequency_hz)
            if f > c.max_frequency_hz:
                continue
            best = min(
                best, c.capacitance * cycles * f * f + (c.tx_power_w + c.tx_power_per_w * p) * up
            )
        return best

    a, b = world.devices
    shares = np.linspace(0.005, 0.995, 199)
    return min(least(a, s) + least(b, 1 - s) for s in shares)


def test_min_energy_is_the_brute_force_optimum_on_two_devices():
    scenario = _scenario({"name": "min_energy"})
    world = World(scenario)
    algorithm = FedAvg(world, algorithm_config(scenario))
    work = algorithm.round_work()
    from netfl.policies.resource_policy import download_time_s

    budget = DEADLINE_S - download_time_s(world.states, world.devices, work)
    decision = world.policy.policy.decide(0, world.devices, 2, work)
    assert len(decision.participants) == 2
    total = 0.0
    for d in world.devices:
        a = decision.allocation(d)
        c = d.compute
        cycles = c.cycles_per_sample * work.train_samples(d)
        up = work.upload_bits(d) / world.states.expected_rate_bps(d, "uplink", a.share, a.power_w)
        assert cycles / a.frequency_hz + up <= budget * (1 + 1e-9)  # (the deadline holds)
        total += (
            c.capacitance * cycles * a.frequency_hz**2
            + (c.tx_power_w + c.tx_power_per_w * a.power_w) * up
        )
    assert sum(decision.allocation(d).share for d in world.devices) == pytest.approx(1.0)
    brute = _brute(world, work, budget)
    assert total == pytest.approx(brute, rel=0.01)
    world.close()


def test_the_run_meets_the_deadline_and_spends_what_the_policy_expected():
    result = run(_scenario({"name": "min_energy"}), "s.yaml")
    table = result.tables["policy"]
    assert (table["outcome"] == "arrived").all()
    assert (table["actual_time_s"] <= DEADLINE_S).all()
    assert (result.rounds["clients_late"] == 0).all()
    computes = result.computes[result.computes.kind == "train"].set_index("node")
    for row in table.itertuples():
        assert computes.loc[row.device, "frequency_hz"] == pytest.approx(row.frequency_hz)
    up = result.transfers[result.transfers.kind == "model_up"].set_index("src")
    for row in table.itertuples():  # (the modem charged at the granted transmit power)
        assert up.loc[row.device, "tx_energy_j"] == pytest.approx(
            row.power_w * up.loc[row.device, "airtime_s"], rel=1e-9
        )


def test_optimal_shares_spend_no_more_than_equal_shares():
    """At the same deadline, the optimised shares' device energy is at most the equal
    shares' (each with its best powers and frequencies) — Yang et al.'s comparison."""

    def energy(policy):
        r = run(_scenario(policy, deadline_s=0.5), "s.yaml").rounds
        return float(r["device_compute_energy_j"].sum() + r["device_tx_energy_j"].sum())

    optimal = energy({"name": "min_energy"})
    equal = energy({"name": "min_energy", "options": {"equal_shares": True}})
    assert optimal <= equal * (1 + 1e-6)


def test_slack_plans_to_a_share_of_the_deadline():
    """With ``slack`` 0.25 every participant is planned, and arrives, within 0.75 of the
    deadline (no fading: the expected rates are the rates)."""
    result = run(_scenario({"name": "min_energy", "options": {"slack": 0.25}}), "s.yaml")
    table = result.tables["policy"]
    assert (table["outcome"] == "arrived").all()
    assert (table["expected_time_s"] <= 0.75 * DEADLINE_S * (1 + 1e-9)).all()
    assert (table["actual_time_s"] <= 0.75 * DEADLINE_S * (1 + 1e-6)).all()


def test_on_dedicated_links_it_sets_shares_and_frequencies_and_drops_one_too_many():
    """Four like devices on dedicated 4G links (upload S/(b·R), no transmit power): a
    deadline of 19 ms leaves each ~14 ms for an upload of 4.2 ms at the whole link, so
    each needs b ≈ 0.29 — three fit, four do not; the one needing the most goes, and the
    three that stay arrive in time with shares adding up to 1 and no power set."""
    data = tiny_scenario(
        cell={"link": {"mode": "fixed_rate"}},
        devices={"count": 4, "compute_profile": "yang2021_device", "link_profile": "4g_lte"},
        algorithm={"name": "fedavg", "deadline_s": 0.019},
        training={"rounds": 1},
        policy={"name": "min_energy"},
    )
    result = run(parse_scenario(data, "s.yaml"), "s.yaml")
    table = result.tables["policy"]
    chosen = table[table.selected]
    assert len(chosen) == 3 and chosen["power_w"].isna().all()
    assert chosen["share"].sum() == pytest.approx(1.0)
    assert (chosen["outcome"] == "arrived").all()
    assert (chosen["actual_time_s"] <= 0.019 * (1 + 1e-9)).all()
    up = result.transfers[result.transfers.kind == "model_up"].set_index("src")
    for row in chosen.itertuples():  # (a dedicated link at b·R)
        assert up.loc[row.device, "duration_s"] == pytest.approx(
            up.loc[row.device, "size_bits"] / (row.share * 5e6), rel=1e-9
        )
