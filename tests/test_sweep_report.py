"""`netfl report SWEEP_DIR`: groups over seeds, mean ± std tables, figures, index.html."""

from __future__ import annotations

import math
import os
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
import yaml

from netfl.cli.app import main
from netfl.sweep.report import group_runs
from netfl.sweep.run import expand, load_sweep, run_sweep
from tests.conftest import tiny_scenario

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sweep")
    base = tiny_scenario(
        training={"rounds": 3, "batch_size": 16, "lr": 0.1},
        learning={"mode": "learn", "num_threads": 1},
    )
    (tmp / "base.yaml").write_text(yaml.safe_dump(base))
    spec = {
        "name": "rep",
        "base": "base.yaml",
        "variants": {
            "fedavg": {"algorithm": {"name": "fedavg"}},
            "fd": {"algorithm": {"name": "fd"}},
            "broken": {"data": {"dataset": "mnist", "root": "/nowhere"}},
        },
        "seeds": [1, 2],
        "target_accuracy": 0.3,
    }
    (tmp / "s.sweep.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    run_sweep(expand(*load_sweep(tmp / "s.sweep.yaml")), tmp / "out", target_accuracy=0.3)
    return tmp / "out"


def test_runs_group_over_seeds_only():
    index = pd.DataFrame(
        {
            "run": ["a-x=1-seed1", "a-x=1-seed2", "a-x=2-seed1", "b-x=1-seed1"],
            "variant": ["a", "a", "a", "b"],
            "x": [1, 1, 2, 1],
            "seed": [1, 2, 1, 1],
            "status": ["complete"] * 4,
        }
    )
    assert group_runs(index) == {
        "a-x=1": ["a-x=1-seed1", "a-x=1-seed2"],
        "a-x=2": ["a-x=2-seed1"],
        "b-x=1": ["b-x=1-seed1"],
    }
    assert group_runs(index[index["run"].str.startswith("a-x=1")]) == {
        "all": ["a-x=1-seed1", "a-x=1-seed2"]
    }


def test_report_tables_and_figures(sweep_dir, capsys):
    assert main(["report", str(sweep_dir)]) == 0
    printed = capsys.readouterr().out.split()
    out = sweep_dir / "report"
    for name in (
        "summary.csv",
        "stragglers.csv",
        "accuracy_vs_round.png",
        "accuracy_vs_time.png",
        "cost_to_target.png",
        "latency_breakdown.png",
        "index.html",
    ):
        assert str(out / name) in printed and (out / name).stat().st_size > 0
    summary = pd.read_csv(out / "summary.csv").set_index("group")
    index = pd.read_csv(sweep_dir / "sweep.csv")
    assert list(summary.index) == ["fedavg", "fd", "broken"]
    assert summary.loc["broken", "complete"] == 0 and summary.loc["fd", "complete"] == 2
    for group in ("fedavg", "fd"):  # mean and sample std over the two seeds, from the index
        values = index.loc[index["variant"] == group, "final_accuracy"]
        assert summary.loc[group, "final_accuracy_mean"] == pytest.approx(values.mean())
        assert summary.loc[group, "final_accuracy_std"] == pytest.approx(values.std(ddof=1))
        assert np.isfinite(summary.loc[group, "time_to_target_s_mean"])
    stragglers = pd.read_csv(out / "stragglers.csv")  # (complete runs only)
    assert list(stragglers["run"]) == list(index.loc[index["status"] == "complete", "run"])
    page = (out / "index.html").read_text()
    assert "broken-seed1" in page and "UserError" in page and "±" in page
    assert page.count("<img ") == 4


def test_index_html_renders_in_headless_chromium(sweep_dir, tmp_path):
    if CHROMIUM is None:
        if os.environ.get("NETFL_REQUIRE_CHROMIUM"):
            pytest.fail("NETFL_REQUIRE_CHROMIUM is set but no chromium is installed")
        pytest.skip("chromium is not installed (CI installs it: .ci/run)")
    main(["report", str(sweep_dir), "--out", str(tmp_path / "r")])
    dom = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            (tmp_path / "r" / "index.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    # the page's own script counts the figures that loaded with a size
    assert 'data-images-loaded="4/4"' in dom
    assert "fedavg" in dom and "<table>" in dom


def test_a_damaged_sweep_directory_is_one_line(tmp_path, capsys):
    (tmp_path / "sweep.csv").write_text("not,an\nindex\n")
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a readable sweep directory" in err[0]


def test_a_timing_only_sweep_reports_costs_without_accuracy(tmp_path):
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(tiny_scenario()))
    spec = {"name": "t", "base": "base.yaml", "grid": {"devices.count": [2, 4]}, "seeds": [1, 2]}
    (tmp_path / "t.sweep.yaml").write_text(yaml.safe_dump(spec))
    run_sweep(expand(*load_sweep(tmp_path / "t.sweep.yaml")), tmp_path / "out")
    assert main(["report", str(tmp_path / "out")]) == 0
    out = tmp_path / "out" / "report"
    assert not (out / "accuracy_vs_round.png").exists()
    assert (out / "cost_to_target.png").is_file() and (out / "latency_breakdown.png").is_file()
    assert (out / "devices_count_lines.png").is_file()
    page = (out / "index.html").read_text()
    assert "accuracy" not in page and page.count("<img ") == 3
    summary = pd.read_csv(out / "summary.csv").set_index("group")
    assert list(summary.index) == ["count=2", "count=4"]
    # twice the devices, twice the bits (same per-device model traffic), same seeds
    assert summary.loc["count=4", "bits_mean"] == pytest.approx(
        2 * summary.loc["count=2", "bits_mean"]
    )


def test_a_grid_sweep_gets_a_line_figure_per_grid_parameter(tmp_path):
    """2 variants × 3 values × 2 seeds: the line figure's points are, per variant and
    value, the mean and sample std of the index's runs (checked by hand here)."""
    from netfl.sweep.report import grid_parameters, line_stats

    (tmp_path / "base.yaml").write_text(yaml.safe_dump(tiny_scenario()))
    spec = {
        "name": "g",
        "base": "base.yaml",
        "variants": {
            "a-long-variant-name-that-needs-wrapping": {"algorithm": {"name": "fedavg"}},
            "b": {"algorithm": {"name": "fedavg", "fraction": 0.5}},
        },
        "grid": {"devices.count": [2, 4, 6]},
        "seeds": [1, 2],
    }
    (tmp_path / "g.sweep.yaml").write_text(yaml.safe_dump(spec))
    run_sweep(expand(*load_sweep(tmp_path / "g.sweep.yaml")), tmp_path / "out")
    assert main(["report", str(tmp_path / "out")]) == 0
    out = tmp_path / "out" / "report"
    assert (out / "devices_count_lines.png").stat().st_size > 0
    index = pd.read_csv(tmp_path / "out" / "sweep.csv")
    assert grid_parameters(index) == ["devices.count"]
    stats = line_stats(index, "devices.count", "bits")
    assert len(stats) == 6 and set(stats["n"]) == {2}
    for _, row in stats.iterrows():
        runs = index[(index["variant"] == row["line"]) & (index["devices.count"] == row["x"])]
        assert row["mean"] == pytest.approx(runs["bits"].mean())
        assert row["std"] == pytest.approx(runs["bits"].std(ddof=1))
    assert list(stats.loc[stats["line"] == "b", "x"]) == [2, 4, 6]
    page = (out / "index.html").read_text()
    assert "devices_count_lines" in page


def test_long_group_labels_are_wrapped_at_their_separators():
    from netfl.sweep.report import readable

    label = "a-long-variant-name-that-needs-wrapping-count=4"
    lines = readable(label, 12).split("\n")
    assert len(lines) > 2 and all(len(x) <= 14 for x in lines)
    assert "".join(lines) == label
    assert readable("short") == "short"


@pytest.mark.parametrize(
    "key, value, label",
    [
        ("cell.link.bandwidth_hz", 2e7, "bandwidth=20 MHz"),
        ("cell.link.bandwidth_hz", 1.5e9, "bandwidth=1.5 GHz"),
        ("cell.radius_m", 250.0, "radius=250 m"),
        ("cell.link.coherence_time_s", 0.005, "coherence_time=5 ms"),
        ("cell.link.ue_tx_power_dbm", 23, "ue_tx_power=23 dBm"),
        ("algorithm.min_efficiency_bps_per_hz", 0.5, "min_efficiency_bps_per_hz=0.5"),
        ("devices.count", 20, "count=20"),
        ("algorithm.name", "fedavg", "name=fedavg"),
    ],
)
def test_parameters_read_with_their_units(key, value, label):
    from netfl.sweep.labels import param_label

    assert param_label(key, value, key.split(".")[-1]) == label


def test_a_bandwidth_sweep_reads_in_mhz_in_numeric_order(tmp_path):
    """Grid values written 100, 20, 40 MHz: run names ``bandwidth=100MHz-…``, groups and
    lines in numeric order (20 before 100), sweep.csv with round time and starved
    devices, each run's row linking its figures, its scenario.yaml naming the RBs it ran."""
    base = tiny_scenario(
        devices={"count": 3},
        cell={"radius_m": 150, "link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        training={"rounds": 1},
        outputs={"figures": True, "progress": False},
    )
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    spec = {
        "name": "bw",
        "base": "base.yaml",
        "grid": {"cell.link.bandwidth_hz": [100e6, 20e6, 40e6]},
    }
    (tmp_path / "bw.sweep.yaml").write_text(yaml.safe_dump(spec))
    runs = expand(*load_sweep(tmp_path / "bw.sweep.yaml"))
    assert [r.name for r in runs] == ["bandwidth=100MHz", "bandwidth=20MHz", "bandwidth=40MHz"]
    run_sweep(runs, tmp_path / "out")
    index = pd.read_csv(tmp_path / "out" / "sweep.csv")
    assert {"round_time_s", "round_time_max_s", "starved_devices"} <= set(index.columns)
    assert (index["round_time_s"] > 0).all()
    assert list(group_runs(index)) == ["bandwidth=20 MHz", "bandwidth=40 MHz", "bandwidth=100 MHz"]
    resolved = yaml.safe_load((tmp_path / "out" / "bandwidth=20MHz" / "scenario.yaml").read_text())
    assert resolved["cell"]["link"]["num_rbs"] == 51  # TS 38.101-1: 20 MHz at 30 kHz
    assert main(["report", str(tmp_path / "out")]) == 0
    report = tmp_path / "out" / "report"
    summary = pd.read_csv(report / "summary.csv")
    assert list(summary["group"]) == ["bandwidth=20 MHz", "bandwidth=40 MHz", "bandwidth=100 MHz"]
    assert "round_time_s_mean" in summary and "starved_devices_mean" in summary
    page = (report / "index.html").read_text()
    assert 'href="../bandwidth=20MHz/figures/device_timeline.png"' in page


def test_stragglers_table_names_each_runs_slow_device_and_what_it_cost(tmp_path):
    """One device on 3G among 5G ones, dedicated links, a 1.2 Mbit model: it is every
    round's straggler, and it ends each round after the next device by its extra
    airtime, 1.2 Mbit / 0.4 Mbit/s + 1.2 Mbit / 3 Mbit/s − (1.2 / 20 + 1.2 / 200) s
    (the same compute on every device)."""
    base = tiny_scenario(
        devices={"count": 4, "link_profile": "5g", "groups": [{"count": 1, "link_profile": "3g"}]},
        model={"name": "logreg", "size_bits": 1.2e6},
        training={"rounds": 3},
    )
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    spec = {"name": "st", "base": "base.yaml", "seeds": [1, 2]}
    (tmp_path / "st.sweep.yaml").write_text(yaml.safe_dump(spec))
    run_sweep(expand(*load_sweep(tmp_path / "st.sweep.yaml")), tmp_path / "out")
    assert main(["report", str(tmp_path / "out")]) == 0
    table = pd.read_csv(tmp_path / "out" / "report" / "stragglers.csv")
    assert list(table["seed"]) == [1, 2] and set(table["group"]) == {"all"}
    lead_s = 1.2e6 / 0.4e6 + 1.2e6 / 3e6 - 1.2e6 / 20e6 - 1.2e6 / 200e6
    for _, row in table.iterrows():
        run = tmp_path / "out" / row["run"]
        devices = pd.read_csv(run / "devices.csv")
        (slow,) = devices.loc[devices["link_profile"] == "3g", "node"]
        rounds = pd.read_csv(run / "rounds.csv")
        assert row["straggler"] == slow and row["straggler_step"] == "upload"
        assert row["rounds"] == row["straggler_rounds"] == 3
        assert row["straggler_time_share"] == pytest.approx(1.0)
        assert row["round_time_s"] == pytest.approx(rounds["round_time_s"].mean())
        assert row["straggler_round_time_s"] == pytest.approx(row["round_time_s"])
        assert row["straggler_lead_s"] == pytest.approx(lead_s, rel=1e-6)
        assert row["straggler_lead_share"] == pytest.approx(lead_s / row["round_time_s"])
    page = (tmp_path / "out" / "report" / "index.html").read_text()
    assert "Stragglers (per run)" in page and 'href="stragglers.csv"' in page
    assert page.count(f"<td>{slow}</td>") == 2 and f"<td>{lead_s:.4g}</td>" in page


def test_a_round_without_a_straggler_counts_the_device_that_finished_last(tmp_path):
    """``rounds.csv`` names no straggler (no device step on the critical path): the
    device whose last step of the round ended last counts, its lead over the next."""
    from netfl.sweep.stragglers import run_stragglers

    pd.DataFrame({"node": ["bs", "ue0", "ue1"], "kind": ["bs", "pue", "pue"]}).to_csv(
        tmp_path / "devices.csv", index=False
    )
    transfers = [(0, "ue0", "cell0", 4.0), (0, "ue1", "cell1", 7.0), (1, "ue0", "cell0", 19.0)]
    transfers.append((1, "ue1", "cell1", 12.0))
    pd.DataFrame(transfers, columns=["round", "src", "dst", "end_s"]).to_parquet(
        tmp_path / "transfers.parquet"
    )
    computes = [(0, "ue0", 2.0), (0, "bs", 7.5), (1, "ue1", 13.0), (1, "bs", 20.0)]
    pd.DataFrame(computes, columns=["round", "node", "end_s"]).to_parquet(
        tmp_path / "computes.parquet"
    )
    rounds = pd.DataFrame({"round": [0, 1], "round_time_s": [7.5, 12.5], "straggler": ["", "ue0"]})
    row = run_stragglers(rounds, tmp_path)
    # round 0: ue1 ends at 7 s, ue0 at 4 s; round 1: ue0 at 19 s, ue1 at 13 s
    assert row["straggler_rounds"] == 1 and row["straggler_time_share"] == pytest.approx(12.5 / 20)
    assert row["straggler"] == "ue0"  # (as often as ue1, in the longer round)
    assert row["straggler_lead_s"] == pytest.approx(6.0)
    assert row["straggler_lead_share"] == pytest.approx(6.0 / 20)
    without_tables = run_stragglers(rounds)
    assert without_tables["straggler"] == "ue0" and math.isnan(without_tables["straggler_lead_s"])
