"""Figures of one run, or of several runs overlaid (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from netfl.output.saving import save_figure  # noqa: E402
from netfl.output.timeline_figures import device_timeline, upload_cdf  # noqa: E402
from netfl.output.timing_report import timing_figures  # noqa: E402
from netfl.sim.result import RunResult  # noqa: E402

__all__ = [
    "run_figures",
    "compare_figures",
    "radio_figures",
    "diffusion_figures",
    "cost_to_target",
    "result_figures",
]

#: cumulative costs reported by :func:`cost_to_target` (``rounds.csv`` columns)
COST_COLUMNS = (
    "subframes",
    "models_sent",
    "models_downlink",
    "models_uplink",
    "models_d2d",
    "uplink_bits",
    "downlink_bits",
    "d2d_bits",
    "device_energy_j",
)


_save = save_figure


def _accuracy_curves(runs: dict[str, pd.DataFrame], out: Path, title: str) -> list[Path]:
    paths = []
    for x, xlabel, fname in (
        ("round", "round", "accuracy_vs_round.png"),
        ("sim_time_s", "simulated time [s]", "accuracy_vs_time.png"),
    ):
        fig, ax = plt.subplots(figsize=(6, 4))
        for label, df in runs.items():
            d = df.dropna(subset=["accuracy"])
            ax.plot(d[x], d["accuracy"], marker="o", ms=3, label=label)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("test accuracy")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        if len(runs) > 1:
            ax.legend()
        paths.append(_save(fig, out / fname))
    return paths


def _stacked_bars(ax, x, df: pd.DataFrame, columns) -> None:
    bottom = pd.Series(0.0, index=df.index)
    for col, label in columns:
        ax.bar(x, df[col], bottom=bottom, label=label)
        bottom = bottom + df[col]


def run_figures(
    rounds: pd.DataFrame, devices: pd.DataFrame, out: str | Path, title: str = ""
) -> list[Path]:
    """Accuracy vs round and vs simulated time (a run that evaluated its model: not a
    timing run), per-round time split, energy per device."""
    out = Path(out)
    runs = {title or "run": rounds}
    paths = _accuracy_curves(runs, out, title) if has_accuracy(runs) else []

    fig, ax = plt.subplots(figsize=(7, 4))
    _stacked_bars(
        ax,
        rounds["round"],
        rounds,
        (
            ("compute_time_s", "compute only"),
            ("comm_time_s", "communication only"),
            ("overlap_time_s", "both"),
            ("idle_time_s", "neither"),
        ),
    )
    ax.set_xlabel("round")
    ax.set_ylabel("simulated time [s]")
    ax.set_title(f"{title}: per-round time split")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    paths.append(_save(fig, out / "round_time_split.png"))

    dev = devices[devices["kind"] != "bs"]
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(dev)), 4))
    _stacked_bars(
        ax,
        dev["node"],
        dev,
        (
            ("compute_energy_j", "compute"),
            ("tx_energy_j", "radio tx"),
            ("rx_energy_j", "radio rx"),
            ("wait_energy_j", "radio wait"),
            ("tail_energy_j", "RRC tail"),
            ("promotion_energy_j", "RRC promotion"),
            ("idle_energy_j", "idle"),
        ),
    )
    ax.set_xlabel("device")
    ax.set_ylabel("energy [J]")
    ax.set_title(f"{title}: energy per device")
    ax.tick_params(axis="x", rotation=90)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    paths.append(_save(fig, out / "energy_per_device.png"))
    return paths


def cost_to_target(
    runs: dict[str, pd.DataFrame], target: float | None = None, baseline: str | None = None
) -> pd.DataFrame:
    """What each run spent until its accuracy first reached ``target``.

    ``target`` defaults to the peak accuracy of the ``baseline`` run (default:
    the first) — FedDif's "communication efficiency until the baseline FedAvg's
    peak accuracy" (Sec. VI). One row per run: whether and in which round it
    got there, the simulated time, and the cumulative sub-frames, transmitted
    models (by link type), bits and device energy up to that round (NaN if
    never reached).
    """
    if not runs:
        raise ValueError("no runs to compare")
    baseline = baseline if baseline is not None else next(iter(runs))
    if target is None:
        target = float(runs[baseline]["accuracy"].max())
    rows = []
    for label, df in runs.items():
        hit = df.index[df["accuracy"] >= target - 1e-12]
        row: dict = {"run": label, "target_accuracy": target, "reached": len(hit) > 0}
        if len(hit):
            upto = df.loc[: hit[0]]
            row.update(
                round=int(df.loc[hit[0], "round"]), sim_time_s=float(df.loc[hit[0], "sim_time_s"])
            )
            row.update({c: float(upto[c].sum()) for c in COST_COLUMNS if c in df})
        else:
            row.update(round=float("nan"), sim_time_s=float("nan"))
            row.update({c: float("nan") for c in COST_COLUMNS if c in df})
        rows.append(row)
    return pd.DataFrame(rows)


def _cost_figure(costs: pd.DataFrame, out: Path) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    x = range(len(costs))
    axes[0].bar(x, costs["subframes"].fillna(0), color="C0")
    axes[0].set_ylabel("sub-frames (1 ms) consumed")
    parts = [c for c in ("models_downlink", "models_uplink", "models_d2d") if c in costs]
    bottom = pd.Series(0.0, index=costs.index)
    for c in parts:
        axes[1].bar(x, costs[c].fillna(0), bottom=bottom, label=c.removeprefix("models_"))
        bottom = bottom + costs[c].fillna(0)
    axes[1].set_ylabel("models transmitted")
    axes[1].legend(fontsize=8)
    for ax in axes:
        ax.set_xticks(list(x))
        ax.set_xticklabels(
            [
                r + ("" if ok else " (not reached)")
                for r, ok in zip(costs["run"], costs["reached"], strict=True)
            ],
            rotation=20,
            fontsize=8,
        )
    fig.suptitle(f"cost to reach accuracy {costs['target_accuracy'].iloc[0]:.3f}")
    return _save(fig, out / "cost_to_target.png")


def diffusion_figures(diffusion: pd.DataFrame, out: str | Path, title: str = "") -> list[Path]:
    """FedDif: IID distance of every model over diffusion rounds (last round drawn)."""
    out = Path(out)
    last = diffusion[diffusion["round"] == diffusion["round"].max()]
    fig, ax = plt.subplots(figsize=(6, 4))
    for _model, d in last.groupby("model"):
        ax.plot(d["diffusion_round"], d["iid_distance"], marker="o", ms=3, lw=1)
    ax.set_xlabel("diffusion round")
    ax.set_ylabel("IID distance of the model's DoL")
    ax.set_title(f"{title}: round {int(last['round'].max())}, one line per model")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    return [_save(fig, out / "iid_distance_vs_diffusion_round.png")]


def has_accuracy(runs: dict[str, pd.DataFrame]) -> bool:
    """Whether any run evaluated its model (timing runs have no accuracy)."""
    return any(df["accuracy"].notna().any() for df in runs.values())


def compare_figures(
    runs: dict[str, pd.DataFrame], out: str | Path, baseline: str | None = None
) -> list[Path]:
    """Overlay several runs: with accuracy, accuracy vs round / time and the cost of
    reaching the baseline's peak accuracy (table as CSV too); always cumulative device
    energy vs time and the timing comparison (:func:`~netfl.output.timing_report.timing_figures`:
    round latency, energy by component, bits, the time split)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    if has_accuracy(runs):
        paths += _accuracy_curves(runs, out, "comparison")
        costs = cost_to_target(runs, baseline=baseline)
        costs.to_csv(out / "cost_to_target.csv", index=False)
        paths += [out / "cost_to_target.csv", _cost_figure(costs, out)]
    paths += timing_figures(runs, out)
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, df in runs.items():
        ax.plot(df["sim_time_s"], df["device_energy_j"].cumsum(), label=label)
    ax.set_xlabel("simulated time [s]")
    ax.set_ylabel("cumulative device energy [J]")
    ax.grid(alpha=0.3)
    ax.legend()
    paths.append(_save(fig, out / "energy_vs_time.png"))
    return paths


