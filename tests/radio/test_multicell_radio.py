"""Multi-cell networks at run time (issue 23): the one-cell limit, SINR by hand,
RSRP association, the backhaul hop, and bad input."""

from __future__ import annotations

import math
from contextlib import nullcontext

import numpy as np
import pandas as pd
import pytest
import yaml

from channel_models.units import dbm_to_w
from netfl.errors import ScenarioError
from netfl.loading.scenarios import parse_scenario
from netfl.sim.runner import run
from netfl.sim.world import World
from tests.conftest import tiny_scenario

UMA_CELL = {
    "radius_m": 300,
    "redrop_every_round": True,
    "link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"},
    "cues": {
        "density_per_km2": 100,
        "session_rate_per_s": 0.1,
        "mean_session_s": 5,
        "demand_rbs": 4,
    },
}
#: deterministic path loss: log-distance, no shadowing, no LOS draw
PLAIN_CELL = {
    "radius_m": 400,
    "link": {
        "mode": "ofdma",
        "channel_profile": "nr_fr1_uma",
        "pathloss": {"model": "log_distance", "beta0_db": -35.0, "kappa": 3.5},
        "shadowing": False,
    },
}
TWO_SITES = {
    "site_positions_m": [[0.0, 0.0], [500.0, 0.0]],
    "sectors": 1,
    "antenna": "omni",
    "interference": {"model": "load_factor", "load": 0.5},
}


def _scenario(**sections):
    return parse_scenario(tiny_scenario(**sections))


def test_one_cell_network_is_the_single_cell_event_for_event():
    base = {"cell": UMA_CELL, "devices": {"count": 8}, "seed": 4, "training": {"rounds": 3}}
    a = run(_scenario(**base))
    one_cell = {
        "site_positions_m": [[0, 0]],
        "sectors": 1,
        "antenna": "omni",
        "interference": {"model": "none"},
    }
    b = run(_scenario(**base, network=one_cell))
    assert len(a.transfers) > 20 and not (a.transfers["direction"] == "backhaul").any()
    pd.testing.assert_frame_equal(a.transfers, b.transfers)
    pd.testing.assert_frame_equal(a.rounds, b.rounds)
    pd.testing.assert_frame_equal(a.tables["coverage"], b.tables["coverage"].drop(columns="cell"))


def _two_cell_world(positions):
    s = _scenario(
        cell=PLAIN_CELL,
        network=TWO_SITES,
        devices={
            "count": len(positions),
            "layout": {"kind": "positions", "positions_m": positions},
        },
    )
    return World(s)


def test_two_cells_downlink_and_uplink_sinr_by_hand():
    world = _two_cell_world([[100.0, 0.0], [420.0, 0.0]])
    radio = world.radio
    p = world.channel
    a, b = world.all_devices
    assert radio.serving == {"ue0": 0, "ue1": 1}

    def loss_db(d2):  # (the log-distance law's antennas stand at 0 m: 2-D distances)
        return 35.0 + 35.0 * math.log10(d2)

    eta = 0.5
    # downlink of ue0 from cell 0, cell 1 interfering at load η
    snr = [p.bs_tx_power_w * 10 ** (-loss_db(d) / 10) / p.noise_w("ue") for d in (100.0, 400.0)]
    expected_dl = snr[0] / (1.0 + eta * snr[1])
    got_dl = radio.cells[0].link_now(radio.cell_nodes[0], a)[1]
    assert got_dl == pytest.approx(expected_dl, rel=1e-12)
    # uplink at cell 0: ue1 (cell 1's only UE) on every RB with its per-RB power
    pc = p.uplink_power_control
    n_rb = radio.cells[1].carriers["uplink"].num_rbs
    own = loss_db(80.0)
    psd = dbm_to_w(pc["p0_dbm"] + 10 * math.log10(2.0**p.numerology) + pc["alpha"] * own)
    p_rb = min(p.ue_tx_power_w / n_rb, psd)
    inr = eta * p_rb * 10 ** (-loss_db(420.0) / 10) / p.noise_w("bs", p.rb_bandwidth_hz)
    _, psd0, total0 = radio.cells[0].link_at_positions(a, radio.cell_nodes[0])
    _, psd_i, total_i = radio.cells[0].link_now(a, radio.cell_nodes[0])
    assert psd_i == pytest.approx(psd0 / (1 + inr), rel=1e-12)
    assert total_i == pytest.approx(total0 / (1 + inr), rel=1e-12)
    # no interference: the SNR
    world0 = World(
        _scenario(
            cell=PLAIN_CELL,
            network={**TWO_SITES, "interference": {"model": "none"}},
            devices={
                "count": 2,
                "layout": {"kind": "positions", "positions_m": [[100.0, 0.0], [420.0, 0.0]]},
            },
        )
    )
    assert world0.radio.cells[0].link_now(world0.radio.cell_nodes[0], world0.all_devices[0])[
        1
    ] == pytest.approx(snr[0], rel=1e-12)


def test_association_is_the_highest_rsrp_cell():
    s = _scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        network={"sites": 7, "sectors": 3, "isd_m": 500},
        devices={"count": 40},
        seed=11,
    )
    world = World(s)
    radio = world.radio
    loss = radio.coupling_loss_db(world.all_devices)
    assert loss.shape == (40, 21)
    assert [radio.serving[d.name] for d in world.all_devices] == list(np.argmin(loss, axis=1))
    # a device straight along sector k's boresight, 150 m from the centre site, without
    # shadowing: sector k of site 0
    s2 = _scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma", "shadowing": False}},
        network={"sites": 7, "sectors": 3, "isd_m": 500},
        devices={
            "count": 3,
            "layout": {
                "kind": "positions",
                "positions_m": [
                    [150 * math.cos(math.radians(a)), 150 * math.sin(math.radians(a))]
                    for a in (30.0, 150.0, 270.0)
                ],
            },
        },
    )
    assert World(s2).radio.serving == {"ue0": 0, "ue1": 1, "ue2": 2}


def test_co_sited_sectors_share_a_links_los_state_shadowing_and_rays():
    """TR 38.901: large-scale parameters (LOS state, shadowing) and the rays belong to
    the link to a site; its sectors differ only in their antenna gain."""
    s = _scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        network={"sites": 7, "sectors": 3, "isd_m": 500, "indoor_fraction": 0.5},
        devices={"count": 30},
        seed=5,
    )
    world = World(s)
    radio = world.radio
    ues = world.all_devices
    loss = radio.coupling_loss_db(ues)
    gains = np.stack([radio.geometry.antenna_gains_db(ues, c) for c in radio.cells], axis=1)
    budget = (loss + gains).reshape(len(ues), 7, 3)  # path loss + shadowing + O2I per site
    np.testing.assert_allclose(budget, np.repeat(budget[:, :, :1], 3, axis=2), atol=1e-9)
    assert np.ptp(budget[:, :, 0], axis=1).min() > 0.0  # sites differ
    # a link's rays: its own generator (the same in any evaluation order), per site
    los = np.array([False])
    one = radio.geometry.link_rays(ues[3:4], 2, los, np.zeros(1))
    again = radio.geometry.link_rays(ues[:5], 2, np.zeros(5, bool), np.zeros(5))
    np.testing.assert_array_equal(one.azimuth_deg[0], again.azimuth_deg[3, : one.weight.shape[1]])
    other = radio.geometry.link_rays(ues[3:4], 3, los, np.zeros(1))
    assert not np.array_equal(one.azimuth_deg, other.azimuth_deg)
    # gains in any order: the third device's alone equal its gain among all
    fresh = World(s).radio
    alone = fresh.geometry.antenna_gains_db(ues[2:3], fresh.cells[4])
    assert alone[0] == pytest.approx(gains[2, 4], abs=1e-12)


