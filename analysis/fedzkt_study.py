"""FedZKT study: FedZKT vs FedMD under IID / quantity / Dirichlet non-IID data, the loss
ablation, stragglers, the ℓ2 pull, the number of devices, per-device curves and bounds.

Runs the sweeps of ``scenarios/fedzkt/`` with ``netfl.sweep`` (public API only) and
writes tables and figures to ``analysis/fedzkt/``:

- ``methods``: global and mean device accuracy of FedZKT, FedMD's mean device accuracy,
  bits and simulated time per round, server time per round (+ accuracy-vs-round figure);
- ``skew``: c ∈ {2, 3, 4, 5} classes per device and Dirichlet β ∈ {0.1, 0.5, 1, 5};
- ``loss``, ``stragglers``, ``l2``, ``devices``: final/best accuracies per setting;
- ``device_curves.png``: every device model's accuracy per round (FedZKT, Dirichlet);
- ``bounds``: each device's architecture trained on its own data only (lower bound)
  and on all training data (upper bound), beside its FedZKT and FedMD accuracy.

    .venv/bin/python analysis/fedzkt_study.py [--rounds 15] [--workers 1]
        [--sweeps methods skew loss stragglers l2 devices budget] [--no-bounds]
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from netfl import RunDirectory, World, read_run  # noqa: E402
from netfl.learning import TrainConfig, evaluate, train_local  # noqa: E402
from netfl.sweep import expand, load_sweep, run_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "analysis" / "fedzkt"
PARTS = {"iid": "IID", "classes_per_device": "c = 2 classes", "dirichlet": "Dirichlet β = 0.5"}


def _sweep(name: str, out: Path, rounds: int, workers: int) -> tuple[pd.DataFrame, Path]:
    spec, path = load_sweep(ROOT / "scenarios" / "fedzkt" / f"{name}.sweep.yaml")
    runs = expand(spec, path, {"training.rounds": rounds, "outputs.figures": False})
    where = out / spec.name
    index = run_sweep(runs, where, workers, None, lambda n, s: print(f"  {n}: {s}", flush=True))
    return index, where


def _summary(where: Path, run: str) -> dict:
    res = read_run(where / run)
    r = res.rounds
    out = {
        "accuracy_final": r["accuracy"].iloc[-1],
        "accuracy_best": r["accuracy"].max(),
        "kbit_per_round": (r["uplink_bits"] + r["downlink_bits"]).mean() / 1e3,
        "sim_s_per_round": r["round_time_s"].mean(),
    }
    if "device_accuracy_mean" in r:
        out["device_acc_final"] = r["device_accuracy_mean"].iloc[-1]
    c = res.computes
    out["server_s_per_round"] = (
        (c["end_s"] - c["start_s"])[c["node"] == "bs"].sum() / len(r) if len(c) else 0.0
    )
    return out


def methods(index: pd.DataFrame, where: Path) -> pd.DataFrame:
    """Per data split and method: accuracy against round (mean ± std band over seeds) and
    one summary row per run (``seed`` column); :func:`methods_summary` aggregates."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    rows = []
    done = index[index["status"] == "complete"]
    for ax, (scheme, label) in zip(axes, PARTS.items(), strict=True):
        mine = done[done["run"].str.contains(f"partition={scheme}", regex=False)]
        for variant, g in mine.groupby("variant"):
            curves = [read_run(where / run).rounds for run in g["run"]]
            columns = (
                (
                    ("accuracy", "-", "FedZKT global model"),
                    ("device_accuracy_mean", "--", "FedZKT devices (mean)"),
                )
                if variant == "fedzkt"
                else (("accuracy", ":", "FedMD devices (mean)"),)
            )
            for col, style, name in columns:
                n = min(len(r) for r in curves)
                y = np.array([r[col].to_numpy()[:n] for r in curves])
                x = curves[0]["round"].to_numpy()[:n]
                line = ax.plot(x, y.mean(axis=0), style, label=f"{name} ({len(curves)} seeds)")
                ax.fill_between(
                    x,
                    y.mean(axis=0) - y.std(axis=0),
                    y.mean(axis=0) + y.std(axis=0),
                    color=line[0].get_color(),
                    alpha=0.15,
                    lw=0,
                )
            for _, row in g.iterrows():
                rows.append(
                    {
                        "data": label,
                        "method": variant,
                        "seed": row.get("seed"),
                        **_summary(where, row["run"]),
                    }
                )
        ax.set_title(label)
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("test accuracy")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "methods.png", dpi=120)
    plt.close(fig)
    _device_curves(index, where)
    return pd.DataFrame(rows)


