"""FedDif and FedSwap on the simulated cell: limiting cases, constraints, accounting."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from netfl.algorithms import FedDif
from netfl.algorithms.feddif import DIFFUSION_STOP
from netfl.errors import ScenarioError
from netfl.loading.scenarios import algorithm_config, parse_scenario
from netfl.sim.runner import run
from netfl.sim.world import World
from tests.conftest import tiny_scenario

CELL = {"radius_m": 80, "link": {"mode": "ofdma", "channel_profile": "feddif"}}


def _scenario(algorithm: dict, **sections):
    base = {
        "devices": {"count": 6},
        "cell": CELL,
        "data": {"dataset": "digits", "partition": {"scheme": "dirichlet", "alpha": 0.3}},
        "training": {"rounds": 2, "batch_size": 16},
        "algorithm": algorithm,
    }
    base.update(sections)
    return parse_scenario(tiny_scenario(**base))


def _diffusion(result) -> pd.DataFrame:
    return result.tables["diffusion"]


def _final_chains(result) -> pd.DataFrame:
    """The last diffusion-table row of every (round, model): its chain at upload."""
    d = _diffusion(result)
    return d.sort_values("diffusion_round").groupby(["round", "model"]).tail(1)


def test_large_epsilon_is_fedavg_event_for_event():
    learn = {"learning": {"mode": "learn"}}
    fedavg = run(_scenario({"name": "fedavg"}, **learn))
    feddif = run(_scenario({"name": "feddif", "epsilon": 10.0}, **learn))
    assert list(feddif.rounds["accuracy"]) == list(fedavg.rounds["accuracy"])
    for col in fedavg.rounds.columns:
        if col not in ("train_loss",):
            assert feddif.rounds[col].equals(fedavg.rounds[col]), col
    assert feddif.transfers.equals(fedavg.transfers)
    assert (feddif.rounds["diffusion_rounds"] == 0).all()
    assert (feddif.rounds["diffusion_stop"] == DIFFUSION_STOP["none_planned"]).all()
    assert (feddif.transfers["direction"] != "d2d").all()


def test_zero_epsilon_and_gamma_visit_every_pue_like_fedswap():
    """One class per PUE: every new PUE lowers the IID distance, so ε = 0 and γ_min = 0
    diffuse every model through every PUE, as FedSwap does."""
    n = 10
    part = {"dataset": "digits", "partition": {"scheme": "classes_per_device", "classes": 1}}
    for algo in ({"name": "feddif", "epsilon": 0.0}, {"name": "fedswap"}):
        algo = {**algo, "min_efficiency_bps_per_hz": 0.0}
        res = run(_scenario(algo, data=part, training={"rounds": 1}, devices={"count": n}))
        chains = _final_chains(res)
        assert (chains["chain_length"] == n).all(), algo
        assert res.rounds["models_d2d"].iloc[0] == n * (n - 1)
        assert res.rounds["diffusion_stop"].iloc[0] in (
            DIFFUSION_STOP["iid"],
            DIFFUSION_STOP["no_pair"],
        )
        # every chain holds all the pooled data: IID distance of the pooled labels
        assert (chains["chain_size"] == res.info["num_train_samples"]).all()
        assert chains["iid_distance"].max() == pytest.approx(chains["iid_distance"].min())
        # no PUE trains a model twice (16c): each model's receivers are distinct
        d = _diffusion(res)
        got = d[d["receiver"] >= 0].groupby("model")["receiver"].apply(list)
        for model, receivers in got.items():
            assert len(set(receivers)) == len(receivers) and model not in receivers


def test_unreachable_links_end_diffusion_at_once():
    res = run(_scenario({"name": "feddif", "epsilon": 0.0, "min_efficiency_bps_per_hz": 30.0}))
    assert (res.rounds["diffusion_rounds"] == 0).all()
    assert (res.rounds["diffusion_stop"] == DIFFUSION_STOP["no_pair"]).all()
    assert (res.rounds["models_d2d"] == 0).all()
    assert (res.rounds["models_uplink"] == 6).all()


def test_an_isolated_pue_never_joins_a_chain():
    scenario = _scenario({"name": "feddif", "epsilon": 0.0, "min_efficiency_bps_per_hz": 0.5})
    world = World(scenario)
    algorithm = FedDif(world, algorithm_config(scenario))
    far = world.devices[2]
    far.position_m = np.array([5000.0, 0.0])
    proc = world.env.process(algorithm.round(0))
    world.env.run(until=proc)
    d = algorithm.tables()["diffusion"]
    assert (d["receiver"] != 2).all()  # nobody sends to it
    assert (d.loc[d["model"] == 2, "chain_length"] == 1).all()  # its model never leaves it
    assert proc.value.extra["diffusion_rounds"] >= 1  # the others still diffuse


def test_model_counts_match_the_transfer_log_and_the_chains():
    res = run(_scenario({"name": "feddif", "epsilon": 0.0}, training={"rounds": 3}))
    t = res.transfers
    chains = _final_chains(res)
    for r, row in res.rounds.set_index("round").iterrows():
        tr = t[t["round"] == r]
        for direction in ("uplink", "downlink", "d2d"):
            want = tr.loc[tr["direction"] == direction, "num_models"].sum()
            assert row[f"models_{direction}"] == want
        assert row["models_d2d"] == (tr["kind"] == "model_d2d").sum()
        assert row["models_d2d"] == (chains.loc[chains["round"] == r, "chain_length"] - 1).sum()
        assert (
            row["models_sent"] == row["models_uplink"] + row["models_downlink"] + row["models_d2d"]
        )
        assert row["models_downlink"] == 6 and row["models_uplink"] == 6
        # control messages are accounted: bids from every PUE each diffusion round
        bids = tr[tr["kind"] == "bid"]
        assert len(bids) == 6 * row["diffusion_rounds"] + 6 * (row["diffusion_stop"] == 2)
        assert row["control_bits"] > 0


def test_bandwidth_left_by_cues_caps_a_diffusion_round():
    """(16f): with a short window every pair needs much bandwidth, so fewer pairs fit."""
    free = run(_scenario({"name": "feddif", "epsilon": 0.0}, training={"rounds": 1}))
    tight = run(
        _scenario(
            {"name": "feddif", "epsilon": 0.0, "bandwidth_window_s": 2e-4},
            training={"rounds": 1},
        )
    )
    for res in (free, tight):
        d = _diffusion(res)
        used = d[d["receiver"] >= 0].groupby(["round", "diffusion_round"])["bandwidth_hz"].sum()
        assert (used <= 20e6 * (1 + 1e-9)).all()

    def per_round(res):
        return _diffusion(res).query("receiver >= 0").groupby("diffusion_round").size()

    assert per_round(tight).max() < per_round(free).max()


def test_scheduling_follows_the_matching_weights():
    """Each diffusion round's pairs are a maximum-weight matching: no single swap improves it."""
    res = run(_scenario({"name": "feddif", "epsilon": 0.0}, training={"rounds": 1}))
    d = _diffusion(res)
    chosen = d[d["receiver"] >= 0]
    assert (chosen["valuation"] >= 0).all() and (chosen["weight"] > 0).all()  # (16b)
    assert (chosen["efficiency_bps_per_hz"] >= 1.0).all()  # (16e)
    assert chosen.groupby("diffusion_round")["receiver"].apply(lambda s: s.is_unique).all()  # (16d)


