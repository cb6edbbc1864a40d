"""Runs end to end: determinism, timing vs learning, conservation, stop rules."""

from __future__ import annotations

import pandas as pd
import pytest

from netfl import read_run, write_run
from netfl.loading.scenarios import parse_scenario
from netfl.sim.runner import run
from tests.conftest import tiny_scenario

LEARNING_ONLY = ["accuracy", "loss", "train_loss"]


def _run(**sections):
    return run(parse_scenario(tiny_scenario(**sections)))


def test_same_seed_identical_rounds_csv(tmp_path):
    sc = {
        "data": {"partition": {"scheme": "dirichlet", "alpha": 0.3}},
        "algorithm": {"name": "fedavg", "fraction": 0.5},
        "training": {"rounds": 4},
    }
    a = write_run(_run(**sc), tmp_path / "a")
    b = write_run(_run(**sc), tmp_path / "b")
    assert (a / "rounds.csv").read_bytes() == (b / "rounds.csv").read_bytes()
    c = _run(**{**sc, "seed": 4})
    assert not c.rounds.equals(read_run(a).rounds)


def test_timing_only_columns_equal_learning_mode():
    sc = {
        "algorithm": {"name": "fedavg", "fraction": 0.5},
        "training": {"rounds": 3},
        "data": {"partition": {"scheme": "dirichlet", "alpha": 0.5}},
    }
    timing = _run(**sc, learning={"mode": "timing"})
    learn = _run(**sc, learning={"mode": "learn"})
    assert learn.rounds["accuracy"].notna().all() and timing.rounds["accuracy"].isna().all()
    pd.testing.assert_frame_equal(
        timing.rounds.drop(columns=LEARNING_ONLY), learn.rounds.drop(columns=LEARNING_ONLY)
    )
    pd.testing.assert_frame_equal(timing.transfers, learn.transfers)
    pd.testing.assert_frame_equal(timing.computes, learn.computes)


def test_fedavg_round_time_is_analytic():
    """Dedicated links: device k ends at S/down + F·n_k·E/rate + S/up; the round at the
    slowest device's end plus the server's aggregation time."""
    res = _run(training={"rounds": 1, "local_epochs": 2})
    info = res.info
    size = info["model_size_bits"]
    flops = info["train_flops_per_sample"]
    from netfl.compute import get_compute_profile

    up, down = 5e6, 20e6  # 4g_lte
    rate = get_compute_profile("raspberry_pi_4").effective_flops_per_s
    server_rate = get_compute_profile("edge_server_cpu").effective_flops_per_s
    dev = res.devices[res.devices.kind == "pue"]
    ends = {
        r.node: size / down + flops * r.num_samples * 2 / rate + size / up for r in dev.itertuples()
    }
    uploads = res.transfers[res.transfers.kind == "model_up"].set_index("src")["end_s"]
    for node, end in ends.items():
        assert uploads[node] == pytest.approx(end, rel=1e-12)
    agg = 2.0 * info["model_params"] * len(dev) / server_rate
    assert res.rounds["round_time_s"].iloc[0] == pytest.approx(max(ends.values()) + agg, rel=1e-12)


def test_bits_models_and_energy_are_conserved():
    res = _run(algorithm={"name": "fedavg", "fraction": 0.5}, training={"rounds": 3})
    rounds, tr, co, dev = res.rounds, res.transfers, res.computes, res.devices
    size = res.info["model_size_bits"]
    assert (rounds["uplink_bits"] == rounds["num_clients"] * size).all()
    assert (rounds["downlink_bits"] == rounds["num_clients"] * size).all()
    assert (rounds["models_sent"] == 2 * rounds["num_clients"]).all()
    assert rounds["uplink_bits"].sum() + rounds["downlink_bits"].sum() == tr["size_bits"].sum()
    devices = dev[dev.kind == "pue"]
    is_dev = set(devices["node"])
    from_records = (
        co[co.node.isin(is_dev)]["energy_j"].sum()
        + tr[tr.src.isin(is_dev)]["tx_energy_j"].sum()
        + tr[tr.dst.isin(is_dev)]["rx_energy_j"].sum()
        + devices["tail_energy_j"].sum()  # RRC tails belong to no transfer
    )
    assert devices["tail_energy_j"].sum() > 0
    assert rounds["device_tail_energy_j"].sum() == pytest.approx(devices["tail_energy_j"].sum())
    assert rounds["device_active_energy_j"].sum() == pytest.approx(from_records, rel=1e-12)
    assert devices["active_energy_j"].sum() == pytest.approx(from_records, rel=1e-12)
    idle = devices["idle_energy_j"].sum()
    assert idle > 0 and rounds["device_idle_energy_j"].sum() == pytest.approx(idle, rel=1e-12)
    assert rounds["device_energy_j"].sum() == pytest.approx(from_records + idle, rel=1e-12)
    parts = rounds[["compute_time_s", "comm_time_s", "overlap_time_s", "idle_time_s"]].sum(axis=1)
    assert parts.to_numpy() == pytest.approx(rounds["round_time_s"].to_numpy(), rel=1e-9)


