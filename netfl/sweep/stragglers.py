"""The sweep report's per-device view of stragglers: ``stragglers.csv``, one row per run.

A sweep's mean ± std over seeds hides who set each seed's round times: one device at
the cell edge, or on the slowest processor, can be the round's straggler (the last
device on its critical path, :mod:`netfl.sim.critical_path`) in nearly every round of
one seed and in none of another's. For every complete run this table names the device
most often the straggler and how much of the run's time it set:

- ``straggler_time_share``: the time of the rounds it held up over the run's total
  round time;
- ``straggler_lead_s`` / ``straggler_lead_share``: in those rounds, how long after the
  next-slowest device (the next latest to finish its last step of the round: download,
  compute, upload, D2D or backhaul) it finished — the time the round waited for it
  alone — mean [s] and summed over the run's total round time. NaN without the run's
  ``transfers.parquet``/``computes.parquet``/``devices.csv``, or when it was the round's
  only device.

A round whose critical path holds no device step (``straggler`` empty) counts, when
the step tables are there, the device that finished its last step of the round last.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

__all__ = ["STRAGGLER_COLUMNS", "run_stragglers", "straggler_table"]

#: the columns of ``stragglers.csv`` after ``run``, ``group`` and ``seed`` (docs/sweeps.md)
STRAGGLER_COLUMNS = (
    "rounds",
    "straggler",
    "straggler_rounds",
    "straggler_step",
    "round_time_s",
    "straggler_round_time_s",
    "straggler_time_share",
    "straggler_lead_s",
    "straggler_lead_share",
)


def _finish_times(run_dir: Path) -> pd.DataFrame | None:
    """``(round, node) → end_s`` of each participating device's last step in a round
    (its transfers, either end, and its computes); ``None`` without the tables."""
    try:
        devices = pd.read_csv(run_dir / "devices.csv")
        transfers = pd.read_parquet(run_dir / "transfers.parquet")
        computes = pd.read_parquet(run_dir / "computes.parquet")
    except (FileNotFoundError, OSError, ValueError):
        return None
    pues = set(devices.loc[devices["kind"] == "pue", "node"].astype(str))
    steps = pd.concat(
        [
            transfers[["round", "src", "end_s"]].rename(columns={"src": "node"}),
            transfers[["round", "dst", "end_s"]].rename(columns={"dst": "node"}),
            computes[["round", "node", "end_s"]],
        ]
    )
    steps = steps[steps["node"].astype(str).isin(pues)]
    return steps.groupby(["round", "node"])["end_s"].max()


def run_stragglers(rounds: pd.DataFrame, run_dir: Path | None = None) -> dict:
    """One run's row of :data:`STRAGGLER_COLUMNS` from its ``rounds.csv`` (``rounds``)
    and, for the lead, its step tables in ``run_dir``. A round whose ``straggler`` is
    empty (no device step on its critical path) counts the device that finished its
    last step of the round last, when the step tables say."""
    total_s = float(rounds["round_time_s"].sum())
    finish = _finish_times(run_dir) if run_dir is not None else None
    ends = {} if finish is None else {r: e.droplevel(0) for r, e in finish.groupby(level=0)}
    names = rounds.get("straggler", pd.Series(dtype=str)).fillna("").astype(str)
    last = [ends[r].idxmax() if r in ends else "" for r in rounds["round"]]
    names = names.where(names != "", pd.Series(last, index=names.index, dtype=str))
    row: dict = dict.fromkeys(STRAGGLER_COLUMNS, math.nan) | {
        "rounds": len(rounds),
        "straggler": "",
        "straggler_rounds": 0,
        "straggler_step": "",
        "round_time_s": float(rounds["round_time_s"].mean()),
    }
    held = names[names != ""]
    if held.empty:
        return row
    counts = held.value_counts()
    top = counts[counts == counts.max()].index
    # (of devices as often the straggler: the one whose rounds took longer, then by name)
    time_held = {d: float(rounds.loc[names == d, "round_time_s"].sum()) for d in top}
    device = min(top, key=lambda d: (-time_held[d], d))
    mine = rounds[names == device]
    steps = mine.get("straggler_step", pd.Series(dtype=str)).fillna("").astype(str)
    row |= {
        "straggler": device,
        "straggler_rounds": len(mine),
        "straggler_step": steps.mode().iloc[0] if len(steps) else "",
        "straggler_round_time_s": float(mine["round_time_s"].mean()),
        "straggler_time_share": time_held[device] / total_s if total_s > 0 else math.nan,
    }
    leads = [
        float(ends[r][device] - ends[r].drop(device).max())
        for r in mine["round"]
        if r in ends and device in ends[r].index and len(ends[r]) > 1
    ]
    row["straggler_lead_s"] = sum(leads) / len(leads) if leads else math.nan
    row["straggler_lead_share"] = sum(leads) / total_s if leads and total_s > 0 else math.nan
    return row


def straggler_table(
    sweep_dir: Path, index: pd.DataFrame, groups: dict[str, list[str]]
) -> pd.DataFrame:
    """``stragglers.csv``: one row per complete run with a ``rounds.csv`` (``run``,
    ``group``, ``seed``, then :data:`STRAGGLER_COLUMNS`), in the groups' order."""
    by_run = index.set_index("run")
    rows = []
    for label, names in groups.items():
        for name in names:
            path = sweep_dir / name / "rounds.csv"
            if by_run.loc[name, "status"] != "complete" or not path.is_file():
                continue
            seed = by_run.loc[name, "seed"] if "seed" in by_run else math.nan
            row = {"run": name, "group": label, "seed": seed}
            rows.append(row | run_stragglers(pd.read_csv(path), sweep_dir / name))
    return pd.DataFrame(rows, columns=["run", "group", "seed", *STRAGGLER_COLUMNS])