def test_a_moving_devices_a3_measurement_is_its_link_budgets_coupling_loss():
    """The RSRP the A3 rule compares along a path (its rays in the field's LOS state at
    each point) is the coupling loss the association and the link budget use there."""
    s = _scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        network={"sites": 7, "sectors": 3, "isd_m": 500, "indoor_fraction": 0.5},
        devices={"count": 12, "mobility": {"model": "random_waypoint", "v_max_kmh": 50}},
        seed=8,
    )
    world = World(s)
    radio = world.radio
    ues = world.all_devices
    along = np.stack([radio.geometry.coupling_along(u, u.position_m[None, :])[0] for u in ues])
    np.testing.assert_allclose(along, radio.coupling_loss_db(ues), atol=1e-9)
    assert [radio.serving[u.name] for u in ues] == list(np.argmin(along, axis=1))


def test_backhaul_hop_is_a_timed_transfer_with_its_latency():
    s = _scenario(
        cell=PLAIN_CELL,
        network={
            **TWO_SITES,
            "server_site": "cloud",
            "backhaul": {"capacity_mbps": 100, "latency_ms": 7},
        },
        devices={
            "count": 2,
            "layout": {"kind": "positions", "positions_m": [[100.0, 0.0], [420.0, 0.0]]},
        },
        training={"rounds": 1},
    )
    result = run(s)
    t = result.transfers
    bh = t[t["direction"] == "backhaul"]
    air = t[t["direction"] != "backhaul"]
    # every access transfer has one backhaul copy of its bits, same kind, same round
    assert len(bh) == len(air) == 4
    assert sorted(bh["size_bits"]) == sorted(air["size_bits"])
    # downlink: backhaul first, then the air; uplink: the air, then the backhaul
    for _, hop in bh.iterrows():
        size = hop["size_bits"]
        # the two sites' links are separate: each hop alone on its own link
        assert hop["end_s"] - hop["start_s"] == pytest.approx(size / 100e6 + 0.007, rel=1e-9)
    down = air[air["direction"] == "downlink"]
    for _, tr in down.iterrows():
        cell = tr["src"]
        hop = bh[(bh["dst"] == cell) & (bh["kind"] == tr["kind"])]
        assert hop["end_s"].iloc[0] == pytest.approx(tr["start_s"])
    assert result.rounds["backhaul_bits"].iloc[0] == bh["size_bits"].sum()
    assert result.rounds["models_sent"].iloc[0] == air["num_models"].sum()
    assert result.rounds["models_backhaul"].iloc[0] == bh["num_models"].sum()
    # the server at site 0: only cell 1's device crosses a backhaul
    s0 = s.model_copy(deep=True)
    s0.network.server_site = 0
    t0 = run(s0).transfers
    assert set(t0.loc[t0["direction"] == "backhaul", "dst"]) | set(
        t0.loc[t0["direction"] == "backhaul", "src"]
    ) == {"bs", "cell1"}


def test_multicast_sends_one_backhaul_copy_per_cell():
    s = _scenario(
        cell=PLAIN_CELL,
        network={**TWO_SITES, "server_site": "cloud"},
        devices={
            "count": 4,
            "layout": {
                "kind": "positions",
                "positions_m": [[100.0, 0.0], [-100.0, 0.0], [420.0, 0.0], [600.0, 50.0]],
            },
        },
        algorithm={"name": "fedavg", "downlink": "multicast"},
        training={"rounds": 1},
    )
    t = run(s).transfers
    down = t[(t["kind"] == "model_down")]
    assert (down["direction"] == "backhaul").sum() == 2
    air = down[down["direction"] == "downlink"]
    assert len(air) == 4 and air["multicast_group"].nunique() == 2


