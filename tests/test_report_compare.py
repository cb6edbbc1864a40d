"""Comparison reports: cost to reach the baseline's peak accuracy."""

from __future__ import annotations

import math

import pandas as pd
import yaml

from netfl.cli.app import main
from netfl.output.figures import cost_to_target
from tests.conftest import tiny_scenario


def _rounds(acc, subframes, d2d):
    n = len(acc)
    return pd.DataFrame(
        {
            "round": range(n),
            "sim_time_s": [0.5 * (i + 1) for i in range(n)],
            "accuracy": acc,
            "subframes": subframes,
            "models_sent": [4 + d for d in d2d],
            "models_downlink": [2] * n,
            "models_uplink": [2] * n,
            "models_d2d": d2d,
            "device_energy_j": [1.0] * n,
        }
    )


def test_cost_to_target_by_hand():
    base = _rounds([0.5, 0.7, 0.65], [10, 10, 10], [0, 0, 0])
    other = _rounds([0.6, 0.72, 0.8], [15, 15, 15], [3, 3, 3])
    never = _rounds([0.1, 0.2, 0.3], [1, 1, 1], [0, 0, 0])
    c = cost_to_target({"fedavg": base, "feddif": other, "bad": never}).set_index("run")
    assert (c["target_accuracy"] == 0.7).all()  # the baseline's peak
    assert c.loc["fedavg", "round"] == 1 and c.loc["fedavg", "subframes"] == 20
    assert c.loc["feddif", "round"] == 1 and c.loc["feddif", "subframes"] == 30
    assert c.loc["feddif", "models_sent"] == 14 and c.loc["feddif", "models_d2d"] == 6
    assert c.loc["feddif", "sim_time_s"] == 1.0
    assert not c.loc["bad", "reached"] and math.isnan(c.loc["bad", "subframes"])
    # another baseline sets another target
    c2 = cost_to_target({"fedavg": base, "feddif": other}, baseline="feddif").set_index("run")
    assert c2["target_accuracy"].iloc[0] == 0.8 and not c2.loc["fedavg", "reached"]


def test_report_compares_fedavg_and_feddif(tmp_path, capsys):
    cell = {"radius_m": 80, "link": {"mode": "ofdma", "channel_profile": "feddif"}}
    dirs = []
    for algo in ("fedavg", "feddif"):
        f = tmp_path / f"{algo}.yaml"
        data = tiny_scenario(
            devices={"count": 5},
            cell=cell,
            data={"dataset": "digits", "partition": {"scheme": "dirichlet", "alpha": 0.3}},
            learning={"mode": "learn"},
            training={"rounds": 3, "batch_size": 16},
            algorithm={"name": algo, "epsilon": 0.0} if algo == "feddif" else {"name": algo},
        )
        f.write_text(yaml.safe_dump(data))
        out = tmp_path / algo
        assert main(["run", str(f), "--out", str(out), "--no-progress"]) == 0
        dirs.append(str(out))
    assert (tmp_path / "feddif" / "diffusion.parquet").is_file()
    assert main(["report", dirs[1]]) == 0
    assert (tmp_path / "feddif" / "figures" / "iid_distance_vs_diffusion_round.png").is_file()
    capsys.readouterr()
    cmp = tmp_path / "cmp"
    assert main(["report", *dirs, "--out", str(cmp)]) == 0
    text = capsys.readouterr().out
    assert "cost to reach" in text and "(fedavg)" in text and "(feddif)" in text
    costs = pd.read_csv(cmp / "cost_to_target.csv")
    assert list(costs["run"]) == ["tiny (fedavg)", "tiny (feddif)"]
    assert costs.loc[0, "reached"] and costs.loc[0, "models_d2d"] == 0
    assert (cmp / "cost_to_target.png").is_file()
    assert main(["report", *dirs, "--out", str(cmp / "x"), "--baseline", "nope"]) == 2


def test_report_on_timing_runs_compares_latency_energy_and_bits(tmp_path, capsys):
    """Two timing runs (no accuracy): no cost-to-target view, no NaN anywhere; the
    latency, energy-by-component and bits/time-split figures and the summary, whose
    numbers are the runs' own (round time mean ± std, energy components adding up)."""
    dirs, rounds = [], {}
    for name, rate in (("fast", "5g"), ("slow", "3g")):
        f = tmp_path / f"{name}.yaml"
        data = tiny_scenario(
            name=name, devices={"count": 3, "link_profile": rate}, training={"rounds": 3}
        )
        f.write_text(yaml.safe_dump(data))
        out = tmp_path / name
        assert main(["run", str(f), "--out", str(out), "--no-progress"]) == 0
        dirs.append(str(out))
        rounds[name] = pd.read_csv(out / "rounds.csv")
    capsys.readouterr()
    cmp = tmp_path / "cmp"
    assert main(["report", *dirs, "--out", str(cmp)]) == 0
    text = capsys.readouterr().out
    assert "cost to reach" not in text and "nan" not in text.lower()
    assert not (cmp / "cost_to_target.csv").exists()
    for png in ("round_latency.png", "energy_by_component.png", "bits_and_time_split.png"):
        assert (cmp / png).stat().st_size > 10_000, png
    summary = pd.read_csv(cmp / "timing_summary.csv").set_index("run")
    assert not summary.drop(columns="straggler_most_often").isna().any().any()
    for name, df in rounds.items():
        row = summary.loc[f"{name} (fedavg)"]
        assert row["round_time_mean_s"] == df["round_time_s"].mean()
        assert row["device_energy_j"] == df["device_energy_j"].sum()
    parts = [c for c in summary.columns if c.startswith("device_") and c.endswith("_energy_j")]
    parts = [c for c in parts if c not in ("device_energy_j", "device_active_energy_j")]
    assert len(parts) == 7
    assert (summary[parts].sum(axis=1) - summary["device_energy_j"]).abs().max() < 1e-6
    assert (
        summary.loc["slow (fedavg)", "round_time_mean_s"]
        > summary.loc["fast (fedavg)", "round_time_mean_s"]
    )
