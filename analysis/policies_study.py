"""Resource-policy study (a): FedCS vs FedLim vs FedAvg on one LTE cell (public API).

Nishio & Yonetani, "Client Selection for Federated Learning with Heterogeneous
Resources in Mobile Edge", ICC 2019: with a round deadline, FedCS (``policy: fedcs``)
keeps the most asked clients whose download, update and upload are expected to fit it;
FedLim (``policy: random`` with the same deadline) sends every asked client and loses
the late ones; FedAvg waits for every client. Runs ``scenarios/policies/compare.sweep.yaml``
with ``netfl.sweep`` and draws from the run directories:

- test accuracy against simulated time, mean ± std over seeds, per variant
  (``accuracy_vs_time.png``);
- per variant (mean ± std over seeds): the simulated time and device energy to a fixed
  target accuracy, the final accuracy, the rounds run, the updates aggregated and lost
  per round (``summary.csv``, per run ``runs.csv``), and each variant's time to the
  target over FedAvg's on the same seed (``paired.csv``);
- for FedCS, how its expected client times compare with what happened (``policy``
  table).

    .venv/bin/python analysis/policies_study.py [--workers 1] [--target 0.9]
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from hierfavg_study import paired, summary  # noqa: E402  (the same per-variant tables)
from study_bands import band_on_time  # noqa: E402
from study_output import (  # noqa: E402
    run_sweep_file,
    save_figure,
    show_tables,
    study_parser,
    write_tables,
)

from netfl import read_run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "analysis" / "policies"
VARIANTS = ["fedcs", "fedlim", "fedavg"]


def run_study(workers: int, out: Path) -> tuple[pd.DataFrame, Path]:
    return run_sweep_file("policies/compare.sweep.yaml", workers, out)


def per_run(index: pd.DataFrame, where: Path, target: float) -> pd.DataFrame:
    rows = []
    for _, row in index[index["status"] == "complete"].iterrows():
        run = read_run(where / row["run"])
        r = run.rounds
        hit = r.index[r["accuracy"] >= target]
        upto = r.loc[: hit[0]] if len(hit) else None
        policy = run.tables["policy"]
        chosen = policy[policy["selected"]]
        arrived = chosen[chosen["outcome"] == "arrived"]
        rows.append(
            {
                "variant": row["variant"],
                "seed": row["seed"],
                "rounds": len(r),
                "final_accuracy": float(r["accuracy"].dropna().iloc[-1]),
                "time_to_target_s": float(r.loc[hit[0], "sim_time_s"]) if len(hit) else np.nan,
                "energy_to_target_j": float(upto["device_active_energy_j"].sum())
                if upto is not None
                else np.nan,
                "device_energy_j": float(r["device_active_energy_j"].sum()),
                "round_time_s": float(r["round_time_s"].mean()),
                "selected_per_round": len(chosen) / len(r),
                "aggregated_per_round": len(arrived) / len(r),
                "late_per_round": float((chosen["outcome"] == "late").sum()) / len(r),
                "expected_minus_actual_s": float(
                    (arrived["expected_time_s"] - arrived["actual_time_s"]).median()
                ),
            }
        )
    return pd.DataFrame(rows)


def figure(index: pd.DataFrame, where: Path, target: float) -> None:
    fig, ax = plt.subplots(figsize=(6.5, 4))
    done = index[index["status"] == "complete"]
    for c, variant in enumerate(v for v in VARIANTS if v in set(done["variant"])):
        curves = [read_run(where / n).rounds for n in done.loc[done["variant"] == variant, "run"]]
        band_on_time(ax, curves, f"C{c}", f"{variant} ({len(curves)} seeds)")
    ax.axhline(target, color="k", ls=":", lw=1, label=f"target {target:g}")
    ax.set_xlabel("simulated time [s]")
    ax.set_ylabel("test accuracy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, OUT, "accuracy_vs_time.png")


def main() -> None:
    args = study_parser(__doc__, "policies_study", 0.9).parse_args()
    index, where = run_study(args.workers, Path(args.out))
    runs = per_run(index, where, args.target)
    table = summary(runs)
    table = table.set_index("variant").reindex(VARIANTS).reset_index()
    ratios = paired(runs)
    figure(index, where, args.target)
    write_tables(OUT, runs=runs, summary=table, paired=ratios)
    show_tables(table, ratios, OUT, 250)


if __name__ == "__main__":
    main()
