"""The LTE downlink of the ``lte_20mhz`` family: resource-block groups (TS 36.213 Table
7.1.6.1-1, TS 38.214 Table 5.1.2.2.1-1) and ns-3 LENA's round robin over them, by hand
and on the carrier; the UE's CQI from ns-3's MI error model; the scheduler's pipeline
delay; downloads to a UE whose uplink is starved; and against the ns-3 LENA downlink
fixture (``tests/reference/ns3_lte_downlink.json``): the issue's bars on every run, the
same MCS as ns-3 for every UE, single UEs within ~1.5 %."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from channel_models.lte import (
    LteMiCqiEfficiency,
    bler_curve_db,
    dl_tbs_bits,
    mcs_from_cqi,
    mi_cqi_from_sinr_db,
)
from channel_models.profile_catalog import get_channel_profile
from channel_models.resource_groups import group_sizes, rbg_size, round_robin_group_rbs
from netfl import World, parse_scenario, run
from tests.conftest import tiny_scenario
from tests.radio.test_lte_uplink import FIXTURE_SETS, _scenario
from validation.ns3.compare import compare

FIXTURE = Path(__file__).resolve().parents[1] / "reference" / "ns3_lte_downlink.json"


@pytest.mark.parametrize(
    "num_rbs, size, groups, last",
    [(6, 1, 6, 1), (15, 2, 8, 1), (25, 2, 13, 1), (50, 3, 17, 2), (75, 4, 19, 3), (100, 4, 25, 4)],
)
def test_lte_rbg_sizes_by_hand(num_rbs, size, groups, last):
    """TS 36.213 Table 7.1.6.1-1 at the six LTE bandwidths: P, ⌈N/P⌉ groups, the last
    group's RBs, and the groups cover the carrier exactly."""
    assert rbg_size(num_rbs, "lte") == size
    sizes = group_sizes(num_rbs, size)
    assert sizes.size == groups and sizes[-1] == last and sizes.sum() == num_rbs
    assert (sizes[:-1] == size).all()


@pytest.mark.parametrize(
    "num_rbs, config1, config2", [(24, 2, 4), (36, 2, 4), (51, 4, 8), (106, 8, 16), (273, 16, 16)]
)
def test_nr_nominal_rbg_sizes_by_hand(num_rbs, config1, config2):
    """TS 38.214 Table 5.1.2.2.1-1, both configurations; outside the tables: one error."""
    assert rbg_size(num_rbs, "nr", 1) == config1
    assert rbg_size(num_rbs, "nr", 2) == config2
    with pytest.raises(ValueError, match="outside the NR RBG table"):
        rbg_size(276, "nr")
    with pytest.raises(ValueError, match="configuration"):
        rbg_size(50, "nr", 3)


@pytest.mark.parametrize(
    "n, groups_each, used_rbs", [(3, 8, 96), (8, 3, 96), (20, 1, 80), (25, 1, 100), (30, None, 100)]
)
def test_lena_round_robin_on_25_groups_by_hand(n, groups_each, used_rbs):
    """100 RBs in 25 groups of 4: each of n UEs holds ⌊25/n⌋ groups, the rest stays
    empty (96 % of the RBs with 3 or 8 UEs, 80 % with 20); with more UEs than groups
    every group carries one UE and they take turns (all 100 RBs, 100/n each)."""
    sizes = group_sizes(100, 4)
    per_ue = round_robin_group_rbs(sizes, n)
    assert per_ue * n == pytest.approx(used_rbs)
    if groups_each is not None:
        assert per_ue == 4 * groups_each


def test_round_robin_groups_with_a_short_last_group_and_a_budget():
    """50 RBs in 16 groups of 3 and one of 2: the short group is used only when every
    group is handed out; other traffic's RBs leave the whole groups that fit."""
    sizes = group_sizes(50, 3)
    assert round_robin_group_rbs(sizes, 8) == 6.0  # 16 groups of 3, the short one empty
    assert round_robin_group_rbs(sizes, 17) == pytest.approx(50 / 17)  # all 17 groups
    assert round_robin_group_rbs(sizes, 4, budget_rbs=20.0) == 3.0  # 6 whole groups → 1 each
    assert round_robin_group_rbs(sizes, 4, budget_rbs=2.0) == 0.5  # no whole group: shared
    assert round_robin_group_rbs(sizes, 0) == 0.0


def _downloads(n: int, allocation: str | None, scheduler: str = "round_robin"):
    """n equal downloads to UEs 100 m from the eNB (no fading): their durations [s]."""
    angles = 2 * np.pi * np.arange(n) / n
    positions = [[100 * np.cos(a), 100 * np.sin(a)] for a in angles]
    link = {"scheduler": scheduler}
    if allocation is not None:
        link["downlink_allocation"] = allocation
    result = run(_scenario(0, positions, {"download_bytes": 200_000}, **link))
    down = result.transfers[result.transfers["kind"] == "test_down"]
    return (down["end_s"] - down["start_s"]).to_numpy()


