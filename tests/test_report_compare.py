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