def methods_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and sample std over seeds of every summary column, per data split and method."""
    stats = runs.drop(columns="seed").groupby(["data", "method"], sort=False).agg(["mean", "std"])
    stats.columns = [f"{c}_{s}" for c, s in stats.columns]
    stats.insert(0, "n_seeds", runs.groupby(["data", "method"], sort=False).size())
    return stats.reset_index()


def _device_curves(index: pd.DataFrame, where: Path) -> None:
    run = next((r for r in index["run"] if r.startswith("fedzkt-partition=dirichlet")), None)
    if run is None or not (where / run / "device_accuracy.parquet").exists():
        return
    dev = read_run(where / run).tables["device_accuracy"]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for (d, model), grp in dev.groupby(["device", "model"]):
        ax.plot(grp["round"], grp["accuracy"], label=f"{d}: {model}")
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy")
    ax.set_title("FedZKT device models, Dirichlet β = 0.5")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(OUT / "device_curves.png", dpi=120)
    plt.close(fig)


def _partition_label(value: str) -> str:
    part = ast.literal_eval(value) if isinstance(value, str) else value
    if part["scheme"] == "classes_per_device":
        return f"c = {part['classes']}"
    if part["scheme"] == "dirichlet":
        return f"Dirichlet β = {part['alpha']:g}"
    return part["scheme"]


def skew(index: pd.DataFrame, where: Path) -> pd.DataFrame:
    """FedZKT (global, devices) and FedMD (devices) final accuracy per non-IID setting:
    mean and sample std over seeds (``n_seeds``), plotted with ±1 std error bars."""
    rows = []
    for _, row in index[index["status"] == "complete"].iterrows():
        summ = _summary(where, row["run"])
        rows.append(
            {
                "partition": _partition_label(row["data.partition"]),
                "method": row["variant"],
                "global": summ["accuracy_final"] if row["variant"] == "fedzkt" else float("nan"),
                "devices_mean": summ.get("device_acc_final", summ["accuracy_final"]),
            }
        )
    df = pd.DataFrame(rows)
    order = list(dict.fromkeys(df["partition"]))
    stats = df.groupby(["partition", "method"]).agg(["mean", "std"])
    stats.columns = [f"{c}_{s}" for c, s in stats.columns]
    stats["n_seeds"] = df.groupby(["partition", "method"]).size()
    table = stats.unstack("method")
    table.columns = [f"{m}_{c}" for c, m in table.columns]
    table = table.dropna(axis=1, how="all").reindex(order).reset_index()
    fig, ax = plt.subplots(figsize=(8, 3.8))
    x = np.arange(len(table))
    for col, label in (
        ("fedzkt_global", "FedZKT global model"),
        ("fedzkt_devices_mean", "FedZKT devices (mean)"),
        ("fedmd_devices_mean", "FedMD devices (mean)"),
    ):
        if f"{col}_mean" in table:
            ax.errorbar(
                x, table[f"{col}_mean"], yerr=table[f"{col}_std"], fmt="o-", capsize=3, label=label
            )
    ax.set_xticks(list(x), table["partition"], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("final test accuracy (mean ± std over seeds)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "skew.png", dpi=120)
    plt.close(fig)
    return table


def settings(index: pd.DataFrame, where: Path, key: str) -> pd.DataFrame:
    """Per value of ``key``: the mean and sample std over seeds of every summary column
    (``n_seeds`` runs; std NaN with one seed)."""
    rows = []
    for _, row in index[index["status"] == "complete"].iterrows():
        rows.append({key: row[key], "seed": row.get("seed"), **_summary(where, row["run"])})
    df = pd.DataFrame(rows)
    stats = df.drop(columns="seed").groupby(key, sort=False).agg(["mean", "std"])
    stats.columns = [f"{c}_{s}" for c, s in stats.columns]
    stats.insert(0, "n_seeds", df.groupby(key, sort=False).size())
    return stats.reset_index()


def bounds(zkt_dirs: list[Path], rounds: int, with_fedmd: bool = True) -> pd.DataFrame:
    """Per FedZKT run (one seed each) and device: own-data-only and all-data training of
    the device's architecture (rounds × local epochs, and 2 epochs over all data), beside
    FedZKT's — and, ``with_fedmd``, the same seed's FedMD run's — final accuracy for that
    device (same seed, hence same partition)."""
    rows = []
    for zkt_dir in sorted(zkt_dirs):
        zkt = read_run(zkt_dir)
        runs = {"fedzkt": zkt}
        if with_fedmd:
            md_dir = zkt_dir.parent / zkt_dir.name.replace("fedzkt-", "fedmd-", 1)
            if not RunDirectory(md_dir).written:
                continue
            runs["fedmd"] = read_run(md_dir)
        world = World(zkt.scenario)
        ds, tr = world.dataset, zkt.scenario.training
        cfg = TrainConfig(
            lr=tr.lr,
            momentum=tr.momentum,
            batch_size=tr.batch_size,
            epochs=rounds * tr.local_epochs,
        )
        full_cfg = TrainConfig(
            lr=tr.lr, momentum=tr.momentum, batch_size=tr.batch_size, epochs=tr.local_epochs * 2
        )
        last = {
            name: res.tables["device_accuracy"].query("round == round.max()").set_index("device")
            for name, res in runs.items()
        }
        for d in world.devices:
            spec = world.device_model(d).spec
            model = spec.build(ds.input_shape, ds.num_classes)
            init = world.init_model_state(spec.name, d.index)
            idx = torch.from_numpy(world.partitions[d.index])
            loss = spec.loss_fn()
            own = train_local(model, init, ds.train_x[idx], ds.train_y[idx], cfg, d.index, loss)
            full = train_local(model, init, ds.train_x, ds.train_y, full_cfg, d.index, loss)
            rows.append(
                {
                    "run": zkt_dir.name,
                    "seed": zkt.scenario.seed,
                    "device": d.index,
                    "model": spec.name,
                    "samples": len(idx),
                    "lower_own_data": evaluate(model, own.state, ds.test_x, ds.test_y, loss)[0],
                    **{name: t.loc[d.index, "accuracy"] for name, t in last.items()},
                    "upper_all_data": evaluate(model, full.state, ds.test_x, ds.test_y, loss)[0],
                }
            )
        world.close()
    return pd.DataFrame(rows)


def bounds_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per setting (the run name without its seed) and seed: the device means of each
    column and how many devices beat their own-data bound; then, per setting, a mean and
    a std row over the seeds."""
    table = table.assign(setting=table["run"].str.replace(r"-seed\d+$", "", regex=True))
    methods = [m for m in ("fedzkt", "fedmd") if m in table]
    cols = ["lower_own_data", *methods, "upper_all_data"]
    g = table.groupby(["setting", "seed"], sort=False)
    per_seed = g[cols].mean()
    for m in methods:
        per_seed[f"{m}_above_lower"] = g.apply(
            lambda t, m=m: int((t[m] > t["lower_own_data"]).sum()), include_groups=False
        )
    per_seed = per_seed.reset_index()
    parts = []
    for setting, rows in per_seed.groupby("setting", sort=False):
        agg = rows.drop(columns=["setting", "seed"]).agg(["mean", "std"])
        agg.insert(0, "seed", ["mean", "std"])
        agg.insert(0, "setting", setting)
        parts += [rows.astype({"seed": str}), agg]
    return pd.concat(parts, ignore_index=True)


