"""The ofdma link mode wired into nodes, records, scenarios and runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import simpy

from channel_models.profile_catalog import get_channel_profile
from netfl.core.records import Recorder
from netfl.errors import ScenarioError
from netfl.loading.scenarios import parse_scenario
from netfl.radio.ofdma_radio import OfdmaRadio
from netfl.sim.runner import run
from tests.conftest import make_node, tiny_scenario

OFDMA = {"radius_m": 200, "link": {"mode": "ofdma", "channel_profile": "feddif"}}


def radio_with(profile_overrides=None):
    env = simpy.Environment()
    profile = get_channel_profile("feddif").with_overrides(**(profile_overrides or {}))
    rec = Recorder()
    radio = OfdmaRadio(env, rec, profile, "round_robin", lambda k: np.random.default_rng(k))
    return env, rec, radio


def test_mean_snr_is_the_link_budget():
    env, rec, radio = radio_with()
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    ue = make_node("ue0")
    ue.position_m = np.array([120.0, 0.0])
    d = np.hypot(120.0, 23.5)
    want_db = 23 - (30 + 37.5 * np.log10(d)) + 174 - 10 * np.log10(20e6)
    assert 10 * np.log10(radio.mean_snr(ue, bs)) == pytest.approx(want_db)
    assert 10 * np.log10(radio.mean_snr(bs, ue)) == pytest.approx(want_db + 20)  # BS 43 dBm


def test_d2d_overlays_the_uplink_and_records_rb_use():
    env, rec, radio = radio_with({"fading": {"model": "none", "coherence_time_s": 1e-3}})
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    a, b = make_node("ue0"), make_node("ue1", index=1)
    a.position_m, b.position_m = np.array([50.0, 0.0]), np.array([-50.0, 0.0])
    radio.transfer(a, b, 4e6, "d2d_model", num_models=1)
    radio.transfer(b, bs, 4e6, "model_up", num_models=1)
    env.run()
    up = np.array(radio.carriers["uplink"].occupancy)
    down = np.array(radio.carriers["downlink"].occupancy)
    assert up[:, 2].max() == pytest.approx(106.0)
    assert len(down) == 0  # nothing ever touched the downlink
    df = rec.transfers_frame()
    assert set(df["direction"]) == {"d2d", "uplink"}
    for r in rec.transfers:
        # each held 53 RBs while both were active, 106 after: rb_subframes ≥ 53 · airtime
        assert 53 * r.duration_s / 1e-3 <= r.rb_subframes <= 106 * r.duration_s / 1e-3 + 1e-6
        assert r.tx_energy_j == pytest.approx(a.compute.tx_power_w * r.duration_s)
        assert np.isfinite(r.mean_snr_db)


def test_scenario_rejects_keys_of_the_other_mode():
    with pytest.raises(ScenarioError, match="scheduler does not apply to mode 'fixed_rate'"):
        parse_scenario({"name": "x", "cell": {"link": {"scheduler": "fcfs"}}})
    with pytest.raises(ScenarioError, match="need link.mode: ofdma"):
        parse_scenario({"name": "x", "cell": {"cues": {"density_per_km2": 10}}})
    with pytest.raises(ScenarioError, match="unknown channel profile"):
        parse_scenario({"name": "x", "cell": {"link": {"mode": "ofdma", "channel_profile": "6g"}}})


def _ofdma_run(**extra):
    cell = {**OFDMA, **extra.pop("cell", {})}
    return run(parse_scenario(tiny_scenario(cell=cell, **extra)))


def test_ofdma_run_accounting_and_timing_equals_learning():
    sc = {
        "cell": {
            "cues": {
                "density_per_km2": 3000,
                "session_rate_per_s": 0.1,
                "mean_session_s": 5.0,
                "demand_rbs": 2,
            }
        },
        "training": {"rounds": 2},
    }
    timing = _ofdma_run(**sc)
    learn = _ofdma_run(**sc, learning={"mode": "learn"})
    cols = [c for c in timing.rounds.columns if c not in ("accuracy", "loss", "train_loss")]
    pd.testing.assert_frame_equal(timing.rounds[cols], learn.rounds[cols])
    r, tr = timing.rounds, timing.transfers
    assert r["rb_subframes"].sum() == pytest.approx(tr["rb_subframes"].sum())
    assert (r["subframes"] >= 1).all()
    occ = timing.tables["occupancy"]
    assert (occ["session_rbs"] + occ["flow_rbs"] <= 106 + 1e-9).all()
    assert occ["session_rbs"].max() > 0  # CUEs were there


def test_cue_load_slows_rounds():
    quiet = _ofdma_run(training={"rounds": 2})
    busy = _ofdma_run(
        cell={
            "cues": {
                "density_per_km2": 20000,
                "session_rate_per_s": 0.5,
                "mean_session_s": 10.0,
                "demand_rbs": 4,
            }
        },
        training={"rounds": 2},
    )
    assert (busy.rounds["round_time_s"] > quiet.rounds["round_time_s"]).all()


def test_redrop_every_round_is_seeded():
    a = _ofdma_run(cell={"redrop_every_round": True}, training={"rounds": 3})
    b = _ofdma_run(cell={"redrop_every_round": True}, training={"rounds": 3})
    still = _ofdma_run(training={"rounds": 3})
    pd.testing.assert_frame_equal(a.rounds, b.rounds)
    pd.testing.assert_frame_equal(a.devices, b.devices)
    assert not a.devices[["x_m", "y_m"]].equals(still.devices[["x_m", "y_m"]])
    # with a fixed drop and no CUEs, uplink SNR per device is the same every round
    up = still.transfers[still.transfers.direction == "uplink"]
    moved = a.transfers[a.transfers.direction == "uplink"]
    assert (
        up.groupby("src")["mean_snr_db"].std().max()
        < moved.groupby("src")["mean_snr_db"].std().max()
    )


def test_ofdma_run_directory_and_report(tmp_path):
    from netfl.cli.app import main

    f = tmp_path / "cell.yaml"
    import yaml

    f.write_text(yaml.safe_dump(tiny_scenario(cell={**OFDMA, "cues": {"density_per_km2": 500}})))
    out = tmp_path / "run"
    assert main(["run", str(f), "--out", str(out), "--set", "outputs.figures=true"]) == 0
    assert (out / "occupancy.parquet").is_file() and (out / "cues.parquet").is_file()
    radio_figs = {"transfer_rates.png", "rb_occupancy.png", "snr_map.png"}
    assert radio_figs <= {p.name for p in (out / "figures").iterdir()}
    for name in radio_figs:
        (out / "figures" / name).unlink()
    assert main(["report", str(out)]) == 0
    assert radio_figs <= {p.name for p in (out / "figures").iterdir()}


def test_large_scale_loss_is_drawn_once_per_link_and_drop_and_reciprocal():
    env = simpy.Environment()
    profile = get_channel_profile("nr_fr1_uma")  # LOS state and shadowing are drawn
    radio = OfdmaRadio(
        env,
        Recorder(),
        profile,
        "round_robin",
        lambda k: np.random.default_rng(k),
        lambda k: np.random.default_rng(k),
    )
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    ue = make_node("ue0")
    ue.position_m = np.array([90.0, 40.0])
    up = radio.mean_snr(ue, bs)
    assert radio.mean_snr(ue, bs) == up  # same link, same drop: same draw
    assert radio.link_loss_db(ue, bs) == radio.link_loss_db(bs, ue)  # reciprocal
    draws = set()
    for x in np.linspace(80.0, 100.0, 30):  # new drops: new LOS/shadowing draws
        ue.position_m = np.array([x, 40.0])
        draws.add(round(10 * np.log10(radio.mean_snr(ue, bs)), 6))
    assert len(draws) == 30


def test_per_link_draws_are_uniform_normal_and_order_free():
    """The keyed per-link variates: U(0, 1) and N(0, 1) (KS tests), reciprocal, and the
    same whether links are evaluated as a matrix or one by one."""
    from scipy import stats

    profile = get_channel_profile("nr_fr1_uma")
    radio = OfdmaRadio(
        simpy.Environment(),
        Recorder(),
        profile,
        "round_robin",
        lambda k: np.random.default_rng(k),
        lambda k: np.random.default_rng(100 + k),
    )
    rng = np.random.default_rng(0)
    ues = [make_node(f"ue{i}", index=i) for i in range(60)]
    for u in ues:
        u.position_m = rng.uniform(-200, 200, 2)
    a, b = ues[:30], ues[30:]
    pa = np.array([n.position_m for n in a])
    pb = np.array([n.position_m for n in b])
    u, z = radio.link_variates(a, b, pa, pb)
    assert stats.kstest(u.ravel(), "uniform").pvalue > 1e-3
    assert stats.kstest(z.ravel(), "norm").pvalue > 1e-3
    assert abs(stats.pearsonr(u.ravel(), z.ravel())[0]) < 0.1
    u2, z2 = radio.link_variates(b, a, pb, pa)
    assert np.array_equal(u2, u.T) and np.array_equal(z2, z.T)  # reciprocal
    m = radio.link_loss_matrix_db(a, b)
    assert m[3, 7] == radio.link_loss_db(a[3], b[7]) == radio.link_loss_db(b[7], a[3])
    # D2D LOS share at these distances follows TR 38.901 UMi's probability
    law = radio.d2d_pathloss
    dist = np.hypot(*np.moveaxis(pa[:, None] - pb[None], -1, 0))
    p_los = law.los_probability(np.maximum(dist, 10.0))
    los = u < p_los
    assert abs(los.mean() - p_los.mean()) < 4 * np.sqrt((p_los * (1 - p_los)).sum()) / los.size