def radio_figures(
    scenario,
    transfers: pd.DataFrame,
    devices: pd.DataFrame,
    tables: dict[str, pd.DataFrame],
    out: str | Path,
) -> list[Path]:
    """OFDMA runs: per-transfer rate over time, RB occupancy, SNR map of the cell."""
    import numpy as np

    out = Path(out)
    paths = []
    fig, ax = plt.subplots(figsize=(7, 4))
    for direction, color in (("uplink", "C0"), ("downlink", "C1"), ("d2d", "C2")):
        d = transfers[transfers["direction"] == direction]
        if len(d):
            ax.hlines(
                d["mean_rate_bps"] / 1e6,
                d["start_s"],
                d["end_s"],
                color=color,
                label=direction,
                lw=2,
            )
    ax.set_yscale("log")
    ax.set_xlabel("simulated time [s]")
    ax.set_ylabel("mean rate of the transfer [Mbit/s]")
    ax.set_title(f"{scenario.name}: transfers")
    ax.legend(fontsize=8)
    paths.append(_save(fig, out / "transfer_rates.png"))

    occ = tables["occupancy"]
    channel = scenario.cell.link.channel_profile_resolved()
    if "cells" in tables:  # a network: every cell's carriers summed, and its layout
        paths.append(_network_occupancy(scenario, occ, channel.num_rbs, len(tables["cells"]), out))
        paths.append(_network_map(scenario, devices, tables, out))
        return paths
    fig, axes = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    for ax, carrier in zip(axes, ("uplink", "downlink"), strict=True):
        o = occ[occ["carrier"] == carrier]
        ax.stackplot(
            o["time_s"],
            o["session_rbs"],
            o["flow_rbs"],
            step="post",
            labels=["CUE sessions", "FL transfers"],
        )
        ax.axhline(channel.num_rbs, color="k", lw=0.8, ls="--")
        ax.set_ylabel(f"{carrier} RBs")
    axes[0].legend(fontsize=8, loc="upper right")
    axes[-1].set_xlabel("simulated time [s]")
    axes[0].set_title(f"{scenario.name}: resource-block occupancy")
    paths.append(_save(fig, out / "rb_occupancy.png"))

    radius = scenario.cell.radius_m
    grid = np.linspace(-radius, radius, 161)
    xx, yy = np.meshgrid(grid, grid)
    dist = np.hypot(xx, yy)
    loss = channel.build_pathloss().mean_loss_db(np.maximum(dist, 1.0)) - channel.antenna_gain_db
    snr_db = 10 * np.log10(channel.ue_tx_power_w / channel.noise_w("bs")) - loss
    snr_db = np.where(dist <= radius, snr_db, np.nan)
    fig, ax = plt.subplots(figsize=(6, 5))
    mesh = ax.pcolormesh(xx, yy, snr_db, shading="auto", cmap="viridis")
    fig.colorbar(mesh, ax=ax, label="uplink SNR, full power over the carrier [dB] (no fading)")
    cues = tables.get("cues")
    if cues is not None and len(cues):
        ax.scatter(cues["x_m"], cues["y_m"], s=4, c="w", alpha=0.6, label="CUEs")
    dev = devices[devices["kind"] != "bs"]
    ax.scatter(dev["x_m"], dev["y_m"], s=25, c="r", marker="^", label="PUEs (last drop)")
    ax.scatter([0], [0], s=80, c="k", marker="s", label="BS")
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title(f"{scenario.name}: SNR map")
    ax.legend(fontsize=7, loc="upper right")
    paths.append(_save(fig, out / "snr_map.png"))
    return paths