def _write_bounds(table: pd.DataFrame, name: str) -> None:
    table.to_csv(OUT / f"{name}.csv", index=False)
    summary = bounds_summary(table)
    summary.to_csv(OUT / f"{name}_summary.csv", index=False)
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.3f}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument(
        "--sweeps", nargs="+", default=["methods", "loss", "stragglers", "l2", "devices"]
    )
    ap.add_argument("--no-bounds", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "runs" / "fedzkt_study"))
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    pd.set_option("display.width", 180)
    keys = {
        "loss": "algorithm.loss",
        "stragglers": "algorithm.fraction",
        "l2": "algorithm.l2_weight",
        "devices": "devices.count",
        "budget": "algorithm.server_iterations",
    }
    for name in args.sweeps:
        print(f"sweep {name}:", flush=True)
        index, where = _sweep(name, Path(args.out), args.rounds, args.workers)
        if name == "methods":
            table = methods(index, where)
        elif name == "skew":
            table = skew(index, where)
        else:
            table = settings(index, where, keys[name])
        if name == "methods" and not args.no_bounds:
            b = bounds(list(where.glob("fedzkt-partition=dirichlet*")), args.rounds)
            _write_bounds(b, "bounds")
        if name == "budget":
            b = bounds(list(where.glob("*-seed*")), args.rounds, with_fedmd=False)
            _write_bounds(b, "budget_bounds")
        table.to_csv(OUT / f"{name}.csv", index=False)
        if name == "methods":
            table = methods_summary(table)
            table.to_csv(OUT / "methods_summary.csv", index=False)
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"figures: {OUT}")


if __name__ == "__main__":
    main()
