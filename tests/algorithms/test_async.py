"""FedAsync and FedBuff on the wireless clock: staleness by hand, the mixing rule, FedBuff
against FedAvg, determinism and resume."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from netfl import World, parse_scenario, run
from netfl.algorithms import ALGORITHMS
from netfl.algorithms.asynchronous import staleness_weight
from netfl.loading.scenarios import algorithm_config, resolved
from netfl.sim.runner import simulate_round
from tests.conftest import tiny_scenario

#: a fast device (5G) and a slow one (4G LTE) on dedicated fixed-rate links
TWO = {
    "count": 2,
    "groups": [{"count": 1, "link_profile": "5g"}, {"count": 1, "link_profile": "4g_lte"}],
}


def test_staleness_functions_by_hand():
    assert staleness_weight("constant", 7) == 1.0
    assert staleness_weight("polynomial", 3, a=0.5) == pytest.approx(4**-0.5)
    assert staleness_weight("hinge", 4, a=0.5, b=4) == 1.0
    assert staleness_weight("hinge", 6, a=0.5, b=4) == pytest.approx(1 / (0.5 * 2 + 1))
    assert staleness_weight("inverse_sqrt", 3) == pytest.approx(0.5)


def test_staleness_by_hand_on_two_fixed_rate_devices():
    """ue0 on 5G cycles several times while ue1 on 4G trains once: every update's staleness
    is the number of updates published between the arriving device's download start
    (the version it received) and its update; ue1's first update is as stale as the
    updates ue0 made meanwhile, ue0's are never stale before ue1's first arrives."""
    res = run(
        parse_scenario(
            tiny_scenario(
                devices=TWO,
                training={"rounds": 12},
                algorithm={"name": "fedasync", "staleness": "constant"},
            )
        )
    )
    rounds, tr = res.rounds, res.transfers
    assert (rounds["updates"] == 1).all() and (rounds["in_flight"] == 2).all()
    ups = tr[tr["kind"] == "model_up"].sort_values("end_s")
    downs = tr[tr["kind"] == "model_down"]
    times = rounds["sim_time_s"].to_numpy()
    assert len(ups) >= len(rounds)
    slow_seen = False
    for k, up in enumerate(ups.iloc[: len(rounds)].itertuples()):
        mine = downs[(downs["dst"] == up.src) & (downs["end_s"] <= up.start_s + 1e-12)]
        start = mine["start_s"].max()  # its last download before this upload
        received = int((times[:k] <= start + 1e-12).sum())  # updates published by then
        assert rounds["staleness_max"].iloc[k] == k - received, k
        if up.src == "ue1" and not slow_seen:
            slow_seen = True
            assert rounds["staleness_max"].iloc[k] == k  # all of ue0's updates before it
        elif up.src == "ue0" and not slow_seen:
            assert rounds["staleness_max"].iloc[k] == 0
    assert slow_seen and rounds["staleness_max"].max() > 0


def _learning(algorithm: dict, count: int = 4, rounds: int = 3, **sections):
    data = {
        "dataset": "synthetic",
        "synthetic": {"shape": [1, 4, 4], "num_samples": 100, "num_classes": 4},
        "partition": {"scheme": "iid"},
        "test_fraction": 0.2,
    }
    return parse_scenario(
        tiny_scenario(
            devices={"count": count},
            data=data,
            learning={"mode": "learn"},
            training={"rounds": rounds, "batch_size": 1000, "lr": 0.5},
            algorithm=algorithm,
            **sections,
        )
    )


def test_fedasync_with_alpha_1_and_constant_staleness_replaces_the_model():
    """α = 1, s = 1: x_t = x_new — every update sets the global model to the model that
    arrived, exactly."""
    scenario = _learning({"name": "fedasync", "alpha": 1.0, "staleness": "constant"})
    world = World(scenario)
    algo = ALGORITHMS["fedasync"](world, algorithm_config(scenario))
    seen = []
    publish = algo.publish

    def spy(new, arrivals):
        seen.append(arrivals[0].state)
        publish(new, arrivals)

    algo.publish = spy
    for r in range(4):
        simulate_round(world, algo, r)
        for key, value in algo.global_state.items():
            assert torch.equal(value, seen[-1][key]), (r, key)
    assert len(seen) == 4


def test_fedbuff_with_every_device_in_one_buffer_is_a_fedavg_round():
    """K = N, every device training, no staleness scaling, η_g = 1: the first server step
    is x + mean(y_k − x) = mean(y_k), FedAvg's round (equal data sizes; full-batch local
    SGD, so the local models agree up to float sums)."""
    n = 4
    buff = World(
        s := _learning({"name": "fedbuff", "buffer_size": n, "staleness": "constant"}, n, 1)
    )
    fb = ALGORITHMS["fedbuff"](buff, algorithm_config(s))
    summary = simulate_round(buff, fb, 0)
    assert summary.num_clients == n and summary.extra["staleness_max"] == 0
    avg = World(s2 := _learning({"name": "fedavg"}, n, 1))
    assert len({len(p) for p in avg.partitions}) == 1  # (equal sizes: weights equal)
    fa = ALGORITHMS["fedavg"](avg, algorithm_config(s2))
    simulate_round(avg, fa, 0)
    for key, value in fa.global_state.items():
        torch.testing.assert_close(fb.global_state[key], value, rtol=1e-5, atol=1e-6)
    assert not torch.equal(fb.global_state[key], buff_init(s)[key])  # (it moved)


def buff_init(scenario):
    return World(scenario).init_model_state()


@pytest.mark.parametrize("name", ["fedasync", "fedbuff"])
def test_same_seed_same_tables(name):
    sc = _learning({"name": name} | ({"buffer_size": 2} if name == "fedbuff" else {}), rounds=4)
    a, b = run(sc), run(sc)
    pd.testing.assert_frame_equal(a.rounds, b.rounds)
    pd.testing.assert_frame_equal(a.transfers, b.transfers)
    assert np.isfinite(a.rounds["accuracy"]).all()


@pytest.mark.parametrize("name, kill_after", [("fedasync", 2), ("fedbuff", 1)])
def test_resume_equals_the_uninterrupted_run(name, kill_after, tmp_path):
    """Killed after an update and resumed from its checkpoint: the devices in flight at
    the checkpoint train from their saved versions; every row is the uninterrupted one."""
    from tests.test_checkpoint import _interrupted_and_resumed

    options = {"name": name} | ({"buffer_size": 2} if name == "fedbuff" else {})
    sc = _learning(
        options, rounds=5, outputs={"figures": False, "progress": False, "checkpoint_every": 1}
    )
    whole = run(sc)
    resumed, _ = _interrupted_and_resumed(sc, tmp_path, kill_after)
    cols = [
        "round",
        "sim_time_s",
        "accuracy",
        "loss",
        "train_loss",
        "staleness_mean",
        "uplink_bits",
    ]
    pd.testing.assert_frame_equal(resumed.rounds[cols], whole.rounds[cols])


def test_devices_that_leave_are_replaced_and_the_run_goes_on():
    """Markov on/off availability: a device cut mid-training loses its update, its slot
    picks another; updates keep coming."""
    res = run(
        parse_scenario(
            tiny_scenario(
                devices={
                    "count": 6,
                    "availability": {"model": "markov", "mean_on_s": 0.004, "mean_off_s": 0.004},
                },
                training={"rounds": 10},
                algorithm={"name": "fedbuff", "buffer_size": 2, "concurrency": 3},
            )
        )
    )
    assert len(res.rounds) == 10 and (res.rounds["in_flight"] <= 3).all()
    assert (res.transfers["outcome"] == "left").any()


def test_evaluation_every_so_many_simulated_seconds():
    """``training.eval_every_s``: accuracy on the rounds that cross a multiple of it
    (and the last), NaN on the others."""
    sc = _learning({"name": "fedasync"}, rounds=12)
    every = float(run(sc).rounds["sim_time_s"].iloc[-1]) / 3
    data = resolved(sc)
    data["training"].update(eval_every=1000, eval_every_s=every)
    rounds = run(parse_scenario(data)).rounds
    t, prev = rounds["sim_time_s"].to_numpy(), np.r_[0.0, rounds["sim_time_s"].to_numpy()[:-1]]
    crossed = (t // every) > (prev // every)
    crossed[-1] = True
    assert (rounds["accuracy"].notna().to_numpy() == crossed).all() and 2 <= crossed.sum() < 12


@pytest.mark.parametrize(
    "cell, extra",
    [
        ({"radius_m": 150, "link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}}, {}),
        (
            {"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
            {
                "network": {"sites": 7, "isd_m": 300},
                "devices": {
                    "count": 8,
                    "mobility": {"model": "random_waypoint", "v_min_kmh": 30, "v_max_kmh": 60},
                },
            },
        ),
    ],
    ids=["ofdma", "network_mobile"],
)
@pytest.mark.parametrize("name", ["fedasync", "fedbuff"])
def test_every_radio_in_timing_mode(name, cell, extra):
    options = {"name": name} | ({"buffer_size": 3} if name == "fedbuff" else {})
    sections = {"devices": {"count": 6}, "cell": cell, "training": {"rounds": 5}, **extra}
    res = run(parse_scenario(tiny_scenario(algorithm=options, **sections)))
    assert len(res.rounds) == 5 and (res.rounds["round_time_s"] >= 0).all()
    assert (res.rounds["updates"] == (3 if name == "fedbuff" else 1)).all()


def _spied(name: str, options: dict, count: int = 4, rounds: int = 6):
    """A world, the algorithm, and what each server update saw: the global model before,
    the arrivals (their states, the versions they trained from and those versions'
    models) and the model after."""
    sc = _learning({"name": name, **options}, count, rounds)
    world = World(sc)
    algo = ALGORITHMS[name](world, algorithm_config(sc))
    log, taken = [], []
    arrival, publish = algo.arrival, algo.publish

    def spy_arrival(device, version):
        a = arrival(device, version)
        start = {k: v.clone() for k, v in algo.versions[version].items()}
        taken.append((a, a.state, start))  # (FedBuff drops a.state once summed)
        return a

    def spy_publish(new, arrivals):
        before = {k: v.clone() for k, v in algo.global_state.items()}
        mine = [t for t in taken if any(t[0] is a for a in arrivals)]
        states = [(state, start, a.staleness) for a, state, start in mine]
        log.append((before, states, new))
        publish(new, arrivals)

    algo.arrival, algo.publish = spy_arrival, spy_publish
    for r in range(rounds):
        simulate_round(world, algo, r)
    return log


def test_fedasync_mixes_a_stale_arrival_by_hand():
    """α = 0.5, polynomial a = 0.5: each update is lerp(x, x_new, 0.5·(t − τ + 1)^−0.5),
    stale arrivals included."""
    log = _spied("fedasync", {"alpha": 0.5, "staleness": "polynomial", "a": 0.5})
    assert max(states[0][2] for _, states, _ in log) > 0  # (some arrival was stale)
    for before, [(state, _, stale)], new in log:
        weight = 0.5 * (stale + 1) ** -0.5
        for k, v in before.items():
            torch.testing.assert_close(new[k], v + weight * (state[k] - v), rtol=1e-6, atol=1e-7)


def test_fedbuff_steps_by_hand_over_overlapping_flushes():
    """K = 2 with 4 devices on identical links (their arrivals land together, so two
    flushes overlap): every update is x + η·Σ s(t − τ)·(y − x_τ)/K with each arrival's own
    starting version, and none is lost."""
    log = _spied("fedbuff", {"buffer_size": 2, "server_lr": 0.7}, rounds=8)
    assert len(log) == 8 and all(new is not None for _, _, new in log)
    for before, states, new in log:
        assert len(states) == 2
        for k, v in before.items():
            step = sum((y[k] - start[k]) / (1 + stale) ** 0.5 for y, start, stale in states)
            torch.testing.assert_close(new[k], v + 0.7 * step / 2, rtol=1e-5, atol=1e-6)


def test_resume_with_a_nonempty_buffer_at_the_checkpoint(tmp_path):
    """5 devices, K = 2, killed after the first update: the checkpoint holds a buffered
    sum and the sum of a flush whose server step is running; the resumed run equals the
    uninterrupted one."""
    from netfl.sim.checkpoint import load_checkpoint
    from tests.test_checkpoint import Killed, _kill_after

    sc = _learning(
        {"name": "fedbuff", "buffer_size": 2},
        count=5,
        rounds=5,
        outputs={"figures": False, "progress": False, "checkpoint_every": 1},
    )
    whole = run(sc)
    with pytest.raises(Killed):
        run(sc, on_round=_kill_after(0), run_dir=tmp_path)
    saved = load_checkpoint(tmp_path)["algorithm"]
    assert saved["buffer_sum"] is not None and saved["applying_sums"]  # (exercised)
    resumed = run(sc, run_dir=tmp_path, resume=True)
    cols = ["round", "sim_time_s", "accuracy", "loss", "train_loss", "staleness_mean"]
    pd.testing.assert_frame_equal(resumed.rounds[cols], whole.rounds[cols])


def test_a_run_whose_updates_never_arrive_stops_at_its_time_budget():
    """Devices whose on-periods are far shorter than one download-train-upload cycle:
    every attempt is cut, no update arrives, and the run still ends at the budget."""
    sc = parse_scenario(
        tiny_scenario(
            devices={
                "count": 2,
                "availability": {"model": "markov", "mean_on_s": 0.001, "mean_off_s": 0.001},
            },
            model={"name": "cnn"},
            training={"rounds": 50, "time_budget_s": 1.0},
            algorithm={"name": "fedasync"},
        )
    )
    res = run(sc)
    assert res.stop_reason == "time_budget" and res.rounds["sim_time_s"].iloc[-1] >= 1.0


def test_bernoulli_availability_draws_again_instead_of_stopping():
    res = run(
        parse_scenario(
            tiny_scenario(
                devices={"count": 4, "availability": {"model": "bernoulli", "p": 0.5}},
                training={"rounds": 40},
                algorithm={"name": "fedasync", "concurrency": 1},
            )
        )
    )
    assert len(res.rounds) == 40 and (res.rounds["updates"] == 1).all()


@pytest.mark.parametrize("name", ["fedasync", "fedbuff"])
def test_rows_account_for_the_steps_that_run_across_them(name):
    """Raspberry Pis training the CNN for seconds while the server publishes several
    updates: each row's time split sums to its window and its sub-frames fit in it, a
    device's compute counts in every row it spans (clipped), and the rows' energy adds
    up to the devices table's (idle included) — steps across rows were charged as idle
    where they ran and their records' whole intervals counted in the row they ended."""
    res = run(
        parse_scenario(
            tiny_scenario(
                devices={
                    "count": 3,
                    "compute_profile": "raspberry_pi_4",
                    "groups": [{"count": 1, "link_profile": p} for p in ("5g", "4g_lte", "3g")],
                },
                data={"dataset": "mnist5k"},
                model={"name": "cnn"},
                training={"rounds": 12},
                algorithm={"name": name},
            )
        )
    )
    rows, computes = res.rounds, res.computes
    t1 = rows["sim_time_s"].to_numpy()
    t0 = t1 - rows["round_time_s"].to_numpy()
    spans = computes[(computes["node"] != "bs")]
    across = [(a, b) for a, b in zip(spans["start_s"], spans["end_s"], strict=True)]
    assert any(((a < t0) & (b > t0)).any() for a, b in across)  # (steps across rows)
    split = rows[["compute_time_s", "comm_time_s", "overlap_time_s", "idle_time_s"]].sum(axis=1)
    assert np.allclose(split, rows["round_time_s"], rtol=1e-9, atol=1e-9)
    assert (rows["subframes"] <= np.ceil(rows["round_time_s"] / 1e-3 + 1e-9)).all()
    # the compute time inside each row (the server's too), by hand from the records
    # clipped to it: their union is at most their sum, and none only when none
    for k in range(len(rows)):
        ends, starts = computes["end_s"], computes["start_s"]
        inside = np.clip(ends, t0[k], t1[k]) - np.clip(starts, t0[k], t1[k])
        busy = rows[["compute_time_s", "overlap_time_s"]].iloc[k].sum()
        assert busy <= inside.sum() + 1e-9 and (inside.sum() == 0) == (busy == 0)
    devices = res.devices[res.devices["node"] != "bs"]
    assert rows["device_energy_j"].sum() == pytest.approx(devices["energy_j"].sum(), rel=1e-12)
    assert rows["device_idle_energy_j"].sum() == pytest.approx(
        devices["idle_energy_j"].sum(), rel=1e-12
    )