def _network_occupancy(scenario, occ: pd.DataFrame, num_rbs: int, cells: int, out: Path) -> Path:
    """RBs held over time, summed over a network's cells (each cell's step function
    carried forward to every instant any cell changed)."""
    fig, axes = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    for ax, carrier in zip(axes, ("uplink", "downlink"), strict=True):
        o = occ[occ["carrier"] == carrier]
        if o.empty:
            continue
        wide = {
            col: o.pivot_table(index="time_s", columns="cell", values=col, aggfunc="last")
            .ffill()
            .fillna(0.0)
            .sum(axis=1)
            for col in ("session_rbs", "flow_rbs")
        }
        ax.stackplot(
            wide["session_rbs"].index,
            wide["session_rbs"].values,
            wide["flow_rbs"].values,
            step="post",
            labels=["CUE sessions", "FL transfers"],
        )
        ax.axhline(num_rbs * cells, color="k", lw=0.8, ls="--")
        ax.set_ylabel(f"{carrier} RBs, all cells")
    axes[0].legend(fontsize=8, loc="upper right")
    axes[-1].set_xlabel("simulated time [s]")
    axes[0].set_title(f"{scenario.name}: resource-block occupancy over {cells} cells")
    return _save(fig, out / "rb_occupancy.png")


def _network_map(scenario, devices: pd.DataFrame, tables: dict, out: Path) -> Path:
    """Sites, devices (at the run's end) coloured by serving cell (at the last drop),
    CUEs, boresights, and moving devices' paths (``trajectories``; broken where a
    wrap-around network folds a path back in at the opposite edge)."""
    import numpy as np

    cells = tables["cells"]
    cov = tables.get("coverage")
    fig, ax = plt.subplots(figsize=(6.5, 6))
    cues = tables.get("cues")
    if cues is not None and len(cues):
        ax.scatter(cues["x_m"], cues["y_m"], s=4, c=cues["cell"] % 10, cmap="tab10", alpha=0.4)
    dev = devices[devices["kind"] != "bs"]
    if cov is not None and "cell" in cov:
        last = cov[cov["round"] == cov["round"].max()].set_index("device")["cell"]
        colour = [last.get(n, -1) % 10 for n in dev["node"]]
    else:
        colour = "r"
    sites = cells.drop_duplicates("site")
    span = float(np.ptp(sites["x_m"])) + float(np.ptp(sites["y_m"])) or 200.0
    paths = tables.get("trajectories")
    if paths is not None and len(paths):
        label = "paths"
        for _, path in paths.sort_values("time_s").groupby("device", sort=False):
            xy = path[["x_m", "y_m"]].to_numpy(float)
            fold = np.flatnonzero(np.hypot(*np.diff(xy, axis=0).T) > 0.2 * span)
            xy = np.insert(xy, fold + 1, np.nan, axis=0)  # (no line across a fold)
            ax.plot(xy[:, 0], xy[:, 1], color="0.45", lw=0.6, alpha=0.6, label=label)
            label = None
    ax.scatter(dev["x_m"], dev["y_m"], s=30, c=colour, cmap="tab10", marker="^", label="devices")
    ax.scatter(sites["x_m"], sites["y_m"], s=70, c="k", marker="s", label="sites")
    for _, c in cells.iterrows():
        if np.isfinite(c["boresight_deg"]):
            a = np.radians(c["boresight_deg"])
            ax.plot(
                [c["x_m"], c["x_m"] + 0.05 * span * np.cos(a)],
                [c["y_m"], c["y_m"] + 0.05 * span * np.sin(a)],
                color="k",
                lw=1,
            )
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title(f"{scenario.name}: {len(cells)} cells (colour: serving cell)")
    ax.legend(fontsize=7, loc="upper right")
    return _save(fig, out / "network_map.png")


def result_figures(result: RunResult, out: str | Path) -> list[Path]:
    """Every figure of one run (radio figures for OFDMA runs) into ``out``."""
    out = Path(out)
    paths = run_figures(result.rounds, result.devices, out, title=result.scenario.name)
    if "occupancy" in result.tables:
        paths += radio_figures(
            result.scenario, result.transfers, result.devices, result.tables, out
        )
    if len(result.tables.get("diffusion", ())):
        paths += diffusion_figures(result.tables["diffusion"], out, result.scenario.name)
    devices = result.devices.loc[result.devices["kind"] == "pue", "node"].tolist()
    title = result.scenario.name
    for path in (
        device_timeline(
            result.rounds,
            result.transfers,
            result.computes,
            result.tables.get("critical_path"),
            devices,
            out,
            title,
            policy=result.tables.get("policy"),
        ),
        upload_cdf(result.transfers, set(devices), out, title),
    ):
        if path is not None:
            paths.append(path)
    return paths
