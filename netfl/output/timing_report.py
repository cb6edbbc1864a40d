"""Comparing runs on what they cost: round latency, device energy by component, bits and
the time split (``netfl report RUN RUN ... --out DIR``), with or without accuracy.

Each run is one bar (horizontal, so no label ever overlaps another) or one curve;
``timing_summary.csv`` holds the numbers behind the figures.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from netfl.output.saving import save_figure  # noqa: E402

__all__ = ["ENERGY_COMPONENTS", "timing_figures", "timing_summary"]

#: ``rounds.csv``'s device energy components (they add up to ``device_energy_j``)
ENERGY_COMPONENTS = (
    ("device_compute_energy_j", "compute"),
    ("device_tx_energy_j", "radio tx"),
    ("device_rx_energy_j", "radio rx"),
    ("device_wait_energy_j", "radio wait"),
    ("device_tail_energy_j", "RRC tail"),
    ("device_promotion_energy_j", "RRC promotion"),
    ("device_idle_energy_j", "idle"),
)
_BITS = (
    ("uplink_bits", "uplink"),
    ("downlink_bits", "downlink"),
    ("d2d_bits", "D2D"),
    ("backhaul_bits", "backhaul"),
)
_SPLIT = (
    ("compute_time_s", "compute only"),
    ("comm_time_s", "communication only"),
    ("overlap_time_s", "both"),
    ("idle_time_s", "neither"),
)


def timing_summary(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per run: rounds, round time mean/std/max [s], simulated time [s], device
    energy [J] (total and per component, summed over rounds), bits per direction, the
    mean time split [s per round], and the device that was the straggler most often."""
    rows = []
    for label, df in runs.items():
        t = df["round_time_s"]
        row = {
            "run": label,
            "rounds": len(df),
            "round_time_mean_s": float(t.mean()),
            "round_time_std_s": float(t.std(ddof=1)) if len(df) > 1 else 0.0,
            "round_time_max_s": float(t.max()),
            "sim_time_s": float(df["sim_time_s"].iloc[-1]),
            "device_energy_j": float(df["device_energy_j"].sum()),
        }
        row.update({c: float(df[c].sum()) for c, _ in ENERGY_COMPONENTS if c in df})
        row.update({c: float(df[c].sum()) for c, _ in _BITS if c in df})
        row.update(
            {f"{c.removesuffix('_s')}_mean_s": float(df[c].mean()) for c, _ in _SPLIT if c in df}
        )
        stragglers = df.get("straggler", pd.Series(dtype=str))
        stragglers = stragglers[stragglers.astype(bool)] if len(stragglers) else stragglers
        row["straggler_most_often"] = stragglers.mode().iloc[0] if len(stragglers) else ""
        rows.append(row)
    return pd.DataFrame(rows)


def _hbars(ax, labels: list[str], parts: list[tuple[np.ndarray, str]], xlabel: str) -> None:
    """Stacked horizontal bars, one per run (top to bottom in the runs' order)."""
    y = np.arange(len(labels))
    left = np.zeros(len(labels))
    for values, name in parts:
        values = np.nan_to_num(np.asarray(values, dtype=float))
        if values.any():
            ax.barh(y, values, left=left, label=name)
        left += values
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)


def timing_figures(runs: dict[str, pd.DataFrame], out: str | Path) -> list[Path]:
    """``round_latency.png`` (mean ± std per run; CDF of round times), ``energy_by_component.png``
    (device energy per round by component), ``bits_and_time_split.png`` (bits per round by
    direction; the mean round split into compute, communication, both, neither) and
    ``timing_summary.csv``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = timing_summary(runs)
    labels = list(runs)
    paths = [out / "timing_summary.csv"]
    summary.to_csv(paths[0], index=False)
    height = 1.6 + 0.35 * len(labels)

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, max(3.5, height)))
    a.barh(
        np.arange(len(labels)),
        summary["round_time_mean_s"],
        xerr=summary["round_time_std_s"],
        capsize=3,
        color="C0",
    )
    a.set_yticks(np.arange(len(labels)), labels, fontsize=8)
    a.invert_yaxis()
    a.set_xlabel("round time [s], mean ± std over rounds")
    a.grid(axis="x", alpha=0.3)
    for label, df in runs.items():
        t = np.sort(df["round_time_s"].to_numpy())
        b.step(t, np.arange(1, t.size + 1) / t.size, where="post", label=label)
    b.set_xlabel("round time [s]")
    b.set_ylabel("fraction of rounds ≤ x")
    b.grid(alpha=0.3)
    b.legend(fontsize=7)
    fig.suptitle("round latency")
    paths.append(save_figure(fig, out / "round_latency.png"))

    per_round = {c: summary[c] / summary["rounds"] for c, _ in ENERGY_COMPONENTS if c in summary}
    fig, ax = plt.subplots(figsize=(9, max(3, height)))
    _hbars(
        ax,
        labels,
        [(per_round[c], n) for c, n in ENERGY_COMPONENTS if c in per_round],
        "device energy per round [J]",
    )
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    ax.set_title("device energy by component (they add up to device_energy_j)")
    paths.append(save_figure(fig, out / "energy_by_component.png"))

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, max(3, height)))
    bits = [(summary[c] / summary["rounds"] / 1e6, n) for c, n in _BITS if c in summary]
    _hbars(a, labels, bits, "Mbit per round on air")
    a.legend(fontsize=7)
    split = [
        (summary[f"{c.removesuffix('_s')}_mean_s"], n)
        for c, n in _SPLIT
        if f"{c.removesuffix('_s')}_mean_s" in summary
    ]
    _hbars(b, labels, split, "time per round [s]")
    b.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    b.set_yticklabels([])
    fig.suptitle("bits and the time split")
    paths.append(save_figure(fig, out / "bits_and_time_split.png"))
    return paths