def test_sampling_fraction_and_seeded_selection():
    res = _run(
        devices={"count": 10}, algorithm={"name": "fedavg", "fraction": 0.3}, training={"rounds": 5}
    )
    assert (res.rounds["num_clients"] == 3).all()
    chosen = res.transfers[res.transfers.kind == "model_up"].groupby("round")["src"].apply(set)
    assert len({frozenset(s) for s in chosen}) > 1  # selection differs across rounds


def test_stop_on_time_budget():
    one = _run(training={"rounds": 1})
    budget = 1.5 * one.rounds["round_time_s"].iloc[0]
    res = _run(training={"rounds": 10, "time_budget_s": budget})
    assert res.stop_reason == "time_budget" and len(res.rounds) == 2


def test_stop_on_target_accuracy_and_eval_every():
    res = _run(
        learning={"mode": "learn"},
        model={"name": "logreg"},
        training={
            "rounds": 30,
            "lr": 0.1,
            "momentum": 0.5,
            "target_accuracy": 0.8,
            "eval_every": 2,
        },
    )
    assert res.stop_reason == "target_accuracy" and len(res.rounds) < 30
    assert res.rounds["accuracy"].iloc[-1] >= 0.8
    assert res.rounds["accuracy"].iloc[::2].isna().all()  # rounds 0, 2, ... not evaluated


def test_learning_improves_accuracy():
    res = _run(
        learning={"mode": "learn"},
        model={"name": "fcn"},
        training={"rounds": 3, "lr": 0.05, "momentum": 0.9},
    )
    acc = res.rounds["accuracy"]
    assert acc.iloc[-1] > 0.8 and acc.iloc[-1] > acc.iloc[0] - 0.05


def test_manifest_records_the_torch_thread_count(tmp_path):
    """The threads a training job ran on; null for a timing run (no torch work)."""
    import json

    import torch

    from netfl.loading.scenarios import parse_scenario
    from netfl.output.rundir import write_run
    from netfl.sim.runner import run
    from tests.conftest import tiny_scenario

    # (logistic regression's steps are small: one thread, netfl.core.threads.auto_threads)
    for mode, expected in [("learn", 1), ("timing", None)]:
        scenario = tiny_scenario(training={"rounds": 1}, learning={"mode": mode})
        d = write_run(run(parse_scenario(scenario)), tmp_path / mode, figures=False)
        manifest = json.loads((d / "manifest.json").read_text())
        assert manifest["torch_num_threads"] == expected
        assert manifest["versions"]["torch"] == torch.__version__  # (read, not imported)


def test_a_runs_thread_count_does_not_outlive_it():
    """``learning.num_threads`` holds while the run lasts; afterwards the caller's torch
    thread count is back (a notebook's next cell, a benchmark's next loop)."""
    import torch

    from netfl.loading.scenarios import parse_scenario
    from netfl.sim.runner import run
    from tests.conftest import tiny_scenario

    before = torch.get_num_threads()
    during = 1 if before != 1 else 2  # (another count, within this machine's CPUs)
    seen = []
    result = run(
        parse_scenario(
            tiny_scenario(training={"rounds": 1}, learning={"mode": "learn", "num_threads": during})
        ),
        on_round=lambda row: seen.append(torch.get_num_threads()),
    )
    assert seen == [during] and result.info["torch_num_threads"] == during
    assert torch.get_num_threads() == before


