"""The report of a sweep directory: mean ± standard deviation over seeds.

``netfl report SWEEP_DIR`` reads the index ``sweep.csv`` and every complete run's
``rounds.csv``, groups runs that differ only in their seed, and writes into
``SWEEP_DIR/report/`` (or ``--out``):

- ``accuracy_vs_round.png`` / ``accuracy_vs_time.png``: each group's mean test
  accuracy with a ±1 standard-deviation band over its seeds (against simulated
  time, each seed's accuracy is a step function of time, last evaluation held,
  read on one grid up to the shortest seed's end);
- ``cost_to_target.png``: simulated time, bits and device energy to the sweep's
  ``target_accuracy`` (or, without one, of the whole run), mean ± std;
- ``latency_breakdown.png``: a round's simulated time split into compute only,
  communication only, both, neither (means over rounds and seeds);
- ``<param>_lines.png``, for each numeric grid parameter with two or more values:
  every summary metric against that parameter, one line per variant (or per value
  of the other varying parameters), the mean over seeds with a ±1 std band — the
  figure type the papers use;
- ``summary.csv``: the comparison table (one row per group, ``*_mean``/``*_std``
  columns, seeds counted);
- ``stragglers.csv``: per complete run, the device most often its rounds' straggler
  and the share of the run's time it set (:mod:`netfl.sweep.stragglers`);
- ``index.html``, which shows both tables, the figures and every run (failed ones
  with their errors) on one static page.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from netfl.output.figures import plt
from netfl.output.saving import save_figure as _save
from netfl.sweep.labels import param_label, quantity, value_sort_key
from netfl.sweep.report_page import report_page
from netfl.sweep.stragglers import straggler_table

__all__ = [
    "is_sweep_dir",
    "sweep_report",
    "group_runs",
    "summary_table",
    "grid_parameters",
    "line_stats",
    "readable",
]

#: summary columns of the index compared across groups (when present)
SUMMARY_COLUMNS = (
    "final_accuracy",
    "best_accuracy",
    "rounds",
    "sim_time_s",
    "round_time_s",
    "bits",
    "device_energy_j",
    "starved_devices",
    "subframes",
    "rounds_to_target",
    "time_to_target_s",
    "bits_to_target",
    "energy_to_target_j",
)

#: a round's time split (``rounds.csv`` columns) and their labels
LATENCY_PARTS = (
    ("compute_time_s", "compute only"),
    ("comm_time_s", "communication only"),
    ("overlap_time_s", "both"),
    ("idle_time_s", "neither"),
)


def is_sweep_dir(path: str | Path) -> bool:
    return (Path(path) / "sweep.csv").is_file()


def _param_columns(index: pd.DataFrame) -> list[str]:
    cols = list(index.columns)
    return cols[cols.index("run") + 1 : cols.index("status")]


def group_runs(index: pd.DataFrame) -> dict[str, list[str]]:
    """Runs by group (runs that differ only in ``seed``), in index order.

    A group's label names its parameters that vary across the sweep
    (``fedavg-alpha=0.1``); a sweep of seeds only has one group, ``all``.
    """
    params = [c for c in _param_columns(index) if c != "seed"]
    varying = [c for c in params if index[c].astype(str).nunique() > 1]
    groups: dict[str, list[str]] = {}
    keys: dict[str, tuple] = {}
    variants = {
        v: i for i, v in enumerate(dict.fromkeys(index.get("variant", pd.Series()).astype(str)))
    }
    for _, row in index.iterrows():
        label = _label(row, varying)
        groups.setdefault(label, []).append(row["run"])
        keys.setdefault(label, _order(row, varying, variants))
    return {label: groups[label] for label in sorted(groups, key=keys.__getitem__)}


def _label(row: pd.Series, columns: list[str]) -> str:
    """A group's label: its variant, then ``name=value`` of each parameter in ``columns``
    (numbers with their units, :func:`~netfl.sweep.labels.param_label`), ``-``-joined."""
    parts = []
    for c in columns:
        value = row[c]
        if isinstance(value, float) and math.isnan(value):
            continue
        parts.append(str(value) if c == "variant" else param_label(c, value, c.split(".")[-1]))
    return "-".join(p for p in parts if p) or "all"


def _order(row: pd.Series, columns: list[str], variants: dict[str, int]) -> tuple:
    """Groups sort by variant (as the sweep file lists them), then each parameter's value
    in numeric order (20 MHz before 100 MHz)."""
    return tuple(
        (variants.get(str(row[c]), 0),) if c == "variant" else value_sort_key(row[c])
        for c in columns
    )


def summary_table(index: pd.DataFrame, groups: dict[str, list[str]]) -> pd.DataFrame:
    """One row per group: completed seeds, and mean and std of every summary column."""
    rows = []
    by_run = index.set_index("run")
    for label, names in groups.items():
        done = by_run.loc[names]
        done = done[done["status"] == "complete"]
        row: dict = {"group": label, "runs": len(names), "complete": len(done)}
        for c in SUMMARY_COLUMNS:
            if c in done:
                values = pd.to_numeric(done[c], errors="coerce")
                row[f"{c}_mean"] = values.mean()
                row[f"{c}_std"] = values.std(ddof=1) if values.notna().sum() > 1 else 0.0
        rows.append(row)
    return pd.DataFrame(rows)


#: metrics drawn against a grid parameter (index column, axis label)
LINE_METRICS = (
    ("final_accuracy", "final accuracy"),
    ("time_to_target_s", "simulated time to target [s]"),
    ("sim_time_s", "simulated time [s]"),
    ("bits_to_target", "bits to target"),
    ("bits", "bits transferred"),
    ("energy_to_target_j", "device energy to target [J]"),
    ("device_energy_j", "device energy [J]"),
    ("round_time_s", "mean round time [s]"),
    ("starved_devices", "starved devices (most at a drop)"),
)


def readable(label: str, width: int = 22) -> str:
    """A long group label broken into lines of about ``width`` characters at its ``-``
    separators (tick labels of the bar charts stay legible)."""
    parts, lines, line = label.split("-"), [], ""
    for part in parts:
        candidate = f"{line}-{part}" if line else part
        if line and len(candidate) > width:
            lines.append(line + "-")
            line = part
        else:
            line = candidate
    lines.append(line)
    return "\n".join(lines)


def grid_parameters(index: pd.DataFrame) -> list[str]:
    """Parameter columns that vary over two or more numeric values (not seed or variant)."""
    out = []
    for c in _param_columns(index):
        if c in ("seed", "variant"):
            continue
        values = pd.to_numeric(index[c], errors="coerce")
        if values.notna().all() and values.nunique() >= 2:
            out.append(c)
    return out


def line_stats(index: pd.DataFrame, param: str, metric: str) -> pd.DataFrame:
    """Rows ``(line, x, mean, std, n)``: over the complete runs, ``metric`` against grid
    parameter ``param``, one line per combination of the other varying parameters
    (variant first; ``all`` if none), mean and sample std over seeds."""
    done = index[index["status"] == "complete"].copy()
    others = [
        c
        for c in _param_columns(index)
        if c not in (param, "seed") and index[c].astype(str).nunique() > 1
    ]
    done["x"] = pd.to_numeric(done[param])
    done["value"] = pd.to_numeric(done[metric], errors="coerce")
    done["line"] = [_label(row, others) for _, row in done.iterrows()] if others else "all"
    stats = done.groupby(["line", "x"], sort=False)["value"].agg(
        mean="mean", std=lambda v: v.std(ddof=1) if v.notna().sum() > 1 else 0.0, n="count"
    )
    variants = {
        v: i for i, v in enumerate(dict.fromkeys(index.get("variant", pd.Series()).astype(str)))
    }
    order = {
        line: _order(row, others, variants) if others else ()
        for line, row in zip(done["line"], (r for _, r in done.iterrows()), strict=True)
    }
    stats = stats.reset_index()
    stats["_order"] = stats["line"].map(order)
    return stats.sort_values(["_order", "x"], kind="stable").drop(columns="_order")


def _axis_label(param: str) -> str:
    """``bandwidth [Hz]`` for ``cell.link.bandwidth_hz``; the key itself without a unit."""
    q = quantity(param, 1.0)
    return param.split(".")[-1] if q is None else f"{q[0]} [{q[2]}]"


def _line_figure(index: pd.DataFrame, param: str, out: Path) -> Path | None:
    """Each metric against ``param`` (:func:`line_stats`): a line per variant with a
    ±1 std band."""
    done = index[index["status"] == "complete"]
    metrics = [
        (c, name)
        for c, name in LINE_METRICS
        if c in done and pd.to_numeric(done[c], errors="coerce").notna().any()
    ]
    if "starved_devices" in done and not (pd.to_numeric(done["starved_devices"]) > 0).any():
        metrics = [m for m in metrics if m[0] != "starved_devices"]  # (a flat zero line)
    if "time_to_target_s" in dict(metrics):  # with a target: the to-target costs only
        metrics = [m for m in metrics if m[0] not in ("sim_time_s", "bits", "device_energy_j")]
    if not metrics:
        return None
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.8), squeeze=False)
    for ax, (col, name) in zip(axes[0], metrics, strict=True):
        stats = line_stats(index, param, col)
        for i, (line, rows) in enumerate(stats.groupby("line", sort=False)):
            x, mean = rows["x"].to_numpy(float), rows["mean"].to_numpy(float)
            std = np.nan_to_num(rows["std"].to_numpy(float))
            label = f"{readable(str(line), 40)} (n={int(rows['n'].min())})"
            ax.plot(x, mean, "o-", color=f"C{i % 10}", lw=1.5, ms=4, label=label)
            ax.fill_between(x, mean - std, mean + std, color=f"C{i % 10}", alpha=0.2, lw=0)
        ax.set_xlabel(_axis_label(param))
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
        xs = stats["x"]
        if len(xs) and xs.min() > 0 and xs.max() / xs.min() >= 50:
            ax.set_xscale("log")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"against {param} (mean ± std over seeds)", fontsize=10)
    return _save(fig, out / f"{param.replace('.', '_')}_lines.png")


def _step_on_grid(df: pd.DataFrame, grid: np.ndarray) -> np.ndarray:
    """Accuracy at each time of ``grid``: the last evaluation at or before it (NaN before
    the first)."""
    d = df.dropna(subset=["accuracy"])
    pos = np.searchsorted(d["sim_time_s"].to_numpy(), grid, side="right") - 1
    acc = d["accuracy"].to_numpy()
    return np.where(pos >= 0, acc[np.clip(pos, 0, None)], np.nan)


def _band(ax, x, values: np.ndarray, label: str, color) -> None:
    with warnings.catch_warnings():  # before a seed's first evaluation: NaN, not drawn
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(values, axis=0)
        std = np.nanstd(values, axis=0, ddof=1) if len(values) > 1 else None
    ax.plot(x, mean, color=color, label=f"{label} (n={len(values)})", lw=1.5)
    if std is not None:
        ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.2, lw=0)


def _accuracy_figures(curves: dict[str, list[pd.DataFrame]], out: Path) -> list[Path]:
    paths = []
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, (label, runs) in enumerate(curves.items()):
        n = min(len(r) for r in runs)
        values = np.array([r["accuracy"].to_numpy()[:n] for r in runs], dtype=float)
        _band(ax, runs[0]["round"].to_numpy()[:n], values, label, f"C{i % 10}")
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy (mean ± std over seeds)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    paths.append(_save(fig, out / "accuracy_vs_round.png"))

    fig, ax = plt.subplots(figsize=(7, 4))
    for i, (label, runs) in enumerate(curves.items()):
        end = min(float(r["sim_time_s"].iloc[-1]) for r in runs)
        grid = np.linspace(0.0, end, 200)
        values = np.array([_step_on_grid(r, grid) for r in runs])
        _band(ax, grid, values, label, f"C{i % 10}")
    ax.set_xlabel("simulated time [s]")
    ax.set_ylabel("test accuracy (mean ± std over seeds)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    paths.append(_save(fig, out / "accuracy_vs_time.png"))
    return paths


def _cost_figure(summary: pd.DataFrame, target: bool, out: Path) -> Path:
    suffix = "_to_target" if target else ""
    metrics = (
        (f"time{suffix}_s" if target else "sim_time_s", "simulated time [s]"),
        (f"bits{suffix}", "bits transferred"),
        ("energy_to_target_j" if target else "device_energy_j", "device energy [J]"),
        *(() if target else (("round_time_s", "round time [s]"),)),
    )
    metrics = tuple(m for m in metrics if f"{m[0]}_mean" in summary)
    # one horizontal bar per group: the labels stack on the y axis and never overlap
    y = np.arange(len(summary))
    fig, axes = plt.subplots(
        1,
        len(metrics),
        figsize=(3.6 * len(metrics) + 1.5, 1.4 + 0.32 * len(summary)),
        squeeze=False,
    )
    for k, (ax, (col, xlabel)) in enumerate(zip(axes[0], metrics, strict=True)):
        ax.barh(y, summary[f"{col}_mean"], xerr=summary[f"{col}_std"], capsize=3, color=f"C{k}")
        ax.set_xlabel(xlabel)
        ax.set_yticks(y, summary["group"] if k == 0 else [""] * len(y), fontsize=7)
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
    what = "to reach the target accuracy" if target else "of the whole run"
    fig.suptitle(f"cost {what} (mean ± std over seeds; no bar: never reached)", fontsize=10)
    return _save(fig, out / "cost_to_target.png")


def _latency_figure(curves: dict[str, list[pd.DataFrame]], out: Path) -> Path:
    labels = list(curves)
    y = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(8, 1.4 + 0.32 * len(labels)))
    left = np.zeros(len(labels))
    for col, name in LATENCY_PARTS:
        means = np.array([np.mean([r[col].mean() for r in curves[g] if col in r]) for g in labels])
        ax.barh(y, np.nan_to_num(means), left=left, label=name)
        left += np.nan_to_num(means)
    ax.set_yticks(y, labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("simulated time per round [s]")
    ax.set_title("per-round latency breakdown (mean over rounds and seeds)", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    return _save(fig, out / "latency_breakdown.png")


def sweep_report(sweep_dir: str | Path, out: str | Path | None = None) -> list[Path]:
    """Write the report of ``sweep_dir`` (default into ``sweep_dir/report``); returns
    the paths written, ``index.html`` last."""
    sweep_dir = Path(sweep_dir)
    out = Path(out) if out is not None else sweep_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    index = pd.read_csv(sweep_dir / "sweep.csv")
    groups = group_runs(index)
    complete = set(index.loc[index["status"] == "complete", "run"])
    curves = {
        label: [pd.read_csv(sweep_dir / name / "rounds.csv") for name in names if name in complete]
        for label, names in groups.items()
    }
    curves = {label: runs for label, runs in curves.items() if runs}
    summary = summary_table(index, groups)
    summary.to_csv(out / "summary.csv", index=False)
    stragglers = straggler_table(sweep_dir, index, groups)
    stragglers.to_csv(out / "stragglers.csv", index=False)
    paths: list[Path] = [out / "summary.csv", out / "stragglers.csv"]
    if curves:
        if any(r["accuracy"].notna().any() for runs in curves.values() for r in runs):
            learned = {
                label: [r for r in runs if r["accuracy"].notna().any()]
                for label, runs in curves.items()
            }  # (timing-only runs have no accuracy)
            paths += _accuracy_figures({k: v for k, v in learned.items() if v}, out)
        target = "time_to_target_s" in index
        paths.append(_cost_figure(summary[summary["complete"] > 0], target, out))
        for param in grid_parameters(index):
            line = _line_figure(index, param, out)
            if line is not None:
                paths.append(line)
        paths.append(_latency_figure(curves, out))
    title = f"sweep {sweep_dir.resolve().name}"
    paths.append(report_page(title, summary, index, paths, out, sweep_dir, stragglers))
    return paths
