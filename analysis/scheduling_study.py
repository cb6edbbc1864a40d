"""Resource-policy study (b): random scheduling, round robin and proportional fair at a low
and a high SINR threshold (public API).

Yang, Liu, Quek & Poor, "Scheduling Policies for Federated Learning in Wireless
Networks", IEEE TCOM 2020: K of N devices are scheduled per round; an update is received
only if its SINR exceeds θ. Their result: PF converges fastest at a high θ, RR at a low
θ, and convergence slows quickly as θ grows. Runs
``scenarios/policies/scheduling.sweep.yaml`` with ``netfl.sweep`` (``policy: random``,
``round_robin``, ``proportional_fair``; ``policy.outage_sinr_db`` 0 and 10 dB) and draws
from the run directories:

- test accuracy against the round, mean ± std over seeds, per θ
  (``accuracy_vs_round.png``);
- per variant (mean ± std over seeds): the accuracy over the last ten rounds, the
  rounds to a target accuracy, the updates received per round and their share of those
  scheduled, the distinct devices received, the mean round time, the share of uploads
  that start in the fading block the decision sounded (``summary.csv``, per run ``runs.csv``), and each
  policy's last-ten accuracy minus RS's on the same seed and θ (``paired.csv``).

    .venv/bin/python analysis/scheduling_study.py [--workers 1] [--target 0.7]
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from study_bands import band_by_round  # noqa: E402
from study_output import (  # noqa: E402
    run_sweep_file,
    save_figure,
    show_tables,
    study_parser,
    write_tables,
)

from netfl import read_run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "analysis" / "scheduling"
POLICIES = ["rs", "rr", "pf"]
THRESHOLDS = {"low": 0.0, "high": 10.0}


def run_study(workers: int, out: Path) -> tuple[pd.DataFrame, Path]:
    return run_sweep_file("policies/scheduling.sweep.yaml", workers, out)


def per_run(index: pd.DataFrame, where: Path, target: float) -> pd.DataFrame:
    rows = []
    for _, row in index[index["status"] == "complete"].iterrows():
        run = read_run(where / row["run"])
        r = run.rounds
        policy = run.tables["policy"]
        received = policy[policy["outcome"] == "arrived"]
        chosen = policy[policy["selected"]]
        hit = r.index[r["accuracy"] >= target]
        name, level = row["variant"].split("_")
        # did the upload start in the fading block of the round's start (the decision)?
        tr = run.transfers
        start = tr[tr["kind"] == "model_down"].groupby("round")["start_s"].min()
        up = tr[tr["kind"] == "model_up"]
        block = run.scenario.cell.link.coherence_time_s
        same = np.floor(up["start_s"] / block) == np.floor(
            start.loc[up["round"]].to_numpy() / block
        )
        rows.append(
            {
                "variant": row["variant"],
                "policy": name,
                "theta_db": THRESHOLDS[level],
                "seed": row["seed"],
                "last10_accuracy": float(r["accuracy"].tail(10).mean()),
                "rounds_to_target": float(r.loc[hit[0], "round"] + 1) if len(hit) else np.nan,
                "received_per_round": len(received) / len(r),
                "success_rate": len(received) / len(chosen),
                "devices_received": received["device"].nunique(),
                "round_time_s": float(r["round_time_s"].mean()),
                "upload_in_decision_block": float(same.mean()),
            }
        )
    return pd.DataFrame(rows)


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    agg = runs.drop(columns=["seed", "policy", "theta_db"]).groupby("variant").agg(["mean", "std"])
    agg.columns = [f"{a}_{b}" for a, b in agg.columns]
    reached = runs.groupby("variant")["rounds_to_target"].apply(
        lambda s: f"{int(s.notna().sum())}/{len(s)}"
    )
    order = [f"{p}_{level}" for level in THRESHOLDS for p in POLICIES]
    return agg.join(reached.rename("reached")).reindex(order).reset_index()


def paired(runs: pd.DataFrame) -> pd.DataFrame:
    """Per θ and policy, mean ± std over seeds of its last-ten accuracy minus RS's on the
    same seed (the same drop, data split, initial model and fading)."""
    rows = []
    for theta, g in runs.groupby("theta_db"):
        base = g[g["policy"] == "rs"].set_index("seed")["last10_accuracy"]
        for name in POLICIES:
            d = g[g["policy"] == name].set_index("seed")["last10_accuracy"] - base
            rows.append(
                {
                    "theta_db": theta,
                    "policy": name,
                    "minus_rs_mean": d.mean(),
                    "minus_rs_std": d.std(),
                    "wins_over_rs": f"{int((d > 0).sum())}/{int(d.notna().sum())}",
                }
            )
    return pd.DataFrame(rows)


def figure(index: pd.DataFrame, where: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    done = index[index["status"] == "complete"]
    for ax, (level, theta) in zip(axes, THRESHOLDS.items(), strict=True):
        for c, name in enumerate(POLICIES):
            runs = done.loc[done["variant"] == f"{name}_{level}", "run"]
            if runs.empty:
                continue
            curves = [read_run(where / n).rounds for n in runs]
            band_by_round(ax, curves, f"C{c}", f"{name.upper()} ({len(runs)} seeds)")
        ax.set_title(f"θ = {theta:g} dB")
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("test accuracy")
    save_figure(fig, OUT, "accuracy_vs_round.png")


def main() -> None:
    args = study_parser(__doc__, "scheduling_study", 0.7).parse_args()
    index, where = run_study(args.workers, Path(args.out))
    runs = per_run(index, where, args.target)
    table = summary(runs)
    diffs = paired(runs)
    figure(index, where)
    write_tables(OUT, runs=runs, summary=table, paired=diffs)
    show_tables(table, diffs, OUT, 250)


if __name__ == "__main__":
    main()