def test_a_resource_policy_picks_each_slots_device():
    """Under ``round_robin`` with one slot the devices take turns in index order (each
    pick a decision recorded in the policy table); under ``best_channel`` with one slot
    the device with the fastest expected uplink is picked every time."""
    base = tiny_scenario(
        devices={"count": 4},
        cell={"link": {"mode": "ofdma", "channel_profile": "feddif", "fading": "none"}},
        training={"rounds": 6},
        algorithm={"name": "fedasync", "concurrency": 1},
    )
    turns = run(parse_scenario({**base, "policy": {"name": "round_robin"}}))
    ups = turns.transfers[turns.transfers["kind"] == "model_up"].sort_values("end_s")
    assert list(ups["src"][:6]) == ["ue0", "ue1", "ue2", "ue3", "ue0", "ue1"]
    table = turns.tables["policy"]
    picked = table[table["selected"]].sort_values("round")
    assert list(picked["device"][:6]) == list(ups["src"][:6])
    assert (picked["outcome"][:6] == "arrived").all()
    assert (table.groupby("round").size() == 4).all()  # (one slot: every device idle)
    best = run(parse_scenario({**base, "policy": {"name": "best_channel"}}))
    world = World(parse_scenario(base))
    rate = {d.name: world.states.expected_rate_bps(d, "uplink", 1.0) for d in world.devices}
    world.close()
    ups = best.transfers[best.transfers["kind"] == "model_up"]
    assert set(ups["src"]) == {max(rate, key=rate.get)}