@pytest.mark.parametrize(
    ("network", "extra", "message"),
    [
        ({"site_positions_m": [[0, 0], [3, 4]], "sectors": 1, "antenna": "omni"}, {}, "overlap"),
        ({"sites": 7, "server_site": 9}, {}, "server_site: 9"),
        ({"sites": 7, "sectors": 3, "antenna": "omni"}, {}, "omni with sectors: 3"),
        ({"site_positions_m": [[0, 0]], "wrap_around": True, "sectors": 1}, {}, "wrap-around"),
        (
            {"sites": 7, "isd_m": 500},
            {"devices": {"count": 1, "layout": {"kind": "positions", "positions_m": [[2000, 0]]}}},
            "outside every cell",
        ),
        (
            {"sites": 7},
            {"devices": {"count": 2, "layout": {"kind": "annulus", "inner_m": 10}}},
            "drawn around one BS",
        ),
        ({"sites": 7}, {"cell": {"link": {"mode": "fixed_rate"}}}, "needs cell.link.mode: ofdma"),
    ],
)
def test_bad_network_input_is_a_one_line_error(network, extra, message):
    sections = {"cell": {"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}}, **extra}
    with pytest.raises(ScenarioError) as err:
        _scenario(network=network, **sections)
    text = str(err.value)
    assert message in text, text
    assert "\n" not in text.strip()


def test_indoor_devices_get_tr38901_floors_and_their_o2i_loss():
    from scipy import stats

    s = _scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma", "shadowing": False}},
        network={"sites": 7, "sectors": 3, "indoor_fraction": 0.8},
        devices={"count": 300},
        seed=5,
    )
    world = World(s)
    devs = world.all_devices
    indoor = np.array([d.o2i_loss_db > 0 for d in devs])
    assert stats.binomtest(int(indoor.sum()), len(devs), 0.8).pvalue > 1e-3
    heights = np.array([d.height_m for d in devs])
    floors = (heights[indoor] - 1.5) / 3.0
    assert np.allclose(floors, np.round(floors)) and floors.min() >= 0 and floors.max() <= 7
    assert np.isnan(heights[~indoor]).all()  # outdoors: the law's UE height
    # the O2I loss rides on the coupling loss: the same UE outdoors loses exactly that
    # less, once the antenna gain is set aside (an indoor link takes the O2I angular
    # parameters: no direct path, the O2I azimuth spread)
    inside = np.array([d.o2i_inside_m for d in devs])
    assert (inside[~indoor] == 0).all() and (inside[indoor] > 0).all()
    assert inside.max() <= 25.0  # min(U(0, 25), U(0, 25)) m inside (Table 7.8-1)
    d = devs[int(np.argmax(indoor))]
    cell = world.radio.cells[world.radio.serving[d.name]]
    d.o2i_inside_m = 0.0  # (the LOS state at the whole distance in both: compare losses)
    with_o2i = cell.link_loss_matrix_db([cell.node], [d])[0, 0]
    g_in = world.radio.geometry.antenna_gains_db([d], cell)[0]
    o2i, d.o2i_loss_db = d.o2i_loss_db, 0.0
    without = cell.link_loss_matrix_db([cell.node], [d])[0, 0]
    g_out = world.radio.geometry.antenna_gains_db([d], cell)[0]
    assert (with_o2i + g_in) - (without + g_out) == pytest.approx(o2i)
    assert g_in != g_out
    # re-drops draw new indoor states
    before = [x.o2i_loss_db for x in devs]
    world.redrop(1)
    assert [x.o2i_loss_db for x in devs] != before


def test_activity_interference_rerates_a_flow_while_the_other_cell_transmits():
    """Cell 1's downlink is busy only during [t1, t2]: ue0's downlink flow in cell 0 runs
    at its SNR, then at SNR/(1 + η1·SNR1), then at its SNR again (no fading: exact)."""
    # (no fading, and the CQI-table link model: no HARQ tail after the bits)
    cell = {
        **PLAIN_CELL,
        "link": {**PLAIN_CELL["link"], "fading": "none", "link_abstraction": "gap"},
    }
    s = _scenario(
        cell=cell,
        network={**TWO_SITES, "interference": {"model": "activity"}},
        devices={
            "count": 2,
            "layout": {"kind": "positions", "positions_m": [[150.0, 0.0], [380.0, 0.0]]},
        },
    )
    world = World(s)
    radio, env = world.radio, world.env
    a, b = world.all_devices
    c0, c1 = radio.cells
    carrier = c0.carriers["downlink"]
    snr = [
        c0.snr_terms(c.link_loss_matrix_db([c.node], [a])[0, 0], True, False)[0] for c in (c0, c1)
    ]
    rate = {  # bit/s of the whole carrier at a per-RB SNR
        k: float(carrier.efficiency(np.array([v]))[0])
        * carrier.rb_bandwidth_hz
        * carrier.num_rbs
        * carrier.time_fraction
        for k, v in (("alone", snr[0]), ("interfered", snr[0] / (1.0 + snr[1])))
    }
    assert rate["interfered"] < rate["alone"]
    size_a, t1 = 40e6, 0.05
    bits_b = 20e6

    def other():
        yield env.timeout(t1)
        rec = yield radio.transfer(radio.cell_nodes[1], b, bits_b, "probe")
        return rec

    pa = radio.transfer(radio.cell_nodes[0], a, size_a, "probe")
    pb = env.process(other())
    env.run(until=pa)
    env.run(until=pb)
    rec_a, rec_b = pa.value, pb.value
    t2 = rec_b.end_s
    assert t1 < t2 < rec_a.end_s
    # while cell 1 transmits alone on its carrier (all RBs: η1 = 1) ue0 is interfered
    left = size_a - rate["alone"] * t1 - rate["interfered"] * (t2 - t1)
    assert rec_a.end_s == pytest.approx(t2 + left / rate["alone"], rel=1e-9)
    assert radio.interference.eta["downlink"][1] == 0.0  # idle again


def test_a_network_run_writes_its_tables_and_figures(tmp_path):
    from netfl import read_run, write_run

    s = _scenario(
        cell={
            "link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"},
            "cues": {"density_per_km2": 20},
        },
        network={"sites": 7, "sectors": 3},
        devices={"count": 12},
        outputs={"figures": True, "progress": False},
    )
    out = write_run(run(s), tmp_path / "run")
    assert {"network_map.png", "rb_occupancy.png"} <= {p.name for p in (out / "figures").iterdir()}
    back = read_run(out)
    cells = back.tables["cells"]
    assert len(cells) == 21 and cells["devices"].sum() == 12
    assert set(back.tables["coverage"]["cell"]) <= set(range(21))


def _driving_ue(cell, network, x0, v, interruption_s, sample_s, **device):
    """One UE driving at ``v`` m/s from x = ``x0`` towards site 1 of ``TWO_SITES``; the
    A3 rule at 3 dB, TTT 160 ms, unfiltered (the filter is tested on its own);
    ``device``: more keys of its ``devices`` section."""
    return _scenario(
        cell=cell,
        network={
            **TWO_SITES,
            **network,
            "handover": {
                "hysteresis_db": 3.0,
                "ttt_s": 0.16,
                "interruption_ms": interruption_s * 1e3,
                "sample_ms": sample_s * 1e3,
                "filter_k": 0,
            },
        },
        devices={
            "count": 1,
            "layout": {"kind": "positions", "positions_m": [[x0, 0.0]]},
            "mobility": {"model": "constant_velocity", "speed_kmh": v * 3.6, "heading_deg": 0},
            **device,
        },
    )


def test_a_device_crossing_the_border_hands_over_when_a3_says():
    """Two omni sites 500 m apart, deterministic log-distance loss: a device at 72 km/h
    from x = 100 m towards site 1 enters A3 where d0/d1 = 10^(H/35) and hands over TTT
    later (to the 10 ms measurement grid); a transfer started within the interruption
    waits for its end."""
    hyst, ttt, v, x0 = 3.0, 0.16, 20.0, 100.0
    s = _driving_ue(PLAIN_CELL, {}, x0, v, 0.05, 0.01)
    world = World(s)
    radio, env = world.radio, world.env
    (ue,) = world.all_devices
    assert radio.serving["ue0"] == 0
    q = 10 ** (hyst / 35.0)
    expected = (500.0 * q / (1.0 + q) - x0) / v + ttt
    env.run(until=expected - 1.0)
    world.move([ue])
    assert radio.handover.handovers == []  # (not yet: the time-to-trigger carries over calls)
    env.run(until=expected + 0.02)
    world.move([ue])
    assert ue.position_m == pytest.approx([x0 + v * env.now, 0.0])
    ((when, name, src, dst),) = radio.handover.handovers
    assert (name, src, dst) == ("ue0", 0, 1) and abs(when - expected) <= 0.011
    assert radio.serving["ue0"] == 1
    # a transfer asked for within the interruption starts when it ends, on the new cell
    rec = env.run(until=radio.transfer(radio.cell_nodes[1], ue, 1e5, "probe"))
    assert rec.start_s == pytest.approx(when + 0.05) and rec.src == "cell1"
    assert list(world.radio.tables()["handovers"]["to_cell"]) == [1]


