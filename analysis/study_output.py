"""What the studies do alike around their runs: the command line (``--workers``, a
fixed ``--target`` accuracy where they have one, ``--out`` for the run directories), a
figure saved, and the tables written as CSV beside the figures and printed."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent


def study_parser(doc: str, name: str, target: float | None = None) -> argparse.ArgumentParser:
    """The study's parser: its docstring's first line, ``--workers`` (1), ``--target``
    (``target``; none when None) and ``--out`` (``runs/<name>``: where the sweep's run
    directories go); a study adds its own options to it."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--workers", type=int, default=1)
    if target is not None:
        ap.add_argument("--target", type=float, default=target, help="fixed target accuracy")
    ap.add_argument("--out", default=str(ROOT / "runs" / name))
    return ap


def run_sweep_file(sweep: str, workers: int, out: Path) -> tuple[pd.DataFrame, Path]:
    """The sweep file ``scenarios/<sweep>`` run with figures off into ``out/<its name>``
    (runs already complete there are kept), each run's status printed as it ends: the
    sweep's index and that folder."""
    from netfl.sweep import expand, load_sweep, run_sweep

    spec, path = load_sweep(ROOT / "scenarios" / sweep)
    runs = expand(spec, path, {"outputs.figures": False})
    where = out / spec.name
    index = run_sweep(runs, where, workers, None, lambda n, s: print(f"  {n}: {s}", flush=True))
    return index, where


def save_figure(fig, out: Path, name: str) -> None:
    """``fig`` laid out and written to ``out/name`` (120 dpi), then closed."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / name, dpi=120)
    plt.close(fig)


def write_tables(out: Path, **tables: pd.DataFrame) -> None:
    """Each table to ``out/<its name>.csv``, without the index."""
    out.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        table.to_csv(out / f"{name}.csv", index=False)


def show_tables(
    summary: pd.DataFrame, paired: pd.DataFrame, out: Path, width: int = 250, label="figures"
) -> None:
    """The summary (4 significant digits) and the paired comparison (3 decimals)
    printed, then where the figures and tables are."""
    pd.set_option("display.width", width)
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(paired.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"{label}: {out}")
