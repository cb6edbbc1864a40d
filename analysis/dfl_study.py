"""DFL study: FedAvg vs FD vs DFL (IID and non-IID), the threshold sweep, communication.

Runs ``scenarios/dfl/methods.sweep.yaml`` and ``scenarios/dfl/threshold.sweep.yaml``
with ``netfl.sweep`` and draws from the run directories (public API only):

- accuracy vs round for FedAvg, FD and DFL, IID and non-IID;
- final and best accuracy vs the threshold T of the dynamic ratio (10);
- a table of per-round communication (bits per device and direction).

    .venv/bin/python analysis/dfl_study.py [--rounds 30] [--workers 2] [--sweeps methods threshold]
        [--thresholds 0 0.2 0.4 0.6 0.8 1]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from netfl import RunDirectory, read_run  # noqa: E402
from netfl.sweep import expand, load_sweep, run_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: ``--complete-only``: analyse the runs already complete, start none
COMPLETE_ONLY = False


OUT = ROOT / "analysis" / "dfl"


def _run(
    name: str, out: Path, rounds: int | None, workers: int, thresholds: list[float] | None
) -> tuple[pd.DataFrame, Path]:
    spec, path = load_sweep(ROOT / "scenarios" / "dfl" / f"{name}.sweep.yaml")
    overrides: dict = {"outputs.figures": False}
    if rounds is not None:
        overrides["training.rounds"] = rounds
    runs = expand(spec, path, overrides)
    if thresholds is not None and name == "threshold":
        runs = [r for r in runs if r.params["algorithm.threshold"] in thresholds]
    where = out / spec.name
    if COMPLETE_ONLY:  # (analyse what is done; run nothing)
        runs = [r for r in runs if RunDirectory(where / r.name).complete]
    index = run_sweep(runs, where, workers, None, lambda n, s: print(f"  {n}: {s}", flush=True))
    return index, where


def _last(r: pd.DataFrame, col: str, k: int = 10) -> float:
    """Mean of ``col`` over the last ``k`` rounds (a converged level, less noisy than the
    final round)."""
    return float(r[col].tail(k).mean())


def methods(index: pd.DataFrame, where: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Accuracy vs round (mean ± std over seeds) per method and data split; per run its
    final/best/last-10 accuracy, communication and the soft targets' quality; and the
    per-(data, method) mean ± std."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    rows = []
    for ax, scheme in zip(axes, ("iid", "dominant_label"), strict=True):
        curves: dict[str, list[pd.Series]] = {}
        for _, row in index[index["status"] == "complete"].iterrows():
            if f"partition={scheme}" not in row["run"]:
                continue
            res = read_run(where / row["run"])
            r = res.rounds
            curves.setdefault(row["variant"], []).append(r.set_index("round")["accuracy"])
            t = res.transfers
            per_dev_round = (
                t.groupby(["round", "direction"])["size_bits"].sum().unstack(fill_value=0)
            )
            k = r["num_clients"].mean()
            rho_at_t = r.index[r["rho"] <= r["rho"].min() + 1e-12] if "rho" in r else []
            rows.append(
                {
                    "data": "IID" if scheme == "iid" else "non-IID (80 % one label)",
                    "method": row["variant"],
                    "seed": row["seed"],
                    "final_accuracy": row["final_accuracy"],
                    "best_accuracy": row["best_accuracy"],
                    "last10_accuracy": _last(r, "accuracy"),
                    # rows of Y peaking on their own label when ρ first reaches T (DFL)
                    "soft_targets_correct_at_T": (
                        float(r.loc[rho_at_t[0], "soft_targets_correct"])
                        if len(rho_at_t) and "soft_targets_correct" in r
                        else float("nan")
                    ),
                    "up_kbit_per_device_round": per_dev_round.get("uplink", pd.Series([0])).mean()
                    / k
                    / 1e3,
                    "down_kbit_per_device_round": per_dev_round.get(
                        "downlink", pd.Series([0])
                    ).mean()
                    / k
                    / 1e3,
                }
            )
        for c, (method, series) in enumerate(sorted(curves.items())):
            wide = pd.concat(series, axis=1)
            mean, std = wide.mean(axis=1), wide.std(axis=1).fillna(0.0)
            ax.plot(
                mean.index, mean.values, label=f"{method} ({wide.shape[1]} seeds)", color=f"C{c}"
            )
            ax.fill_between(mean.index, mean - std, mean + std, color=f"C{c}", alpha=0.2, lw=0)
        ax.set_title("IID" if scheme == "iid" else "non-IID (80 % one label)")
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
        ax.legend()
    axes[0].set_ylabel("test accuracy (FD: mean over devices' models)")
    fig.tight_layout()
    OUT.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT / "accuracy_vs_round.png", dpi=120)
    plt.close(fig)
    runs = pd.DataFrame(rows)
    summary = runs.drop(columns="seed").groupby(["data", "method"]).agg(["mean", "std"])
    summary.columns = [f"{a}_{b}" for a, b in summary.columns]
    return runs, summary.reset_index()


def threshold(index: pd.DataFrame, where: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Final, best and last-10 accuracy against T (mean ± std over seeds)."""
    ok = index[index["status"] == "complete"].sort_values("algorithm.threshold")
    rows = []
    for _, row in ok.iterrows():
        r = read_run(where / row["run"]).rounds
        rows.append(
            {
                "T": row["algorithm.threshold"],
                "seed": row["seed"],
                "final_accuracy": row["final_accuracy"],
                "best_accuracy": row["best_accuracy"],
                "last10_accuracy": _last(r, "accuracy"),
            }
        )
    runs = pd.DataFrame(rows)
    agg = runs.drop(columns="seed").groupby("T").agg(["mean", "std"])
    agg.columns = [f"{a}_{b}" for a, b in agg.columns]
    agg = agg.reset_index()
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for col, marker in (("final_accuracy", "o"), ("last10_accuracy", "s")):
        ax.errorbar(
            agg["T"],
            agg[f"{col}_mean"],
            yerr=agg[f"{col}_std"],
            marker=marker,
            capsize=3,
            label=col.replace("_accuracy", "").replace("last10", "mean of last 10 rounds"),
        )
    ax.set_xlabel("threshold T of ρ = max(1 − r/R, T)")
    ax.set_ylabel("test accuracy (non-IID)")
    ax.set_title("mean ± std over seeds", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "threshold_sweep.png", dpi=120)
    plt.close(fig)
    return runs, agg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--rounds", type=int, default=None, help="override every run's rounds (default: 60)"
    )
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--sweeps", nargs="+", default=["methods", "threshold"])
    ap.add_argument("--thresholds", type=float, nargs="+", help="run only these T values")
    ap.add_argument("--out", default=str(ROOT / "runs" / "dfl_study"))
    ap.add_argument("--complete-only", action="store_true", help="analyse complete runs only")
    args = ap.parse_args()
    global COMPLETE_ONLY
    COMPLETE_ONLY = args.complete_only
    OUT.mkdir(parents=True, exist_ok=True)
    pd.set_option("display.width", 160)
    for name in args.sweeps:
        print(f"sweep {name}:", flush=True)
        index, where = _run(name, Path(args.out), args.rounds, args.workers, args.thresholds)
        runs, table = methods(index, where) if name == "methods" else threshold(index, where)
        runs.to_csv(OUT / f"{name}.csv", index=False)
        table.to_csv(OUT / f"{name}_summary.csv", index=False)
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"figures: {OUT}")


if __name__ == "__main__":
    main()