def test_moving_devices_keep_a_spatially_consistent_loss():
    s = _scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        network={"sites": 7, "sectors": 3},
        devices={"count": 1, "mobility": {"model": "constant_velocity", "speed_kmh": 3.6}},
        seed=2,
    )
    world = World(s)
    (ue,) = world.all_devices
    cell = world.radio.cell_of(ue)
    losses = []
    for t in np.arange(0.0, 5.0, 0.5):  # 1 m/s: 0.5 m steps, far below the 50 m correlation
        world.env.run(until=t + 1e-9)
        world.move([ue])
        losses.append(cell.link_loss_matrix_db([cell.node], [ue])[0, 0])
    # the shadowing moves with the position (an independent draw per position would jump
    # by ~σ√2 ≈ 10 dB; over 0.5 m of a 50 m exponential correlation the change is ~0.14σ)
    assert np.median(np.abs(np.diff(losses))) < 1.5 and np.abs(np.diff(losses)).max() < 4.0


@pytest.mark.parametrize(
    ("mobility", "message"),
    [
        ({"model": "constant_velocity", "speed_kmh": 700}, "absurd"),
        ({"model": "constant_velocity", "speed_kmh": -5}, "negative"),
        ({"model": "random_waypoint", "v_min_kmh": 9, "v_max_kmh": 5}, "v_min_kmh"),
    ],
)
def test_bad_mobility_is_a_one_line_error(mobility, message):
    with pytest.raises(ScenarioError) as err:
        _scenario(
            cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
            devices={"count": 2, "mobility": mobility},
        )
    assert message in str(err.value) and "devices.mobility" in str(err.value)


def test_moving_devices_on_a_fixed_rate_link_name_the_key_that_moves_them():
    """The refusal names the mobility that makes devices move: a group's, when only a
    group moves."""
    moving = {"model": "random_waypoint", "v_min_kmh": 3, "v_max_kmh": 30}
    with pytest.raises(ScenarioError) as err:
        _scenario(devices={"count": 2, "groups": [{"count": 2, "mobility": moving}]})
    assert "devices.groups.0.mobility: moving devices need cell.link.mode: ofdma" in str(err.value)
    with pytest.raises(ScenarioError) as err:
        _scenario(devices={"count": 2, "mobility": moving})
    assert "devices.mobility: moving devices need" in str(err.value)


@pytest.mark.parametrize(("key", "value"), [("hysteresis_db", 31), ("ttt_s", 6), ("ttt_s", -1)])
def test_bad_handover_settings_are_one_line_errors(key, value):
    with pytest.raises(ScenarioError) as err:
        _scenario(
            cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
            network={"sites": 7, "handover": {key: value}},
        )
    assert f"network.handover.{key}" in str(err.value)


@pytest.mark.parametrize(
    "key", ["handover.hysteresis_db=3", "isd_m=300", "interference.model=none", "wrap_around=true"]
)
def test_a_network_key_on_a_single_cell_does_not_make_it_a_network(key, tmp_path):
    """One ``network.*`` key set on a one-cell scenario is refused with one line naming
    the section, instead of silently turning the cell into a 7-site, 21-cell network."""
    from netfl.loading.scenarios import load_scenario

    path = tmp_path / "cell.yaml"
    path.write_text(
        yaml.safe_dump(
            tiny_scenario(cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}})
        )
    )
    assert load_scenario(path).network is None
    with pytest.raises(ScenarioError) as err:
        load_scenario(path, [f"network.{key}"])
    assert "network: a network needs sites (1, 7 or 19) or site_positions_m" in str(err.value)
    assert len(str(err.value).splitlines()) == 1


def test_a_transfer_in_flight_follows_the_ue_and_resumes_on_the_new_cell():
    """A downlink to a UE driving from site 0 towards site 1 (deterministic loss, no
    fading): every 10 ms measurement re-rates the flow at the SNR where the UE is; at the
    A3 handover the flow leaves cell 0 with its undelivered bits, which after the
    interruption cross site 1's backhaul and resume on cell 1. The end instant follows
    by hand from the piecewise rates; the bits are conserved."""
    v, x0, step, interruption = 20.0, 200.0, 0.01, 0.05
    cell = {
        **PLAIN_CELL,
        "link": {
            **PLAIN_CELL["link"],
            "pathloss": {"model": "log_distance", "beta0_db": -50.0, "kappa": 3.5},
            "fading": "none",
            "link_abstraction": "gap",
        },
    }
    s = _driving_ue(
        cell,
        {
            "interference": {"model": "none"},
            "server_site": 0,
            "backhaul": {"capacity_mbps": 1000.0, "latency_ms": 5.0},
        },
        x0,
        v,
        interruption,
        step,
    )
    world = World(s)
    radio, env = world.radio, world.env
    (ue,) = world.all_devices
    c0 = radio.cells[0]
    carrier = c0.carriers["downlink"]
    p = world.channel

    def rate(cell_site_x, t):  # bit/s of the whole carrier where the UE is at time t
        d = abs(x0 + v * t - cell_site_x)
        snr = p.bs_tx_power_w * 10 ** (-(50.0 + 35.0 * math.log10(d)) / 10) / p.noise_w("ue")
        eff = float(carrier.efficiency(np.array([snr]))[0])
        return eff * carrier.rb_bandwidth_hz * carrier.num_rbs * carrier.time_fraction

    assert rate(0.0, 0.0) > 1.5 * rate(0.0, 4.0)  # (the rate falls as it drives away)
    size = rate(0.0, 0.0) * 4.5
    rec = env.run(until=radio.transfer(world.bs, ue, size, "probe"))
    ((when, _, src, dst),) = radio.handover.handovers
    assert (src, dst) == (0, 1) and 0.0 < when < rec.end_s
    # cell 0: from 0 at x0, re-rated at every 10 ms tick until the handover tick
    ticks = np.arange(0.0, when - 1e-9, step)
    sent0 = sum(rate(0.0, t) * step for t in ticks[:-1]) + rate(0.0, ticks[-1]) * (when - ticks[-1])
    left = size - sent0
    (fwd,) = [t for t in world.recorder.transfers if t.direction == "backhaul"]
    assert fwd.size_bits == pytest.approx(left, rel=1e-9) and fwd.num_models == 0
    assert fwd.start_s == pytest.approx(when + interruption, rel=1e-12)
    resume = when + interruption + left / 1e9 + 0.005
    assert fwd.end_s == pytest.approx(resume, rel=1e-12)
    # cell 1: from the resume instant (at the UE's last measurement, 2 cm behind), re-rated
    # at every tick
    t, bits = resume, 0.0
    while True:
        nxt = (math.floor(t / step + 1e-9) + 1) * step
        r = rate(500.0, t)
        if bits + r * (nxt - t) >= left:
            end = t + (left - bits) / r
            break
        bits += r * (nxt - t)
        t = nxt
    assert rec.end_s == pytest.approx(end, rel=1e-9)
    assert (rec.src, rec.dst, rec.start_s, rec.size_bits) == ("cell1", "ue0", 0.0, size)
    assert rec.airtime_s == pytest.approx(when + (end - resume), rel=1e-9)