def test_every_table_and_column_a_run_writes_is_documented():
    """docs/tables.md names every table and column of runs that between them produce
    the radio's, the world's and the mobility's tables and FedDif's (an OFDMA network
    with moving devices, D2D diffusion, devices that leave), collected from the run's
    table producers without a name twice."""
    import re
    from pathlib import Path

    from tests.radio.test_corpus import _scenario

    doc = (Path(__file__).resolve().parents[1] / "docs" / "tables.md").read_text()
    named = set(re.findall(r"`([a-z_0-9*]+)(?:\.csv|\.parquet)?`", doc))

    def documented(column: str) -> bool:  # (`flower_train_*`: a family of columns)
        return column in named or any(n.endswith("*") and column.startswith(n[:-1]) for n in named)

    missing = []
    for name in ("network_moving", "feddif_d2d", "markov_departures"):
        result = run(_scenario(name))
        frames = {
            "rounds": result.rounds,
            "transfers": result.transfers,
            "computes": result.computes,
            "devices": result.devices,
            **result.tables,
        }
        for table, frame in frames.items():
            if table not in named:
                missing.append(table)
            missing += [f"{table}.{c}" for c in frame.columns if not documented(c)]
    assert missing == [], missing


def test_an_interrupt_after_a_rows_end_keeps_that_rows_records():
    """Ctrl-C in the progress callback of round 1 (its row is complete): the run returns
    both rows marked interrupted, and round 1's records stay with its row (only a round
    in progress is dropped), so its time split and sub-frames are its own."""
    from netfl import parse_scenario, run
    from tests.conftest import tiny_scenario

    def on_round(row):
        if row["round"] == 1:
            raise KeyboardInterrupt

    res = run(
        parse_scenario(tiny_scenario(training={"rounds": 4})),
        on_round=on_round,
        partial_on_interrupt=True,
    )
    assert res.stop_reason == "interrupted" and list(res.rounds["round"]) == [0, 1]
    assert set(res.transfers["round"]) == {0, 1}
    assert (res.rounds["subframes"] > 0).all() and (res.rounds["comm_time_s"] > 0).all()


@pytest.mark.parametrize("during_round", [False, True])
def test_an_interrupted_runs_devices_table_ends_with_its_last_finished_round(
    during_round, monkeypatch
):
    """Ctrl-C after round 1's row, or in the middle of round 2 (dropped): ``devices.csv``
    is the same as that of a run of 2 rounds — energy and idle time up to the end of the
    last finished round, nothing of the dropped one."""
    import netfl.sim.runner
    from netfl import parse_scenario, run
    from tests.conftest import tiny_scenario

    whole = run(parse_scenario(tiny_scenario(training={"rounds": 2})))
    real = netfl.sim.runner.simulate_round

    def interrupted(world, algorithm, r):
        if r == 2:  # (half-way through round 2's download: energy charged, then Ctrl-C)
            world.env.process(algorithm.round(r))
            world.env.run(until=world.env.now + 0.5 * whole.rounds["round_time_s"].iloc[0])
            raise KeyboardInterrupt
        return real(world, algorithm, r)

    def on_round(row):
        if row["round"] == 1 and not during_round:
            raise KeyboardInterrupt

    monkeypatch.setattr(netfl.sim.runner, "simulate_round", interrupted)
    cut = run(
        parse_scenario(tiny_scenario(training={"rounds": 4})),
        on_round=on_round,
        partial_on_interrupt=True,
    )
    assert cut.stop_reason == "interrupted" and len(cut.rounds) == 2
    cols = [c for c in whole.devices.columns if c.endswith(("_j", "_s"))]
    pd.testing.assert_frame_equal(cut.devices[cols], whole.devices[cols])
    assert whole.devices["energy_j"].sum() > 0


def test_devices_on_an_ofdma_cell_name_no_link_profile():
    """An OFDMA cell rates each device from its channel: devices.csv names no fixed-rate
    link profile there (it named the unused default, 4g_lte); a fixed-rate link does."""
    from netfl import parse_scenario, run
    from tests.conftest import tiny_scenario

    ofdma = run(parse_scenario(tiny_scenario(cell={"link": {"mode": "ofdma"}}))).devices
    assert (ofdma["link_profile"] == "").all()
    fixed = run(parse_scenario(tiny_scenario())).devices
    assert set(fixed.loc[fixed["kind"] == "pue", "link_profile"]) == {"4g_lte"}
