"""HierFAVG study: client-edge-cloud FL vs FedAvg through the cloud on 7 cells (public API).

Runs ``scenarios/hierfavg/compare.sweep.yaml`` with ``netfl.sweep`` and draws from
the run directories:

- test accuracy against simulated time, mean ± std over seeds, per variant;
- per variant (mean ± std over seeds): the simulated time and device energy to reach
  a fixed target accuracy, the final accuracy, and the bytes on the access links
  (uplink + downlink) and on the backhaul, per run;
- per variant, its ratio to FedAvg on the same seed (mean ± std): time and device
  energy to the target, device energy over the run (``paired.csv``).

    .venv/bin/python analysis/hierfavg_study.py [--workers 1] [--target 0.85]
"""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from study_output import (  # noqa: E402
    run_sweep_file,
    save_figure,
    show_tables,
    study_parser,
    write_tables,
)

from netfl import read_run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "analysis" / "hierfavg"


def run_study(workers: int, out: Path) -> tuple[pd.DataFrame, Path]:
    return run_sweep_file("hierfavg/compare.sweep.yaml", workers, out)


def per_run(index: pd.DataFrame, where: Path, target: float) -> pd.DataFrame:
    rows = []
    for _, row in index[index["status"] == "complete"].iterrows():
        r = read_run(where / row["run"]).rounds
        hit = r.index[r["accuracy"] >= target]
        upto = r.loc[: hit[0]] if len(hit) else None
        rows.append(
            {
                "variant": row["variant"],
                "seed": row["seed"],
                "cloud_rounds": len(r),
                "final_accuracy": float(r["accuracy"].iloc[-1]),
                "time_to_target_s": float(r.loc[hit[0], "sim_time_s"]) if len(hit) else np.nan,
                "energy_to_target_j": float(upto["device_active_energy_j"].sum())
                if upto is not None
                else np.nan,
                "sim_time_s": float(r["sim_time_s"].iloc[-1]),
                "device_energy_j": float(r["device_active_energy_j"].sum()),
                "access_mbyte": float((r["uplink_bits"] + r["downlink_bits"]).sum()) / 8e6,
                "backhaul_mbyte": float(r["backhaul_bits"].sum()) / 8e6,
            }
        )
    return pd.DataFrame(rows)


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    agg = runs.drop(columns="seed").groupby("variant").agg(["mean", "std"])
    agg.columns = [f"{a}_{b}" for a, b in agg.columns]
    reached = runs.groupby("variant")["time_to_target_s"].apply(
        lambda s: f"{int(s.notna().sum())}/{len(s)}"
    )
    return agg.join(reached.rename("reached")).reset_index()


def paired(runs: pd.DataFrame, baseline: str = "fedavg") -> pd.DataFrame:
    """Per variant, mean ± std over seeds of its ratio to the baseline on the same seed
    (the same drop, data split and initial model): time and device energy to the
    target, and device energy over the whole run. The seeds' drops differ much (a
    cell-edge straggler doubles a run's time), so the paired ratio is the comparison."""
    base = runs[runs["variant"] == baseline].set_index("seed")
    rows = []
    for variant, g in runs.groupby("variant"):
        g = g.set_index("seed")
        row = {"variant": variant}
        for col in ("time_to_target_s", "energy_to_target_j", "device_energy_j"):
            r = g[col] / base[col].reindex(g.index)
            row[f"{col}_ratio_mean"], row[f"{col}_ratio_std"] = r.mean(), r.std()
        rows.append(row)
    return pd.DataFrame(rows)


def accuracy_figure(index: pd.DataFrame, where: Path, target: float) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for c, (variant, g) in enumerate(index[index["status"] == "complete"].groupby("variant")):
        curves = [read_run(where / run).rounds for run in g["run"]]
        # on a common time grid (each seed's rounds end at other times)
        t_end = min(float(r["sim_time_s"].iloc[-1]) for r in curves)
        grid = np.linspace(0.0, t_end, 200)
        acc = np.array(
            [np.interp(grid, r["sim_time_s"], r["accuracy"], left=np.nan) for r in curves]
        )
        energy = np.array(
            [
                np.interp(grid, r["sim_time_s"], r["device_active_energy_j"].cumsum(), left=0)
                for r in curves
            ]
        )
        for ax, y in ((axes[0], acc), (axes[1], energy)):
            with warnings.catch_warnings():  # (before every seed's first round: no value)
                warnings.simplefilter("ignore", RuntimeWarning)
                mean, std = np.nanmean(y, axis=0), np.nanstd(y, axis=0)
            ax.plot(grid, mean, color=f"C{c}", label=f"{variant} ({len(curves)} seeds)")
            ax.fill_between(grid, mean - std, mean + std, color=f"C{c}", alpha=0.2, lw=0)
    axes[0].axhline(target, color="k", ls=":", lw=1, label=f"target {target:g}")
    axes[0].set_ylabel("test accuracy")
    axes[1].set_ylabel("device energy, cumulative [J]")
    for ax in axes:
        ax.set_xlabel("simulated time [s]")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save_figure(fig, OUT, "accuracy_energy_vs_time.png")


def main() -> None:
    args = study_parser(__doc__, "hierfavg_study", 0.85).parse_args()
    index, where = run_study(args.workers, Path(args.out))
    runs = per_run(index, where, args.target)
    table = summary(runs)
    accuracy_figure(index, where, args.target)
    ratios = paired(runs)
    write_tables(OUT, runs=runs, summary=table, paired=ratios)
    show_tables(table, ratios, OUT, 200)


if __name__ == "__main__":
    main()
