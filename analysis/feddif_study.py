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

from netfl import RunDirectory, cost_to_target, read_run  # noqa: E402
from netfl.sweep import expand, load_sweep, run_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: ``--complete-only``: analyse the runs already complete, start none
COMPLETE_ONLY = False


SWEEPS = ROOT / "scenarios" / "feddif"
FIGURES = ROOT / "analysis" / "feddif" / "figures"
ALGOS = ("fedavg", "feddif", "fedswap")


def run_study_sweep(
    name: str,
    out: Path,
    rounds: int | None,
    workers: int,
    alphas: list[float] | None = None,
    variants: list[str] | None = None,
) -> tuple[pd.DataFrame, Path]:
    spec, path = load_sweep(SWEEPS / f"{name}.sweep.yaml")
    overrides: dict = {"outputs.figures": False}
    if rounds is not None:
        overrides["training.rounds"] = rounds
    runs = expand(spec, path, overrides)
    if alphas is not None:
        runs = [r for r in runs if r.params.get("data.partition.alpha") in alphas]
    if variants is not None:
        runs = [r for r in runs if r.params.get("variant") in variants]
    where = out / spec.name
    if COMPLETE_ONLY:  # (analyse what is done; run nothing)
        runs = [r for r in runs if RunDirectory(where / r.name).complete]

    def progress(run: str, status: str) -> None:
        print(f"  {spec.name}/{run}: {status}", flush=True)

    index = run_sweep(runs, where, workers, spec.target_accuracy, progress)
    return index, where


def _rounds(where: Path, run: str) -> pd.DataFrame:
    return read_run(where / run).rounds


def _complete(index: pd.DataFrame, **match) -> pd.DataFrame:
    sel = index[index["status"] == "complete"]
    for key, value in match.items():
        sel = sel[sel[key] == value]
    return sel


def _mean_band(ax, curves: list[pd.DataFrame], col: str, label: str, color: str) -> None:
    """Mean over seeds of ``col`` against round, with a ± 1 std band."""
    wide = pd.concat([c.set_index("round")[col] for c in curves], axis=1)
    mean, std = wide.mean(axis=1), wide.std(axis=1).fillna(0.0)
    ax.plot(mean.index, mean.values, label=f"{label} ({wide.shape[1]} seeds)", color=color)
    ax.fill_between(mean.index, mean - std, mean + std, color=color, alpha=0.2, lw=0)