def test_a_moving_device_costs_events_only_while_it_transfers():
    """Idle, a moving device schedules nothing (its position is brought up to date when
    a transfer starts); transferring, its transfer looks at it once per
    ``PLAN_SAMPLES`` measurement instants (its SINR along the path is the carrier's
    to integrate), at a predicted handover, and when its usable RBs change by a dB."""
    from netfl.radio.handover import PLAN_SAMPLES

    s = _scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        network={"sites": 7, "sectors": 3, "handover": {"sample_ms": 40}},
        devices={"count": 1, "mobility": {"model": "constant_velocity", "speed_kmh": 60}},
        seed=3,
    )
    world = World(s)
    env = world.env
    (ue,) = world.all_devices
    assert env.peek() == math.inf  # (nothing scheduled while it drives idle)
    env.run(until=30.0)
    calls = []
    mover = world.radio.mover
    world.radio.mover = lambda nodes: (calls.append(env.now), mover(nodes))
    rec = env.run(until=world.radio.transfer(world.bs, ue, 4e9, "probe"))
    duration = rec.end_s - rec.start_s
    assert duration > 10.0
    ticks = [t for t in calls if rec.start_s < t < rec.end_s]
    instants = duration / 0.04
    flying = [h for h in world.radio.handover.handovers if rec.start_s < h[0] < rec.end_s]
    # (a handover wakes the transfer, moves the UE over the interruption and again after
    # its downlink's rest crossed the new site's backhaul)
    assert 1 <= len(ticks) <= instants / PLAN_SAMPLES + 5 * len(flying) + 2
    assert len(ticks) < instants / 4  # (not one per measurement)
    last = world.mobility.trajectories["ue0"].positions(np.array([ticks[-1]]))[0]
    assert ue.position_m == pytest.approx(last, abs=1e-9)


def test_d2d_sinr_on_a_network_by_hand():
    """A D2D pair in cell 0 (ue0 → ue1) and cell 1's only UE (ue2) on its uplink at load
    η = 0.5: the pair's SINR is its SNR over 1 + η·p_RB(ue2)·g(ue2 → ue1)/N_RB (the D2D
    law's mean loss); FedDif's planning sees the same SINR, each cell is its own pool."""
    world = _two_cell_world([[100.0, 0.0], [150.0, 0.0], [420.0, 0.0]])
    radio, p = world.radio, world.channel
    a, b, c = world.all_devices
    assert radio.serving == {"ue0": 0, "ue1": 0, "ue2": 1}
    pc = p.uplink_power_control
    n_rb = radio.cells[1].carriers["uplink"].num_rbs
    own = 35.0 + 35.0 * math.log10(80.0)  # ue2 to its BS
    p_rb = min(
        p.ue_tx_power_w / n_rb,
        dbm_to_w(pc["p0_dbm"] + 10 * math.log10(2.0**p.numerology) + pc["alpha"] * own),
    )
    law = radio.cells[0].d2d_pathloss
    g = 10 ** (-float(law.mean_loss_db(np.array([270.0]))[0]) / 10)
    inr = 0.5 * p_rb * g / p.noise_w("ue", p.rb_bandwidth_hz)
    cell0 = radio.cells[0]
    _, snr_psd, snr_total = cell0.link_at_positions(a, b)
    _, sinr_psd, sinr_total = cell0.link_now(a, b)
    assert sinr_psd == pytest.approx(snr_psd / (1 + inr), rel=1e-12)
    assert sinr_total == pytest.approx(snr_total / (1 + inr), rel=1e-12)
    snr, gamma = radio.link_states([a], [a, b])
    plain, _ = cell0.link_states([a], [a, b])
    assert snr[0, 0] == 0.0 and snr[0, 1] == pytest.approx(plain[0, 1] / (1 + inr), rel=1e-12)
    assert gamma[0, 1] == pytest.approx(cell0.expected_efficiency(snr, "d2d")[0, 1])
    # the allocation SINR of M RBs: min(psd, all power in one RB / M), interference included
    for num_rbs in (1.0, 20.0):
        alloc, _ = radio.allocation_states([a], [a, b], num_rbs)
        want = min(sinr_psd, sinr_total / num_rbs)
        assert alloc[0, 0] == 0.0 and alloc[0, 1] == pytest.approx(want, rel=1e-12)
    pool, available = radio.d2d_budget([a, c])
    assert list(pool) == [0, 1] and len(available) == 2
    # the receiver moves 100 m towards ue2 (still in cell 0): its term follows it
    b.position_m = np.array([250.0, 0.0])
    radio.interference.moved(b, radio.coupling_loss_db([b])[0])
    g2 = 10 ** (-float(law.mean_loss_db(np.array([170.0]))[0]) / 10)
    want = p_rb * g2 / p.noise_w("ue", p.rb_bandwidth_hz)
    assert radio.interference.d2d_row("ue1")[1] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("name", ["feddif", "fedswap"])
def test_feddif_and_fedswap_run_on_a_network(name):
    """FedDif's auction plans D2D pairs across a 7-cell network (each on its sender's
    cell's uplink, the interference of the others included); the models it counts are
    the D2D transfers it makes, none of which crosses a backhaul."""
    s = _scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "feddif"}},
        network={"sites": 7, "sectors": 1, "antenna": "omni", "isd_m": 200},
        devices={"count": 8},
        data={"dataset": "digits", "partition": {"scheme": "dirichlet", "alpha": 0.3}},
        algorithm={"name": name, "epsilon": 0.0} if name == "feddif" else {"name": name},
        training={"rounds": 2},
        seed=3,
    )
    res = run(s)
    t = res.transfers
    d2d = t[t["direction"] == "d2d"]
    assert len(d2d) > 0 and d2d["src"].str.startswith("ue").all()
    assert d2d["dst"].str.startswith("ue").all()
    assert res.rounds["models_d2d"].sum() == (d2d["kind"] == "model_d2d").sum()
    assert (res.rounds["models_backhaul"] > 0).all()  # (the server's broadcast and uploads)
    assert (
        res.rounds["backhaul_bits"].sum() == t.loc[t["direction"] == "backhaul", "size_bits"].sum()
    )


def test_trajectories_table_samples_every_moving_device(tmp_path):
    """Positions every ``record_every_s`` up to the run's end, on its path (constant
    velocity: start + v·t exactly), written with the run and read back; ``devices.csv``
    has each device where its path has it at the end."""
    from netfl import read_run, write_run

    s = _scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        devices={
            "count": 3,
            "mobility": {
                "model": "constant_velocity",
                "speed_kmh": 36,
                "heading_deg": 90,
                "record_every_s": 0.5,
            },
        },
        training={"rounds": 2},
    )
    res = run(s)
    traj = res.tables["trajectories"]
    assert set(traj["device"]) == {"ue0", "ue1", "ue2"}
    for _, g in traj.groupby("device"):
        t = g["time_s"].to_numpy()
        assert t[0] == 0.0 and np.allclose(np.diff(t)[:-1], 0.5) and np.diff(t)[-1] <= 0.5
        assert t[-1] == res.rounds["sim_time_s"].iloc[-1]
        np.testing.assert_allclose(g["x_m"], g["x_m"].iloc[0])  # (heading 90°: along y)
        np.testing.assert_allclose(g["y_m"] - g["y_m"].iloc[0], 10.0 * t, atol=1e-9)
        row = res.devices.set_index("node").loc[g["device"].iloc[0]]
        assert (row["x_m"], row["y_m"]) == (g["x_m"].iloc[-1], g["y_m"].iloc[-1])
    back = read_run(write_run(res, tmp_path / "run"))
    pd.testing.assert_frame_equal(back.tables["trajectories"], traj, check_dtype=False)