@pytest.mark.parametrize("n, used", [(1, 1.0), (8, 0.96), (20, 0.80)])
def test_lte_round_robin_downloads_hold_whole_groups(n, used):
    """``lte_20mhz`` (100 RBs, 25 groups): n equal downloads end together, and take
    1/used as long as with fractional RBs (the scheduler's 3 ms aside); the profile's
    default is LENA's rule, and proportional fair hands out every group."""
    delay = get_channel_profile("lte_20mhz").downlink_delay_s
    grouped = _downloads(n, None)
    fractional = _downloads(n, "fractional")
    assert np.ptp(grouped) < 1e-9 and np.ptp(fractional) < 1e-9
    assert (fractional[0] - delay) / (grouped[0] - delay) == pytest.approx(used, rel=1e-6)
    pf = _downloads(n, None, "proportional_fair")
    assert pf.max() == pytest.approx(fractional.max(), rel=1e-3)


def test_rbg_round_robin_is_a_profile_key_and_an_override():
    """The LTE profiles default to LENA's groups, the NR ones to fractional RBs; an
    override switches either way, and a bad configuration is one line naming the key."""
    assert get_channel_profile("lte_20mhz").downlink_allocation == "rbg_round_robin"
    assert get_channel_profile("nr_fr1_uma").downlink_allocation == "fractional"
    link = {
        "mode": "ofdma",
        "channel_profile": "nr_fr1_uma",
        "downlink_allocation": "rbg_round_robin",
    }
    s = parse_scenario(tiny_scenario(cell={"radius_m": 100, "link": link}))
    profile = s.cell.link.channel_profile_resolved()
    assert profile.rbg_size() == 16 and profile.rb_groups("downlink").sum() == profile.num_rbs
    assert profile.rb_groups("uplink") is None
    world = World(s)
    assert world.radio.carriers["downlink"].rb_groups is not None
    assert world.radio.carriers["uplink"].rb_groups is None
    from netfl.errors import UserError

    link["rbg_configuration"] = 3
    with pytest.raises(UserError, match="rbg_configuration"):
        parse_scenario(tiny_scenario(cell={"radius_m": 100, "link": link}))


def test_an_lte_download_waits_for_the_schedulers_pipeline():
    """``lte_20mhz``'s first downlink TB leaves ``downlink_delay_s`` = 3 ms after the
    transfer reaches the BS (ns-3 LENA's pipeline): a single download lasts exactly that
    much longer than with the delay set to 0, and holds RBs as long; a multicast too."""

    def download(delay):
        link = {"mode": "ofdma", "channel_profile": "lte_20mhz", "fading": "none"}
        if delay is not None:
            link["downlink_delay_s"] = delay
        s = parse_scenario(
            tiny_scenario(
                cell={"radius_m": 100, "link": link},
                devices={
                    "count": 2,
                    "layout": {"kind": "positions", "positions_m": [[80, 0], [0, 90]]},
                },
            )
        )
        world = World(s)
        radio, env = world.radio, world.env
        a, b = world.devices
        one = env.run(until=radio.transfer(world.bs, a, 4e6, "probe"))
        both = env.run(until=radio.broadcast(world.bs, [a, b], 4e6, "probe"))
        return one, both[0], s.cell.link.channel_profile_resolved().downlink_delay_s

    (one, multi, delay), (one0, multi0, none) = download(None), download(0.0)
    assert delay == 0.003 and none == 0.0
    for with_delay, without in ((one, one0), (multi, multi0)):
        assert with_delay.duration_s == pytest.approx(without.duration_s + 0.003, rel=1e-9)
        assert with_delay.airtime_s == pytest.approx(without.airtime_s, rel=1e-9)


def test_a_ue_whose_uplink_alone_is_starved_still_gets_downloads(caplog):
    """At 280 m on ``lte_20mhz`` without fading a UE's downlink SNR is ~16.6 dB but its
    uplink is below CQI 1 (ns-3 served it a download): the coverage table says which
    direction starved; a round needing both leaves it out and the log names the
    direction; a download test (``upload_bytes: 0``) reaches it."""

    def scenario(upload, download):  # (the ns-3 fixtures' cell: NS3_LAW)
        return _scenario(upload, [[100.0, 0.0], [280.0, 0.0]], {"download_bytes": download})

    with caplog.at_level(logging.WARNING):
        both = run(scenario(100_000, 400_000))
    cov = both.tables["coverage"].set_index("device")
    assert cov.loc["ue1", "uplink_starved"] and not cov.loc["ue1", "downlink_starved"]
    assert cov.loc["ue1", "starved"] and not cov.loc["ue0", "starved"]
    assert cov.loc["ue1", "downlink_snr_db"] > 10.0
    assert set(both.transfers["dst"]) | set(both.transfers["src"]) == {"bs", "ue0"}
    assert "ue1 (uplink)" in caplog.text
    down = run(scenario(0, 400_000)).transfers
    assert set(down["dst"]) == {"ue0", "ue1"} and set(down["kind"]) == {"test_down"}
    far = down.set_index("dst").loc["ue1"]
    assert far["end_s"] > far["start_s"] and far["outcome"] == "delivered"


