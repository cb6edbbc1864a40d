"""`netfl report SWEEP_DIR`: groups over seeds, mean ± std tables, figures, index.html."""

from __future__ import annotations

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