def test_a_d2d_flow_is_rerated_while_another_cell_uploads():
    """``activity``: ue0 → ue1 (D2D, cell 0's uplink) runs at its SNR; while cell 1's
    ue2 uploads, at SNR/(1 + η1·J1(ue1)) with η1 cell 1's uplink occupancy; then at its
    SNR again — re-rated at the instants the other cell's occupancy changes."""
    s = _scenario(
        cell={**PLAIN_CELL, "link": {**PLAIN_CELL["link"], "fading": "none"}},
        network={**TWO_SITES, "interference": {"model": "activity"}},
        devices={
            "count": 3,
            "layout": {
                "kind": "positions",
                "positions_m": [[100.0, 0.0], [150.0, 0.0], [420.0, 0.0]],
            },
        },
    )
    world = World(s)
    radio, env = world.radio, world.env
    a, b, c = world.all_devices
    carrier = radio.cells[0].carriers["uplink"]
    seen = []

    def watch():
        yield env.timeout(0.01)
        seen.append(("before", carrier.flows[0].snr_scale, radio.interference.eta["uplink"][1]))
        up = radio.transfer(c, radio.cell_nodes[1], 2e6, "probe")
        yield env.timeout(1e-4)
        seen.append(("during", carrier.flows[0].snr_scale, radio.interference.eta["uplink"][1]))
        yield up
        yield env.timeout(1e-4)
        seen.append(("after", carrier.flows[0].snr_scale, radio.interference.eta["uplink"][1]))

    d2d = radio.transfer(a, b, 4e8, "probe")
    env.process(watch())
    env.run(until=d2d)
    (_, s0, e0), (_, s1, e1), (_, s2, e2) = seen
    assert s0 == 1.0 and e0 == 0.0 and e2 == 0.0 and s2 == 1.0
    assert 0.0 < e1 <= 1.0
    assert s1 == pytest.approx(1.0 / (1.0 + e1 * radio.interference.d2d_row("ue1")[1]), rel=1e-12)
    assert s1 < 1.0


def test_an_edge_upload_in_flight_reaches_its_edge_through_the_core():
    """HierFAVG: a UE uploading to cell 0's edge server hands over to cell 1 in flight;
    the rest goes over cell 1, then up site 1's backhaul to the core (at site 0, which
    hosts the edge): one recorded hop of the whole model, S/C + latency after the air."""
    cell = {**PLAIN_CELL, "link": {**PLAIN_CELL["link"], "fading": "none"}}
    s = _driving_ue(
        cell,
        {
            "interference": {"model": "none"},
            "server_site": 0,
            "backhaul": {"capacity_mbps": 100.0, "latency_ms": 5.0},
        },
        230.0,
        20.0,
        0.05,
        0.01,
    )
    world = World(s)
    radio, env = world.radio, world.env
    (ue,) = world.all_devices
    size = 2e7  # (~6 s at the ~3 Mbit/s this power-limited uplink has)
    rec = env.run(until=radio.transfer(ue, radio.cell_nodes[0], size, "model_up", 1))
    ((when, _, src, dst),) = radio.handover.handovers
    assert (src, dst) == (0, 1) and rec.start_s < when < rec.end_s
    assert (rec.src, rec.dst, rec.size_bits) == ("ue0", "cell1", size)
    (hop,) = [t for t in world.recorder.transfers if t.direction == "backhaul"]
    assert (hop.src, hop.size_bits, hop.num_models) == ("cell1", size, 1)
    assert hop.start_s == pytest.approx(rec.end_s)
    assert hop.end_s == pytest.approx(rec.end_s + size / 100e6 + 0.005, rel=1e-9)


def test_a_device_that_drives_out_of_coverage_for_good_stops_the_run_clearly():
    """Two sites without wrap-around: a UE heading away at 300 km/h loses coverage and
    never comes back; its transfer waits 600 simulated seconds, then a one-line error."""
    from netfl.errors import UserError

    cell = {**PLAIN_CELL, "link": {**PLAIN_CELL["link"], "fading": "none"}}
    s = _driving_ue(cell, {"interference": {"model": "none"}}, 550.0, 300 / 3.6, 0.05, 0.04)
    world = World(s)
    (ue,) = world.all_devices
    world.env.run(until=60.0)  # (3.5 km away by now)
    with pytest.raises(UserError) as err:
        world.env.run(until=world.radio.transfer(ue, world.bs, 1e6, "probe"))
    assert "ue0 has had no uplink rate for 600 s" in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "model", ["constant_velocity", pytest.param("gauss_markov", marks=pytest.mark.slow)]
)
def test_fast_devices_stay_inside_a_wrap_around_network_for_40_rounds(model):
    """Devices at 500 km/h on a 7-site wrap-around network (ISD 200 m) for 40 rounds of
    about 9 s drive ~50 km: folded into the torus, they stay in the deployment, keep a
    rate every round, and their recorded path never leaves it."""
    from channel_models.site_layouts import HexLayout

    s = _scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        network={
            "sites": 7,
            "sectors": 1,
            "antenna": "omni",
            "isd_m": 200,
            "handover": {"sample_ms": 200},  # (coarse measurements: a fast test)
        },
        devices={
            "count": 3,
            "mobility": {
                "model": model,
                "speed_kmh": 500,
                **({"alpha": 0.9} if model == "gauss_markov" else {}),
            },
        },
        model={"name": "logreg", "size_bits": 5e8},
        training={"rounds": 40},
    )
    result = run(s)
    assert len(result.rounds) == 40 and result.stop_reason == "rounds"
    end = float(result.rounds["sim_time_s"].iloc[-1])
    assert end * 500 / 3.6 > 40e3  # (tens of kilometres driven)
    xy = result.tables["trajectories"][["x_m", "y_m"]].to_numpy()
    dep = HexLayout(isd_m=200.0, rings=1, sectors=1)
    assert dep.contains(xy).all()
    assert (result.rounds["starved_devices"] == 0).all()