def test_netfl_list_says_how_each_profile_allocates_the_downlink(capsys):
    from netfl.cli import main

    assert main(["list", "channel-profiles"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert "in groups of 4 RBs (ns-3 LENA's round robin)" in lines["lte_20mhz"]
    assert "in groups of 3 RBs" in lines["lte_10mhz"]
    assert "downlink fractional RBs" in lines["nr_fr1_uma"]


def test_the_ues_cqi_follows_ns3s_mi_error_model_thresholds():
    """The CQI steps at each threshold ns-3 reported (not a step before), and the
    downlink efficiency is the CQI's MCS's TBS·(1 − BLER) on 100 PRBs per TTI, the SINR
    read on the 0.01-dB grid at or below it; below CQI 1: nothing (not scheduled)."""
    data = json.loads(
        (Path(__file__).resolve().parents[2] / "channel_models/data/lte_bler_ns3.json").read_text()
    )
    thresholds = data["downlink_cqi"]["thresholds_db"]
    assert len(thresholds) == 15 and thresholds == sorted(thresholds)
    for c, t in enumerate(thresholds, start=1):
        assert mi_cqi_from_sinr_db([t - 0.005, t])[0] == c - 1
        assert mi_cqi_from_sinr_db([t])[0] == c
    eff = LteMiCqiEfficiency(100)
    for db in (-7.0, 0.0, 9.876, 16.6, 25.0):
        grid_db = np.floor(round((db + 12.0) / 0.01, 6)) * 0.01 - 12.0
        cqi = int(mi_cqi_from_sinr_db([grid_db])[0])
        got = float(eff(np.array([10 ** (db / 10)]))[0])
        if cqi == 0:
            assert got == 0.0
            continue
        mcs = int(mcs_from_cqi(cqi))
        bler = float(bler_curve_db("downlink", 100, mcs, [grid_db])[0])
        expected = dl_tbs_bits(mcs, 100) * (1 - bler) / (100 * 180e3 * 1e-3)
        assert got == pytest.approx(expected, rel=1e-9), db


@pytest.fixture(scope="module")
def ns3_downlink_rows() -> dict[tuple, list[dict]]:
    fixture = json.loads(FIXTURE.read_text())
    return {key: compare(fixture, key[0], None, key[1], key[2]) for key in FIXTURE_SETS}


@pytest.mark.parametrize("key", FIXTURE_SETS, ids=lambda k: "-".join(map(str, k)))
def test_against_ns3_downlink_the_issue_bars_hold(ns3_downlink_rows, key):
    """Every run of the downlink fixture (1, 2, 5, 10, 20 UEs from 30 to 300 m, RR and
    PF): median |netfl/ns-3 − 1| ≤ 10 %, every UE within ±25 %, the same UEs served (all:
    the 280-m UE whose uplink is starved gets its download on both sides)."""
    rows = ns3_downlink_rows[key]
    assert len(rows) == 42  # 1+1+1 + 5+10+20 + 2+2 UEs
    for r in rows:
        assert r["netfl_s"] is not None and r["ns3_s"] is not None, r
    dev = np.array([abs(r["netfl_s"] / r["ns3_s"] - 1) for r in rows])
    assert np.median(dev) <= 0.10
    assert dev.max() <= 0.25


def test_against_ns3_downlink_single_ues_within_1_5_percent(ns3_downlink_rows):
    singles = [
        r for r in ns3_downlink_rows[("rr", 796_840, 1000)] if r["geometry"].startswith("single")
    ]
    assert len(singles) == 3
    for r in singles:
        assert r["netfl_s"] / r["ns3_s"] == pytest.approx(1.0, abs=0.015), r


def test_every_ue_gets_ns3s_downlink_mcs():
    """For every UE of the fixture, the MCS netfl's downlink link adaptation picks at its
    mean SNR is the one ns-3's eNB sent it most (28 near the eNB, 22 at 280–300 m)."""
    fixture = json.loads(FIXTURE.read_text())
    profile = get_channel_profile("lte_20mhz")
    checked = set()
    for spec in fixture["runs"]:
        for ue in spec["ues"]:
            key = (ue["x_m"], ue["y_m"])
            if key in checked:
                continue
            checked.add(key)
            s = _scenario(0, [[ue["x_m"], ue["y_m"]]], {"download_bytes": 1000})
            world = World(s)
            snr = world.radio.mean_snr(world.bs, world.all_devices[0])
            mcs = int(mcs_from_cqi(mi_cqi_from_sinr_db([10 * np.log10(snr)])[0]))
            assert mcs == ue["mode_mcs"], (ue["distance_m"], mcs, ue["mode_mcs"])
    assert len(checked) >= 30 and profile.efficiency["downlink_cqi"] == "mi_error_model"
