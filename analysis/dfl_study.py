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

from netfl import read_run  # noqa: E402
from netfl.sweep import expand, load_sweep, run_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "analysis" / "dfl"


def _run(
    name: str, out: Path, rounds: int, workers: int, thresholds: list[float] | None
) -> tuple[pd.DataFrame, Path]:
    spec, path = load_sweep(ROOT / "scenarios" / "dfl" / f"{name}.sweep.yaml")
    runs = expand(spec, path, {"training.rounds": rounds, "outputs.figures": False})
    if thresholds is not None and name == "threshold":
        runs = [r for r in runs if r.params["algorithm.threshold"] in thresholds]
    where = out / spec.name
    index = run_sweep(runs, where, workers, None, lambda n, s: print(f"  {n}: {s}", flush=True))
    return index, where


def methods(index: pd.DataFrame, where: Path) -> pd.DataFrame:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    rows = []
    for ax, scheme in zip(axes, ("iid", "dominant_label"), strict=True):
        for _, row in index[index["status"] == "complete"].iterrows():
            if f"partition={scheme}" not in row["run"]:
                continue
            res = read_run(where / row["run"])
            r = res.rounds
            ax.plot(r["round"], r["accuracy"], label=row["variant"])
            t = res.transfers
            per_dev_round = (
                t.groupby(["round", "direction"])["size_bits"].sum().unstack(fill_value=0)
            )
            k = r["num_clients"].mean()
            rows.append(
                {
                    "data": "IID" if scheme == "iid" else "non-IID (80 % one label)",
                    "method": row["variant"],
                    "final_accuracy": row["final_accuracy"],
                    "best_accuracy": row["best_accuracy"],
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
        ax.set_title("IID" if scheme == "iid" else "non-IID (80 % one label)")
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
        ax.legend()
    axes[0].set_ylabel("test accuracy (FD: mean over devices' models)")
    fig.tight_layout()
    OUT.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT / "accuracy_vs_round.png", dpi=120)
    plt.close(fig)
    return pd.DataFrame(rows)


def threshold(index: pd.DataFrame) -> pd.DataFrame:
    ok = index[index["status"] == "complete"].sort_values("algorithm.threshold")
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.plot(ok["algorithm.threshold"], ok["final_accuracy"], marker="o", label="final")
    ax.plot(ok["algorithm.threshold"], ok["best_accuracy"], marker="s", label="best")
    ax.set_xlabel("threshold T of ρ = max(1 − r/R, T)")
    ax.set_ylabel("test accuracy (non-IID)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "threshold_sweep.png", dpi=120)
    plt.close(fig)
    return ok[["algorithm.threshold", "final_accuracy", "best_accuracy"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--sweeps", nargs="+", default=["methods", "threshold"])
    ap.add_argument("--thresholds", type=float, nargs="+", help="run only these T values")
    ap.add_argument("--out", default=str(ROOT / "runs" / "dfl_study"))
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    pd.set_option("display.width", 160)
    for name in args.sweeps:
        print(f"sweep {name}:", flush=True)
        index, where = _run(name, Path(args.out), args.rounds, args.workers, args.thresholds)
        table = methods(index, where) if name == "methods" else threshold(index)
        table.to_csv(OUT / f"{name}.csv", index=False)
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"figures: {OUT}")


if __name__ == "__main__":
    main()