def test_a_moving_transfer_cut_mid_way_leaves_no_flow_and_keeps_its_bits():
    """A moving UE's upload (re-rated at every measurement, across handovers) cut by
    its departure: the record ends at the cut, marked ``left``, with the bits delivered
    until then — more the later the cut, fewer than the whole — and no flow of it stays
    on any cell's carrier."""
    from netfl.core.activity import DeviceCut

    s = _scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        network={"sites": 7, "sectors": 3, "handover": {"sample_ms": 40}},
        devices={"count": 1, "mobility": {"model": "constant_velocity", "speed_kmh": 60}},
        seed=3,
    )

    def upload(cut_after_s: float | None):
        world = World(s)
        env = world.env
        (ue,) = world.all_devices
        env.run(until=30.0)
        proc = world.radio.transfer(ue, world.bs, 2e8, "probe")
        if cut_after_s is not None:
            env.run(until=30.0 + cut_after_s)
            world.activities.cut(ue, "left")
        with pytest.raises(DeviceCut) if cut_after_s is not None else nullcontext():
            env.run(until=proc)
        rec = next(r for r in reversed(world.recorder.transfers) if r.direction == "uplink")
        for cell in world.radio.cells:
            assert not any(f.link for f in cell.carriers["uplink"].flows)
        return rec

    full = upload(None)
    assert full.outcome == "delivered" and full.delivered_bits == 2e8
    span = full.end_s - full.start_s
    early, late = upload(0.3 * span), upload(0.7 * span)
    assert early.outcome == late.outcome == "left"
    assert early.end_s == pytest.approx(30.0 + 0.3 * span)
    assert 0 < early.delivered_bits < late.delivered_bits < 2e8
    assert early.tx_energy_j < late.tx_energy_j < full.tx_energy_j


def test_path_wise_a3_hands_over_when_the_per_sample_reference_does():
    """The A3 rule along a path evaluated ahead in blocks of measurement instants
    (vectorised, antenna gains over the rays at anchor points) hands over at the instants
    of a reference that measures every instant on its own with the link budget's exact
    coupling loss (:meth:`coupling_loss_db` at the UE placed there): the same handovers,
    each within one measurement period, and measurements within hundredths of a dB (a
    few tenths where a ray sum bends between two anchors). Under the spatially
    consistent shadowing, whose values at a point are the link budget's there."""
    from channel_models.mobility import a3_handovers

    def world():
        s = _scenario(
            cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
            network={
                "sites": 7,
                "sectors": 3,
                "isd_m": 200,
                "indoor_fraction": 0.3,
                "mobility": {"shadowing": "spatially_consistent"},
            },
            devices={
                "count": 3,
                "mobility": {"model": "random_waypoint", "v_min_kmh": 30, "v_max_kmh": 60},
            },
            seed=11,
        )
        return World(s)

    path_wise, reference = world(), world()
    h = path_wise.radio.handover.settings
    step, horizon = h["sample_s"], 14.0
    t = np.arange(1, int(horizon / step) + 1) * step
    expected, errors = [], []
    for ue, ref_ue in zip(path_wise.all_devices, reference.all_devices, strict=True):
        path_wise.radio.track(ue, 0.0, horizon)
        traj = reference.radio.handover.paths[ref_ue.name]
        serving, state, rows = reference.radio.serving[ref_ue.name], {}, []
        for when, xy in zip(t, traj.positions(t), strict=True):
            ref_ue.position_m = xy
            rows.append(reference.radio.coupling_loss_db([ref_ue])[0])
            for _, src, dst in a3_handovers(
                [when],
                -rows[-1][None, :],
                serving,
                h["hysteresis_db"],
                h["ttt_s"],
                state,
                h["filter_k"],
            ):
                expected.append((when, ref_ue.name, src, dst))
                serving = dst
        errors.append(np.abs(path_wise.radio.handover.measured(ue, 1, len(t)) - rows).ravel())
    got = sorted(path_wise.radio.handover.handovers, key=lambda e: (e[1], e[0]))
    expected.sort(key=lambda e: (e[1], e[0]))
    assert len(expected) >= 3  # (the paths cross cells)
    assert [e[1:] for e in got] == [e[1:] for e in expected]
    assert all(abs(a[0] - b[0]) <= step + 1e-9 for a, b in zip(got, expected, strict=True))
    errors = np.concatenate(errors)
    assert errors.max() < 0.25 and np.quantile(errors, 0.99) < 0.02


def test_a_moving_power_limited_flow_never_holds_rbs_it_cannot_use():
    """Along a moving UE's path, the cap its transfer keeps until it next looks at it
    is at most the usable RBs (power control: the per-RB SNR at the lowest usable
    efficiency) at every measurement instant before then, and within a dB (``CAP_STEP``)
    of the usable RBs now; the next look comes at the first instant the usable RBs move
    by more than that, at a predicted handover, or after ``PLAN_SAMPLES`` instants."""
    from netfl.radio.handover import CAP_STEP, PLAN_SAMPLES, MovingLink

    s = _scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        network={"sites": 7, "sectors": 3, "isd_m": 800},
        devices={
            "count": 12,
            "mobility": {"model": "random_waypoint", "v_min_kmh": 40, "v_max_kmh": 60},
        },
        seed=4,
    )
    world = World(s)
    radio, env = world.radio, world.env
    step = radio.handover.settings["sample_s"]
    binding = 0
    for now in (0.0, 3.0, 7.5):
        if now > env.now:
            env.run(until=now)
        world.move(world.all_devices)
        for ue in world.all_devices:
            c = radio.serving[ue.name]
            carrier = radio.cells[c].carriers["uplink"]
            path = MovingLink(
                radio.handover,
                radio.cells[c],
                radio.interference,
                ue,
                "uplink",
                env.now,
                carrier.block_s,
            )
            wake, cap = radio.moving.look_ahead(ue, path, carrier, math.inf)
            k_now = math.floor(env.now / step + 1e-9)
            ks = np.arange(k_now, k_now + PLAN_SAMPLES + 1)
            _, total = path.sample_terms(ks)
            usable = carrier.usable_caps(math.inf, total)
            before = ks * step < wake - 1e-9
            assert env.now < wake <= ks[-1] * step + 1e-9
            assert np.all(cap <= usable[before] * (1 + 1e-12))
            if np.isfinite(usable[0]):
                binding += 1
                assert cap >= usable[0] / CAP_STEP
                after = np.flatnonzero(~before)
                moved = (usable[1:] < usable[0] / CAP_STEP) | (usable[1:] > usable[0] * CAP_STEP)
                if moved.any() and after.size:
                    assert ks[after[0]] <= ks[1 + np.argmax(moved)]
    assert binding >= 3  # (edge devices whose power limits their RBs)


def test_a_moving_devices_promotion_is_its_serving_cells_rrc_state():
    """A moving ``huang2012_lte`` device: its first upload waits for the promotion, a
    second one within the tail does not (the RRC state is its serving cell's)."""
    s = _scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        network={"sites": 7, "sectors": 3},
        devices={
            "count": 1,
            "compute_profile": "huang2012_lte",
            "mobility": {"model": "constant_velocity", "speed_kmh": 3.6},
        },
        seed=2,
    )
    world = World(s)
    env, radio = world.env, world.radio
    (ue,) = world.all_devices
    first = env.run(until=radio.transfer(ue, world.bs, 1e6, "a"))
    second = env.run(until=radio.transfer(ue, world.bs, 1e6, "b"))
    promotion = ue.compute.rrc_promotion_s
    assert first.start_s == pytest.approx(promotion) and second.start_s >= first.end_s
    assert ue.energy.promotion_s == pytest.approx(promotion)