def test_feddif_needs_an_ofdma_cell():
    with pytest.raises(ScenarioError, match="cell.link.mode"):
        parse_scenario(tiny_scenario(algorithm={"name": "feddif"}))


def test_diffusion_improves_iid_distance_and_redrop_moves_ues():
    res = run(
        _scenario(
            {"name": "feddif", "redrop_each_diffusion_round": True},
            training={"rounds": 2},
        )
    )
    r = res.rounds
    assert (r["iid_distance_end_mean"] <= r["iid_distance_start_mean"]).all()
    assert (r["diffusion_rounds"] >= 1).all()


def test_mean_efficiency_stop_by_hand():
    """``stop: mean_efficiency``: every scheduled diffusion round's pairs have a mean
    (14) — IID-distance drop over bandwidth, averaged — above the threshold, and the
    round that stops has it at or below, computed here from the logged pairs."""
    from netfl.algorithms.feddif_state import diffusion_efficiency

    eps = 1.5e-5  # (14) here: 6.5e-5, 2.0e-5, 2.1e-5, 1.2e-5 ... in diffusion rounds 0, 1, 2, 3
    result = run(
        _scenario({"name": "feddif", "stop": "mean_efficiency", "efficiency_epsilon": eps})
    )
    d = _diffusion(result)
    stopped = d[d["stop"] == "efficiency"]
    assert len(stopped) and (result.rounds["diffusion_stop"] == DIFFUSION_STOP["efficiency"]).any()
    for (_, _), rows in d.groupby(["round", "diffusion_round"]):
        pairs = rows[rows["receiver"] >= 0]
        if not len(pairs):
            continue
        e = diffusion_efficiency(pairs["valuation"], pairs["bandwidth_hz"])
        assert rows["mean_efficiency"].iloc[0] == pytest.approx(e, rel=1e-12)
        assert (e <= eps) == (rows["stop"].iloc[0] == "efficiency")
    # ε of Algorithm 2 plays no part: even a huge one does not end diffusion
    huge = run(
        _scenario(
            {
                "name": "feddif",
                "stop": "mean_efficiency",
                "efficiency_epsilon": eps,
                "epsilon": 10.0,
            }
        )
    )
    assert (huge.rounds["diffusion_rounds"] == result.rounds["diffusion_rounds"]).all()


def test_a_model_within_epsilon_gets_no_edges():
    """``stop: per_model``: once a model's IID distance is ≤ ε it is never scheduled
    again in that round, while the others may still diffuse."""
    result = run(_scenario({"name": "feddif", "epsilon": 0.35}))
    d = _diffusion(result)
    within = d[(d["iid_distance"] <= 0.35) & (d["stop"] == "")]
    assert (within["receiver"] == -1).all()
    assert (d["receiver"] >= 0).any()


def test_mean_efficiency_needs_its_threshold():
    with pytest.raises(ScenarioError, match="needs efficiency_epsilon"):
        World(_scenario({"name": "feddif", "stop": "mean_efficiency"}))