def alpha_figures(index: pd.DataFrame, where: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Accuracy and diffusion rounds vs round per α (mean ± std over seeds), the cost to
    reach each seed's converged FedAvg peak, the IID-distance trace, and which stop rule
    ended the diffusion rounds. Returns (per-seed costs, stop-code shares)."""
    alphas = sorted(index["data.partition.alpha"].unique())
    seeds = sorted(index["seed"].unique())
    # (squeeze=False: one α gives a row of one Axes, not a bare Axes)
    fig, axes = plt.subplots(
        1, len(alphas), figsize=(3.2 * len(alphas), 3.2), sharey=True, squeeze=False
    )
    fig2, axes2 = plt.subplots(
        1, len(alphas), figsize=(3.2 * len(alphas), 3.0), sharey=True, squeeze=False
    )
    rows, stops = [], []
    for ax, ax2, alpha in zip(axes[0], axes2[0], alphas, strict=True):
        curves: dict[str, list[pd.DataFrame]] = {a: [] for a in ALGOS}
        for seed in seeds:
            runs = {}
            for algo in ALGOS:
                sel = _complete(index, variant=algo, seed=seed, **{"data.partition.alpha": alpha})
                if not sel.empty:
                    runs[algo] = _rounds(where, sel["run"].iloc[0])
                    curves[algo].append(runs[algo])
            if "fedavg" in runs:
                # the target: this seed's FedAvg peak over its (longer, converged) run
                costs = cost_to_target(runs, baseline="fedavg")
                costs.insert(0, "seed", seed)
                costs.insert(0, "alpha", alpha)
                rows.append(costs)
            if "feddif" in runs:
                codes = runs["feddif"]["diffusion_stop"].value_counts(normalize=True)
                stops.append(
                    {"alpha": alpha, "seed": seed, **{int(k): v for k, v in codes.items()}}
                )
        for k, algo in enumerate(ALGOS):
            if curves[algo]:
                _mean_band(ax, curves[algo], "accuracy", algo, f"C{k}")
                if algo != "fedavg":
                    _mean_band(ax2, curves[algo], "diffusion_rounds", algo, f"C{k}")
        for a in (ax, ax2):
            a.set_title(f"α = {alpha:g}")
            a.set_xlabel("communication round")
    axes[0][0].set_ylabel("test accuracy")
    axes[0][0].legend(fontsize=7)
    axes2[0][0].set_ylabel("diffusion rounds")
    axes2[0][0].legend(fontsize=7)
    FIGURES.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(FIGURES / "accuracy_vs_round_by_alpha.png", dpi=120)
    fig2.tight_layout()
    fig2.savefig(FIGURES / "diffusion_rounds_by_alpha.png", dpi=120)
    plt.close("all")

    costs = pd.concat(rows, ignore_index=True)
    summary = cost_summary(costs)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    width = 0.27
    for k, algo in enumerate(ALGOS):
        c = summary[summary["run"] == algo].set_index("alpha").reindex(alphas)
        x = [i + (k - 1) * width for i in range(len(alphas))]
        for ax, col in zip(axes, ("subframes", "models_sent"), strict=True):
            ax.bar(
                x,
                c[f"{col}_mean"].fillna(0),
                width,
                yerr=c[f"{col}_std"].fillna(0),
                label=algo,
                color=f"C{k}",
                capsize=2,
            )
    for ax in axes:
        ax.set_xticks(range(len(alphas)))
        ax.set_xticklabels([f"α={a:g}" for a in alphas])
    axes[0].set_ylabel("sub-frames to FedAvg's peak")
    axes[1].set_ylabel("models transmitted to FedAvg's peak")
    axes[0].legend(fontsize=8)
    fig.suptitle("mean ± std over seeds (runs that reached the target)", fontsize=9)
    fig.tight_layout()
    fig.savefig(FIGURES / "cost_to_fedavg_peak_by_alpha.png", dpi=120)
    plt.close(fig)

    # IID distance over diffusion rounds (FedDif, α = 0.5 or the closest), first round
    alpha = min(alphas, key=lambda a: abs(a - 0.5))
    sel = _complete(index, variant="feddif", seed=seeds[0], **{"data.partition.alpha": alpha})
    if not sel.empty:
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
        ax.set_title(f"FedDif, α = {alpha:g}, round 0, seed {seeds[0]}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(FIGURES / "iid_distance_vs_diffusion_round.png", dpi=120)
        plt.close(fig)
    stop_share = pd.DataFrame(stops).fillna(0.0).groupby("alpha").mean().drop(columns="seed")
    stop_share = stop_share.rename(columns={c: STOP_NAMES.get(c, str(c)) for c in stop_share})
    return costs, stop_share.reset_index()


#: the ``diffusion_stop`` codes (netfl.algorithms.feddif.DIFFUSION_STOP)
STOP_NAMES = {0: "none_planned", 1: "iid", 2: "no_pair", 3: "max_rounds", 4: "efficiency"}


def cost_summary(costs: pd.DataFrame) -> pd.DataFrame:
    """Per (α, algorithm): FedAvg's peak (the target) and, over the seeds that reached
    it, mean and std of rounds, sub-frames and models; ``reached`` = seeds that did."""
    out = []
    for (alpha, algo), g in costs.groupby(["alpha", "run"], sort=True):
        hit = g[g["reached"]]
        row = {
            "alpha": alpha,
            "run": algo,
            "target_mean": g["target_accuracy"].mean(),
            "reached": f"{len(hit)}/{len(g)}",
        }
        for col in ("round", "subframes", "models_sent"):
            row[f"{col}_mean"] = hit[col].mean() if len(hit) else float("nan")
            row[f"{col}_std"] = hit[col].std() if len(hit) > 1 else float("nan")
        out.append(row)
    return pd.DataFrame(out)


def _param_figure(
    index: pd.DataFrame, where: Path, key: str, label: str, fname: str
) -> pd.DataFrame:
    """Final accuracy, diffusion rounds, D2D models and simulated time per value of
    ``key``: mean ± std over seeds (figure and table)."""
    stats = []
    for _, row in index[index["status"] == "complete"].iterrows():
        r = _rounds(where, row["run"])
        stats.append(
            {
                key: row[key],
                "seed": row["seed"],
                "final_accuracy": row["final_accuracy"],
                "diffusion_rounds": r["diffusion_rounds"].mean(),
                "models_d2d": r["models_d2d"].mean(),
                "sim_time_s": float(r["sim_time_s"].iloc[-1]),
                "subframes": float(r["subframes"].sum()),
                "models_sent": float(r["models_sent"].sum()),
            }
        )
    s = pd.DataFrame(stats).drop(columns="seed")
    agg = s.groupby(key).agg(["mean", "std"])
    agg.columns = [f"{a}_{b}" for a, b in agg.columns]
    agg = agg.reset_index()
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2))
    for ax, col, ylab in zip(
        axes,
        ("final_accuracy", "diffusion_rounds", "models_d2d"),
        ("final accuracy", "diffusion rounds / round", "D2D models / round"),
        strict=True,
    ):
        ax.errorbar(agg[key], agg[f"{col}_mean"], yerr=agg[f"{col}_std"], marker="o", capsize=3)
        ax.set_xlabel(label)
        ax.set_ylabel(ylab)
        ax.grid(alpha=0.3)
    fig.suptitle("mean ± std over seeds", fontsize=9)
    fig.tight_layout()
    fig.savefig(FIGURES / fname, dpi=120)
    plt.close(fig)
    return agg


def tasks_figure(index: pd.DataFrame) -> pd.DataFrame:
    ok = index[index["status"] == "complete"]
    mean = ok.pivot_table(index="model.name", columns="variant", values="final_accuracy")
    std = ok.pivot_table(
        index="model.name", columns="variant", values="final_accuracy", aggfunc="std"
    )
    ax = mean.plot.bar(figsize=(6, 3.6), rot=0, yerr=std, capsize=3)
    ax.set_ylabel("final test accuracy")
    ax.set_xlabel("task (MNIST-5k)")
    ax.figure.tight_layout()
    ax.figure.savefig(FIGURES / "accuracy_by_task.png", dpi=120)
    plt.close(ax.figure)
    table = mean.add_suffix("_mean").join(std.add_suffix("_std")).reset_index()
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="override every run's rounds (default: the sweep files')",
    )
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--sweeps", nargs="+", default=["alpha", "epsilon", "gamma", "tasks"])
    ap.add_argument("--alphas", type=float, nargs="+", help="alpha sweep: only these α")
    ap.add_argument("--variants", nargs="+", help="only these variants (e.g. fedavg feddif)")
    ap.add_argument("--out", default=str(ROOT / "runs" / "feddif_study"))
    ap.add_argument("--complete-only", action="store_true", help="analyse complete runs only")
    args = ap.parse_args()
    global COMPLETE_ONLY
    COMPLETE_ONLY = args.complete_only
    out = Path(args.out)
    FIGURES.mkdir(parents=True, exist_ok=True)
    pd.set_option("display.width", 160)
    for name in args.sweeps:
        print(f"sweep {name}:", flush=True)
        index, where = run_study_sweep(
            name, out, args.rounds, args.workers, args.alphas, args.variants
        )
        cols = [c for c in index.columns if c not in ("error", "stop_reason", "seed")]
        print(index[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        fmt = {"float_format": lambda v: f"{v:.4g}", "index": False}
        if name == "alpha":
            costs, stop_share = alpha_figures(index, where)
            summary = cost_summary(costs)
            print("cost to reach each seed's 60-round FedAvg peak (mean ± std over seeds):")
            print(summary.to_string(**fmt))
            print("share of FedDif rounds ended by each stop rule:")
            print(stop_share.to_string(**fmt))
            costs.to_csv(FIGURES.parent / "cost_to_fedavg_peak.csv", index=False)
            summary.to_csv(FIGURES.parent / "cost_to_fedavg_peak_summary.csv", index=False)
            stop_share.to_csv(FIGURES.parent / "stop_rule_share.csv", index=False)
        elif name in ("epsilon", "gamma"):
            key = (
                "algorithm.epsilon" if name == "epsilon" else "algorithm.min_efficiency_bps_per_hz"
            )
            label = "ε" if name == "epsilon" else "γ_min [bit/s/Hz]"
            fname = "epsilon_sweep.png" if name == "epsilon" else "gamma_min_sweep.png"
            agg = _param_figure(index, where, key, label, fname)
            print(agg.to_string(**fmt))
            agg.to_csv(FIGURES.parent / f"{name}_summary.csv", index=False)
        elif name == "tasks":
            table = tasks_figure(index)
            print(table.to_string(**fmt))
            table.to_csv(FIGURES.parent / "tasks_summary.csv", index=False)
        index.to_csv(FIGURES.parent / f"{name}_index.csv", index=False)
    print(f"figures: {FIGURES}")


if __name__ == "__main__":
    main()