def test_a_device_stays_rrc_connected_across_a_handover():
    """``huang2012_lte`` (a promotion and a tail): a download that hands over mid-way is
    promoted once and leaves one tail, from its end — leaving the old cell starts none,
    the interruption is the transfer's wait (the RRC state is the device's, one over the
    network) — and an upload on the new cell right after it waits for no promotion."""
    s = _driving_ue(PLAIN_CELL, {}, 230.0, 20.0, 0.05, 0.01, compute_profile="huang2012_lte")
    world = World(s)
    radio, env = world.radio, world.env
    (ue,) = world.all_devices
    c = ue.compute
    assert c.rrc_promotion_s > 0 and c.rrc_tail_s > 0
    first = env.run(until=radio.transfer(world.bs, ue, 4e8, "down"))
    ((when, _, src, dst),) = radio.handover.handovers
    assert (src, dst) == (0, 1) and first.start_s < when < first.end_s
    assert first.start_s == pytest.approx(c.rrc_promotion_s)
    second = env.run(until=radio.transfer(ue, world.bs, 1e5, "up"))
    assert second.src == "ue0" and second.dst == "cell1"
    assert second.start_s == pytest.approx(first.end_s)  # (connected: no promotion)
    env.run(until=second.end_s + c.rrc_tail_s + 1.0)
    radio.settle()
    e = ue.energy
    assert e.promotion_s == pytest.approx(c.rrc_promotion_s)
    assert e.tail_s == pytest.approx(c.rrc_tail_s, rel=1e-12)  # (one tail, from the end)
    mine = [r for r in world.recorder.transfers if "ue0" in (r.src, r.dst)]
    assert e.wait_s == pytest.approx(sum(r.end_s - r.start_s - r.airtime_s for r in mine))
    assert first.end_s - first.start_s - first.airtime_s >= 0.05  # (the interruption)

    # cut during the interruption (the device left): the hold ends, the tail starts there
    from netfl.core.activity import DeviceCut

    world = World(s)
    radio, env = world.radio, world.env
    (ue,) = world.all_devices
    proc = radio.transfer(world.bs, ue, 4e8, "down")
    env.run(until=when + 0.02)
    assert radio.handover.handovers and radio.handover.busy_until([ue]) > env.now
    world.activities.cut(ue, "left")
    with pytest.raises(DeviceCut):
        env.run(until=proc)
    env.run(until=when + 0.02 + c.rrc_tail_s + 1.0)
    radio.settle()
    assert ue.energy.tail_s == pytest.approx(c.rrc_tail_s, rel=1e-12)


def test_the_cells_table_gives_each_cells_mean_uplink_interference_over_the_run():
    """Under the activity model the cells' uplink INR is its time mean over the run (the
    run's end, every carrier idle, gave the −300 dB floor in every cell): above the
    floor where other cells carried uplink traffic; with a load factor and re-drops, the
    rounds' INRs weighted by their durations."""
    s = _scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        network={"sites": 7, "sectors": 3, "interference": {"model": "activity"}},
        devices={"count": 21},
    )
    res = run(s)
    inr = res.tables["cells"]["uplink_inr_db"]
    assert (inr > -100).sum() >= 10 and np.isfinite(inr).all()
    # a load factor with the devices re-dropped every round: the INR holds within a
    # round and moves at each drop; the mean is the rounds' INRs weighted by their times
    from netfl.algorithms import ALGORITHMS
    from netfl.loading.scenarios import algorithm_config

    loaded = _scenario(
        cell={
            "link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"},
            "redrop_every_round": True,
        },
        network={"sites": 7, "sectors": 3, "interference": {"model": "load_factor", "load": 0.5}},
        devices={"count": 21},
    )
    world = World(loaded)
    try:
        interference = world.radio.interference
        algorithm = ALGORITHMS["fedavg"](world, algorithm_config(loaded))
        weighted, inrs = np.zeros(21), []
        for r in range(3):
            t0 = world.env.now
            world.recorder.round = r
            world.begin_round(r)  # (the re-drop)
            inrs.append([interference.uplink_inr_db(c) for c in range(21)])
            world.env.run(until=world.env.process(algorithm.round(r)))
            weighted += (world.env.now - t0) * 10 ** (np.array(inrs[-1]) / 10)
        assert not np.allclose(inrs[0], inrs[1])  # (the drops moved it)
        expected = 10 * np.log10(weighted / world.env.now)
        mean = [interference.mean_uplink_inr_db(c) for c in range(21)]
        np.testing.assert_allclose(mean, expected, rtol=1e-9)
    finally:
        world.close()


def test_a_run_stopped_in_a_round_keeps_its_moving_devices_to_the_last_finished_one(
    monkeypatch, tmp_path
):
    """Interrupted in its second round (the round dropped): the trajectories end at the
    first round's end, ``devices.csv`` has each device where its path has it then, and
    the dropped round's handovers are gone with it."""
    import netfl.sim.device_mobility as dm

    def scenario():
        return _scenario(
            cell=PLAIN_CELL,
            network={**TWO_SITES, "handover": {"hysteresis_db": 1.0, "ttt_s": 0.04}},
            devices={
                "count": 4,
                "layout": {
                    "kind": "positions",
                    "positions_m": [[200, 0], [250, 10], [300, -10], [240, 5]],
                },
                "mobility": {
                    "model": "constant_velocity",
                    "speed_kmh": 72,
                    "heading_deg": 0,
                    "record_every_s": 0.5,
                },
            },
            model={"name": "logreg", "size_bits": 5e6},
            training={"rounds": 4},
        )

    full = run(scenario())
    from netfl.output.figures import result_figures

    drawn = result_figures(full, tmp_path)  # (the network map, with the devices' paths)
    assert "network_map.png" in {p.name for p in drawn}
    ends = full.rounds["sim_time_s"].to_numpy()
    late = full.tables["handovers"]["time_s"]
    assert ((late > ends[0]) & (late < ends[1])).any()  # (the second round hands over)
    cut = 0.5 * (ends[0] + ends[1]) + 0.2
    move = dm.DeviceMobility.move

    def interrupted(self, nodes):
        move(self, nodes)
        if self.env.now > cut:
            raise KeyboardInterrupt

    monkeypatch.setattr(dm.DeviceMobility, "move", interrupted)
    part = run(scenario(), partial_on_interrupt=True)
    assert part.stop_reason == "interrupted" and len(part.rounds) == 1
    end = part.rounds["sim_time_s"].iloc[-1]
    assert end == ends[0]
    traj = part.tables["trajectories"]
    assert (traj.groupby("device")["time_s"].max() == end).all()
    assert (part.tables["handovers"]["time_s"] <= end).all()
    last = traj.sort_values("time_s").groupby("device").tail(1).set_index("device")
    devices = part.devices.set_index("node").loc[last.index]
    np.testing.assert_array_equal(devices[["x_m", "y_m"]], last[["x_m", "y_m"]])
