"""Asynchronous FL study: FedAvg, FedAvg with a deadline, FedAsync and FedBuff on a 5G cell
where a fifth of the devices are slow and at the edge (issue 36; public API only).

Runs ``scenarios/async/compare.sweep.yaml`` (4 variants × 3 seeds, 150 simulated
seconds each) with ``netfl.sweep`` and draws from the run directories:

- test accuracy against simulated time and against the devices' active energy
  (compute + modem), mean ± std over seeds (``accuracy_vs_time_energy.png``);
- per variant, mean ± std over seeds: server updates, the simulated time and active
  device energy to a fixed target accuracy, the accuracy at the end of the budget, the
  staleness of the updates (``summary.csv``; every run in ``runs.csv``);
- per variant, its time to the target over FedAvg's on the same seed (``paired.csv``).

    .venv/bin/python analysis/async_study.py [--workers 1] [--target 0.85]
"""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from study_output import save_figure, show_tables, study_parser, write_tables  # noqa: E402

from netfl import read_run  # noqa: E402
from netfl.sweep import expand, load_sweep, run_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "analysis" / "async"
VARIANTS = ("fedavg", "fedavg_deadline", "fedasync", "fedbuff")


def first_reach(rounds: pd.DataFrame, target: float) -> tuple[float, float]:
    """Simulated time and cumulative active device energy at the first evaluation at or
    above ``target`` (NaN, NaN if none)."""
    energy = rounds["device_active_energy_j"].cumsum()
    hit = rounds.index[rounds["accuracy"] >= target]
    if not len(hit):
        return np.nan, np.nan
    return float(rounds.loc[hit[0], "sim_time_s"]), float(energy.loc[hit[0]])


def per_run(index: pd.DataFrame, where: Path, target: float) -> pd.DataFrame:
    rows = []
    for _, row in index[index["status"] == "complete"].iterrows():
        r = read_run(where / row["run"]).rounds
        t_hit, e_hit = first_reach(r, target)
        stale = r["staleness_mean"] if "staleness_mean" in r else pd.Series([0.0])
        rows.append(
            {
                "variant": row["variant"],
                "seed": row["seed"],
                "server_updates": len(r),
                "final_accuracy": float(r["accuracy"].dropna().iloc[-1]),
                "time_to_target_s": t_hit,
                "energy_to_target_j": e_hit,
                "active_energy_j": float(r["device_active_energy_j"].sum()),
                "staleness_mean": float(stale.mean()),
                "clients_late": float(r.get("clients_late", pd.Series([0.0])).sum()),
            }
        )
    return pd.DataFrame(rows)


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    agg = runs.drop(columns="seed").groupby("variant").agg(["mean", "std"])
    agg.columns = [f"{a}_{b}" for a, b in agg.columns]
    reached = runs.groupby("variant")["time_to_target_s"].apply(
        lambda s: f"{int(s.notna().sum())}/{len(s)}"
    )
    out = agg.join(reached.rename("reached")).reset_index()
    return (
        out.set_index("variant")
        .reindex([v for v in VARIANTS if v in set(out["variant"])])
        .reset_index()
    )


def paired(runs: pd.DataFrame) -> pd.DataFrame:
    """Each variant's time and energy to the target over FedAvg's on the same seed (the
    same drop, partition and initial model), mean ± std over seeds."""
    base = runs[runs["variant"] == "fedavg"].set_index("seed")
    rows = []
    for variant, g in runs.groupby("variant"):
        g = g.set_index("seed")
        row = {"variant": variant}
        for col in ("time_to_target_s", "energy_to_target_j"):
            ratio = g[col] / base[col].reindex(g.index)
            row[f"{col}_ratio_mean"], row[f"{col}_ratio_std"] = ratio.mean(), ratio.std()
        rows.append(row)
    return pd.DataFrame(rows)


def held(x: np.ndarray, at: pd.Series, values: pd.Series) -> np.ndarray:
    """The last value at or before each ``x`` (an evaluation holds until the next); NaN
    before the first."""
    k = np.searchsorted(at.to_numpy(), x, side="right") - 1
    return np.where(k >= 0, values.to_numpy()[np.clip(k, 0, None)], np.nan)


def _band(ax, x: np.ndarray, curves: list[np.ndarray], colour: str, label: str) -> None:
    y = np.array(curves)
    with warnings.catch_warnings():  # (before a seed's first evaluation: no value yet)
        warnings.simplefilter("ignore", RuntimeWarning)
        mean, std = np.nanmean(y, axis=0), np.nanstd(y, axis=0)
    ax.plot(x, mean, color=colour, label=label)
    ax.fill_between(x, mean - std, mean + std, color=colour, alpha=0.2, lw=0)


def figure(index: pd.DataFrame, where: Path, target: float) -> None:
    fig, (by_time, by_energy) = plt.subplots(1, 2, figsize=(11, 4))
    done = index[index["status"] == "complete"]
    for c, variant in enumerate(v for v in VARIANTS if v in set(done["variant"])):
        runs = [
            read_run(where / name).rounds for name in done.loc[done["variant"] == variant, "run"]
        ]
        evaluated = [r.dropna(subset=["accuracy"]) for r in runs]
        t_grid = np.linspace(0.0, min(float(r["sim_time_s"].iloc[-1]) for r in runs), 150)
        _band(
            by_time,
            t_grid,
            [held(t_grid, e["sim_time_s"], e["accuracy"]) for e in evaluated],
            f"C{c}",
            f"{variant} ({len(runs)} seeds)",
        )
        energies = [
            r["device_active_energy_j"].cumsum().loc[e.index]
            for r, e in zip(runs, evaluated, strict=True)
        ]
        e_grid = np.linspace(0.0, min(float(e.iloc[-1]) for e in energies), 150)
        _band(
            by_energy,
            e_grid,
            [
                np.interp(e_grid, en, ev["accuracy"], left=np.nan)
                for en, ev in zip(energies, evaluated, strict=True)
            ],
            f"C{c}",
            variant,
        )
    for ax, xlabel in (
        (by_time, "simulated time [s]"),
        (by_energy, "devices' active energy, cumulative [J]"),
    ):
        ax.axhline(target, color="k", ls=":", lw=1)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("test accuracy (mean ± std over seeds)")
        ax.set_ylim(0.5, 1.0)
        ax.grid(alpha=0.3)
    by_time.legend(fontsize=8)
    save_figure(fig, OUT, "accuracy_vs_time_energy.png")


def main() -> None:
    args = study_parser(__doc__, "async_study", 0.85).parse_args()
    spec, path = load_sweep(ROOT / "scenarios" / "async" / "compare.sweep.yaml")
    where = Path(args.out) / spec.name
    index = run_sweep(
        expand(spec, path), where, args.workers, None, lambda n, s: print(f"  {n}: {s}", flush=True)
    )
    runs = per_run(index, where, args.target)
    table, ratios = summary(runs), paired(runs)
    figure(index, where, args.target)
    write_tables(OUT, runs=runs, summary=table, paired=ratios)
    show_tables(table, ratios, OUT, 220, "figures and tables")


if __name__ == "__main__":
    main()
