"""Who held each round up: a per-device timeline on the simulated clock (Gantt) with the
critical path outlined, and the distribution of per-device upload durations."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from netfl.output.saving import save_figure  # noqa: E402
from netfl.sim.critical_path import STEP_OF_DIRECTION  # noqa: E402

__all__ = ["device_timeline", "upload_cdf", "timeline_devices"]

#: colour of each device step
STEP_COLOURS = {
    "compute": "tab:green",
    "download": "tab:orange",
    "upload": "tab:blue",
    "d2d": "tab:purple",
    "backhaul": "tab:brown",
}


def _natural(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def timeline_devices(devices: list[str], stragglers: list[str], max_devices: int = 30) -> list[str]:
    """The devices a timeline shows: all up to ``max_devices``; beyond, the rounds'
    stragglers first, then devices evenly spaced in name order, in name order."""
    ordered = sorted(set(devices), key=_natural)
    if len(ordered) <= max_devices:
        return ordered
    keep = list(dict.fromkeys(s for s in stragglers if s in set(ordered)))[:max_devices]
    rest = [d for d in ordered if d not in set(keep)]
    picks = np.linspace(0, len(rest) - 1, max_devices - len(keep)).round().astype(int)
    keep += [rest[i] for i in dict.fromkeys(picks.tolist())]
    return sorted(keep, key=_natural)


def device_steps(
    transfers: pd.DataFrame, computes: pd.DataFrame, devices: set[str]
) -> pd.DataFrame:
    """One row per device step (device, step, start_s, end_s, round)."""
    rows = []
    if len(transfers):
        for end in ("src", "dst"):
            t = transfers[transfers[end].isin(devices)]
            rows.append(
                pd.DataFrame(
                    {
                        "device": t[end],
                        "step": t["direction"].map(STEP_OF_DIRECTION).fillna(t["direction"]),
                        "start_s": t["start_s"],
                        "end_s": t["end_s"],
                        "round": t["round"],
                    }
                )
            )
    if len(computes):
        c = computes[computes["node"].isin(devices)]
        rows.append(
            pd.DataFrame(
                {
                    "device": c["node"],
                    "step": "compute",
                    "start_s": c["start_s"],
                    "end_s": c["end_s"],
                    "round": c["round"],
                }
            )
        )
    columns = ["device", "step", "start_s", "end_s", "round"]
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)


def _shares(policy: pd.DataFrame | None) -> dict[tuple[int, str], float]:
    """``(round, device) → uplink share`` of the participants a policy gave one."""
    if policy is None or not len(policy):
        return {}
    given = policy[policy["selected"] & policy["share"].notna()]
    return {
        (int(r), str(d)): float(s)
        for r, d, s in zip(given["round"], given["device"], given["share"], strict=True)
    }


def device_timeline(
    rounds: pd.DataFrame,
    transfers: pd.DataFrame,
    computes: pd.DataFrame,
    critical: pd.DataFrame | None,
    devices: list[str],
    out: Path,
    title: str = "",
    max_devices: int = 30,
    max_rounds: int = 10,
    policy: pd.DataFrame | None = None,
) -> Path | None:
    """Gantt chart of the devices' steps (compute, download, upload, D2D, backhaul; blank:
    idle) over the first ``max_rounds`` rounds, round ends as vertical lines and the
    critical path's steps outlined in black; at most ``max_devices`` devices
    (:func:`timeline_devices`). With a resource policy's table (``policy``), an upload
    bar's height is the device's uplink share that round (full: none set). None when no
    device did anything."""
    shown_rounds = rounds["round"].iloc[:max_rounds].tolist()
    stragglers = [s for s in rounds.get("straggler", pd.Series(dtype=str)).iloc[:max_rounds] if s]
    names = timeline_devices(devices, stragglers, max_devices)
    steps = device_steps(transfers, computes, set(names))
    steps = steps[steps["round"].isin(shown_rounds)]
    if not len(steps):
        return None
    row = {d: i for i, d in enumerate(names)}
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.28 * len(names)))
    shares = _shares(policy)
    for step, colour in STEP_COLOURS.items():
        s = steps[steps["step"] == step]
        for device, group in s.groupby("device"):
            if step == "upload" and shares:
                for g in group.itertuples():
                    h = 0.7 * shares.get((g.round, device), 1.0)
                    ax.broken_barh(
                        [(g.start_s, g.end_s - g.start_s)],
                        (row[device] + 0.35 - h, h),
                        color=colour,
                        label=step,
                    )
                continue
            spans = list(zip(group["start_s"], group["end_s"] - group["start_s"], strict=True))
            ax.broken_barh(spans, (row[device] - 0.35, 0.7), color=colour, label=step)
    if critical is not None and len(critical):
        c = critical[critical["round"].isin(shown_rounds) & critical["node"].isin(row)]
        for p in c.itertuples():
            ax.broken_barh(
                [(p.start_s, p.end_s - p.start_s)],
                (row[p.node] - 0.42, 0.84),
                facecolor="none",
                edgecolor="black",
                linewidth=1.2,
            )
    t_end = rounds["sim_time_s"].iloc[: len(shown_rounds)]
    for t in t_end:
        ax.axvline(t, color="0.6", lw=0.6, ls="--")
    ax.set_yticks(range(len(names)), names, fontsize=7 if len(names) > 15 else 9)
    ax.invert_yaxis()
    ax.set_xlabel("simulated time [s]")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    of = f"rounds 0–{len(shown_rounds) - 1}" + (
        f" of {len(rounds)}" if len(rounds) > len(shown_rounds) else ""
    )
    sampled = (
        f", {len(names)} of {len(set(devices))} devices" if len(names) < len(set(devices)) else ""
    )
    heights = "; upload height: uplink share" if shares else ""
    ax.set_title(
        f"{title}: per-device timeline ({of}{sampled}; outlined: critical path{heights})",
        fontsize=9,
    )
    return save_figure(fig, out / "device_timeline.png")


def upload_cdf(
    transfers: pd.DataFrame, devices: set[str], out: Path, title: str = ""
) -> Path | None:
    """Empirical CDF of the devices' upload durations (every uplink transfer a device
    sent, all rounds); None without uploads."""
    if not len(transfers):
        return None
    up = transfers[(transfers["direction"] == "uplink") & transfers["src"].isin(devices)]
    if not len(up):
        return None
    d = np.sort((up["end_s"] - up["start_s"]).to_numpy())
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.step(d, np.arange(1, d.size + 1) / d.size, where="post")
    ax.set_xscale("log" if d[0] > 0 and d[-1] / d[0] > 100 else "linear")
    ax.set_xlabel("upload duration [s]")
    ax.set_ylabel("fraction of uploads ≤ x")
    ax.set_title(
        f"{title}: per-device upload durations ({d.size} uploads; median {np.median(d):.3g} s, "
        f"max {d[-1]:.3g} s)",
        fontsize=9,
    )
    ax.grid(alpha=0.3)
    return save_figure(fig, out / "upload_cdf.png")