def test_updates_lost_in_an_outage_never_reach_the_async_server():
    """θ between the uploads' SINRs: FedAsync absorbs exactly the updates at or above θ
    (one server update each); the lost ones are ``outage`` rows in the policy table."""
    cell = {
        "link": {
            "mode": "ofdma",
            "channel_profile": "feddif",
            "fading": "rayleigh",
            "coherence_time_s": 0.05,
            "fading_draw": "per_link",
        }
    }
    base = tiny_scenario(
        devices={"count": 4}, cell=cell, training={"rounds": 5}, algorithm={"name": "fedasync"}
    )
    free = run(parse_scenario(base))
    ups = free.transfers[free.transfers["kind"] == "model_up"].sort_values("end_s")
    theta = float(ups["mean_snr_db"].median())
    ruled = run(parse_scenario({**base, "policy": {"outage_sinr_db": theta}}))
    ups = ruled.transfers[ruled.transfers["kind"] == "model_up"].sort_values("end_s")
    turns = run(
        parse_scenario({**base, "policy": {"name": "round_robin", "outage_sinr_db": theta}})
    )
    up = turns.transfers[turns.transfers["kind"] == "model_up"]
    rows = turns.tables["policy"].query("selected and outcome != ''")
    by_device = {d: g.sort_values("round") for d, g in rows.groupby("device")}
    for device, g in up.groupby("src"):  # (each device's uploads in order: its picks')
        lost = (g.sort_values("end_s")["mean_snr_db"] < theta).tolist()
        assert (by_device[device]["outcome"] == "outage").tolist()[: len(lost)] == lost
    passed = ups[ups["mean_snr_db"] >= theta]
    assert 0 < len(passed) < len(ups)
    # (each update absorbed is one server update: round k ends at the k-th passed upload)
    ends = ruled.rounds["sim_time_s"].to_numpy()
    assert np.all(ends >= passed["end_s"].to_numpy()[: len(ends)] - 1e-12)
    assert len(passed) >= len(ruled.rounds)
    before = ups[ups["end_s"] <= ends[-1] + 1e-12]
    assert (before["mean_snr_db"] >= theta).sum() == len(ruled.rounds)


def test_an_async_run_whose_every_update_is_lost_ends():
    scenario = parse_scenario(
        tiny_scenario(
            devices={"count": 2},
            cell={"link": {"mode": "ofdma", "channel_profile": "feddif"}},
            training={"rounds": 3},
            algorithm={"name": "fedasync"},
            policy={"outage_sinr_db": 60.0},
        )
    )
    result = run(scenario)
    assert (result.rounds["num_clients"] == 0).all()
