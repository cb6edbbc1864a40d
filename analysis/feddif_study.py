"""FedDif study: FedAvg vs FedDif vs FedSwap on the paper's sweeps (public API only).

Runs the sweep files of ``scenarios/feddif/`` (α, ε, γ_min, ML tasks) with
``netfl.sweep``, then draws the paper's figure types from the run
directories:

- accuracy vs communication round per α, FedAvg / FedDif / FedSwap;
- diffusion rounds per communication round per α;
- sub-frames and transmitted models (by link type) to reach FedAvg's peak
  accuracy, per α (``netfl.output.figures.cost_to_target``);
- IID distance of every model over the diffusion rounds of one round;
- final accuracy, diffusion rounds and D2D models vs ε and vs γ_min;
- final accuracy per ML task, FedAvg vs FedDif.

Runs already complete are reused, so the script can be stopped and resumed.

    .venv/bin/python analysis/feddif_study.py [--rounds 20] [--workers 2]
        [--sweeps alpha epsilon gamma tasks] [--out runs/feddif_study]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from netfl import cost_to_target, read_run  # noqa: E402
from netfl.sweep import expand, load_sweep, run_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SWEEPS = ROOT / "scenarios" / "feddif"
FIGURES = ROOT / "analysis" / "feddif" / "figures"
ALGOS = ("fedavg", "feddif", "fedswap")


def run_study_sweep(name: str, out: Path, rounds: int, workers: int) -> tuple[pd.DataFrame, Path]:
    spec, path = load_sweep(SWEEPS / f"{name}.sweep.yaml")
    runs = expand(spec, path, {"training.rounds": rounds, "outputs.figures": False})
    where = out / spec.name

    def progress(run: str, status: str) -> None:
        print(f"  {spec.name}/{run}: {status}", flush=True)

    index = run_sweep(runs, where, workers, spec.target_accuracy, progress)
    return index, where


def _rounds(where: Path, run: str) -> pd.DataFrame:
    return read_run(where / run).rounds


def alpha_figures(index: pd.DataFrame, where: Path) -> pd.DataFrame:
    alphas = sorted(index["data.partition.alpha"].unique())
    fig, axes = plt.subplots(1, len(alphas), figsize=(3.2 * len(alphas), 3.2), sharey=True)
    fig2, axes2 = plt.subplots(1, len(alphas), figsize=(3.2 * len(alphas), 3.0), sharey=True)
    rows = []
    for ax, ax2, alpha in zip(axes, axes2, alphas, strict=True):
        runs = {}
        for algo in ALGOS:
            sel = index[(index["variant"] == algo) & (index["data.partition.alpha"] == alpha)]
            if sel.empty or sel["status"].iloc[0] != "complete":
                continue
            runs[algo] = _rounds(where, sel["run"].iloc[0])
            ax.plot(runs[algo]["round"], runs[algo]["accuracy"], label=algo)
            if algo != "fedavg":
                ax2.plot(runs[algo]["round"], runs[algo]["diffusion_rounds"], label=algo)
        ax.set_title(f"α = {alpha:g}")
        ax.set_xlabel("communication round")
        ax2.set_title(f"α = {alpha:g}")
        ax2.set_xlabel("communication round")
        if "fedavg" in runs:
            costs = cost_to_target(runs, baseline="fedavg")
            costs.insert(0, "alpha", alpha)
            rows.append(costs)
    axes[0].set_ylabel("test accuracy")
    axes[0].legend(fontsize=8)
    axes2[0].set_ylabel("diffusion rounds")
    axes2[0].legend(fontsize=8)
    FIGURES.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(FIGURES / "accuracy_vs_round_by_alpha.png", dpi=120)
    fig2.tight_layout()
    fig2.savefig(FIGURES / "diffusion_rounds_by_alpha.png", dpi=120)
    plt.close("all")

    costs = pd.concat(rows, ignore_index=True)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    width = 0.27
    for k, algo in enumerate(ALGOS):
        c = costs[costs["run"] == algo].reset_index(drop=True)
        x = [i + (k - 1) * width for i in range(len(c))]
        axes[0].bar(x, c["subframes"].fillna(0), width, label=algo)
        bottom = 0
        for part, hatch in (("models_downlink", ""), ("models_uplink", "//"), ("models_d2d", "..")):
            axes[1].bar(
                x,
                c[part].fillna(0),
                width,
                bottom=bottom,
                color=f"C{k}",
                hatch=hatch,
                label=f"{algo} {part.removeprefix('models_')}",
            )
            bottom = bottom + c[part].fillna(0)
    for ax in axes:
        ax.set_xticks(range(len(alphas)))
        ax.set_xticklabels([f"α={a:g}" for a in alphas])
    axes[0].set_ylabel("sub-frames to FedAvg's peak")
    axes[1].set_ylabel("models transmitted to FedAvg's peak")
    axes[0].legend(fontsize=8)
    axes[1].legend(fontsize=6, ncol=3)
    fig.tight_layout()
    fig.savefig(FIGURES / "cost_to_fedavg_peak_by_alpha.png", dpi=120)
    plt.close(fig)

    # IID distance over diffusion rounds (FedDif, α = 0.5 or the closest), first round
    alpha = min(alphas, key=lambda a: abs(a - 0.5))
    sel = index[(index["variant"] == "feddif") & (index["data.partition.alpha"] == alpha)]
    if not sel.empty and sel["status"].iloc[0] == "complete":
        d = read_run(where / sel["run"].iloc[0]).tables["diffusion"]
        d = d[d["round"] == 0]
        fig, ax = plt.subplots(figsize=(5, 3.6))
        for _, m in d.groupby("model"):
            ax.plot(m["diffusion_round"], m["iid_distance"], color="C1", alpha=0.5, lw=1)
        mean = d.groupby("diffusion_round")["iid_distance"].mean()
        ax.plot(mean.index, mean.values, color="k", lw=2, label="mean over models")
        ax.axhline(0.04, color="r", ls="--", lw=1, label="ε = 0.04")
        ax.set_xlabel("diffusion round")
        ax.set_ylabel("IID distance (L2, C.1)")
        ax.set_title(f"FedDif, α = {alpha:g}, round 0")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(FIGURES / "iid_distance_vs_diffusion_round.png", dpi=120)
        plt.close(fig)
    return costs


def _param_figure(index: pd.DataFrame, where: Path, key: str, label: str, fname: str) -> None:
    ok = index[index["status"] == "complete"].sort_values(key)
    stats = []
    for _, row in ok.iterrows():
        r = _rounds(where, row["run"])
        stats.append(
            {
                key: row[key],
                "final_accuracy": row["final_accuracy"],
                "diffusion_rounds": r["diffusion_rounds"].mean(),
                "models_d2d": r["models_d2d"].mean(),
            }
        )
    s = pd.DataFrame(stats)
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2))
    for ax, col, ylab in zip(
        axes,
        ("final_accuracy", "diffusion_rounds", "models_d2d"),
        ("final accuracy", "diffusion rounds / round", "D2D models / round"),
        strict=True,
    ):
        ax.plot(s[key], s[col], marker="o")
        ax.set_xlabel(label)
        ax.set_ylabel(ylab)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(FIGURES / fname, dpi=120)
    plt.close(fig)


def tasks_figure(index: pd.DataFrame) -> None:
    ok = index[index["status"] == "complete"]
    pivot = ok.pivot_table(index="model.name", columns="variant", values="final_accuracy")
    ax = pivot.plot.bar(figsize=(6, 3.6), rot=0)
    ax.set_ylabel("final test accuracy")
    ax.set_xlabel("task (MNIST-5k)")
    ax.figure.tight_layout()
    ax.figure.savefig(FIGURES / "accuracy_by_task.png", dpi=120)
    plt.close(ax.figure)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--sweeps", nargs="+", default=["alpha", "epsilon", "gamma", "tasks"])
    ap.add_argument("--out", default=str(ROOT / "runs" / "feddif_study"))
    args = ap.parse_args()
    out = Path(args.out)
    FIGURES.mkdir(parents=True, exist_ok=True)
    pd.set_option("display.width", 160)
    for name in args.sweeps:
        print(f"sweep {name}:", flush=True)
        index, where = run_study_sweep(name, out, args.rounds, args.workers)
        cols = [c for c in index.columns if c not in ("error", "stop_reason", "seed")]
        print(index[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        if name == "alpha":
            costs = alpha_figures(index, where)
            show = ["alpha", "run", "reached", "round", "subframes", "models_sent", "models_d2d"]
            print("cost to reach FedAvg's peak accuracy:")
            print(costs[show].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
            costs.to_csv(FIGURES.parent / "cost_to_fedavg_peak.csv", index=False)
        elif name == "epsilon":
            _param_figure(index, where, "algorithm.epsilon", "ε", "epsilon_sweep.png")
        elif name == "gamma":
            _param_figure(
                index,
                where,
                "algorithm.min_efficiency_bps_per_hz",
                "γ_min [bit/s/Hz]",
                "gamma_min_sweep.png",
            )
        elif name == "tasks":
            tasks_figure(index)
        index.to_csv(FIGURES.parent / f"{name}_index.csv", index=False)
    print(f"figures: {FIGURES}")


if __name__ == "__main__":
    main()
