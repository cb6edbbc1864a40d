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
        [--sweeps methods skew loss stragglers l2 devices] [--no-bounds]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from netfl import World, read_run  # noqa: E402
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


def skew(index: pd.DataFrame, where: Path) -> pd.DataFrame:
    """FedZKT (global, devices) and FedMD (devices) final accuracy per non-IID setting."""
    rows = []
    for _, row in index[index["status"] == "complete"].iterrows():
        setting = row["run"].split("partition=", 1)[1]
        summ = _summary(where, row["run"])
        rows.append(
            {
                "partition": setting,
                "method": row["variant"],
                "global": summ["accuracy_final"] if row["variant"] == "fedzkt" else float("nan"),
                "devices_mean": summ.get("device_acc_final", summ["accuracy_final"]),
            }
        )
    table = pd.DataFrame(rows).pivot(index="partition", columns="method")
    table.columns = [f"{m}_{v}" for v, m in table.columns]
    table = table.dropna(axis=1, how="all").reset_index()
    fig, ax = plt.subplots(figsize=(8, 3.8))
    x = range(len(table))
    for col in [c for c in table.columns if c != "partition"]:
        ax.plot(x, table[col], "o-", label=col.replace("_", " "))
    ax.set_xticks(list(x), table["partition"], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("final test accuracy")
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


def bounds(methods_where: Path, rounds: int) -> pd.DataFrame:
    """Per device of the Dirichlet runs: own-data-only and all-data training of its
    architecture for rounds × local epochs epochs, beside FedZKT's and FedMD's result."""
    zkt = read_run(next(methods_where.glob("fedzkt-partition=dirichlet*")))
    md = read_run(next(methods_where.glob("fedmd-partition=dirichlet*")))
    world = World(zkt.scenario)
    ds, tr = world.dataset, zkt.scenario.training
    epochs = rounds * tr.local_epochs
    cfg = TrainConfig(lr=tr.lr, momentum=tr.momentum, batch_size=tr.batch_size, epochs=epochs)
    last = {
        name: res.tables["device_accuracy"].query("round == round.max()").set_index("device")
        for name, res in (("fedzkt", zkt), ("fedmd", md))
    }
    rows = []
    for d in world.devices:
        spec = world.device_model(d).spec
        model = spec.build(ds.input_shape, ds.num_classes)
        init = world.init_model_state(spec.name, d.index)
        idx = torch.from_numpy(world.partitions[d.index])
        own = train_local(
            model, init, ds.train_x[idx], ds.train_y[idx], cfg, d.index, spec.loss_fn()
        )
        full_cfg = TrainConfig(
            lr=tr.lr, momentum=tr.momentum, batch_size=tr.batch_size, epochs=tr.local_epochs * 2
        )
        full = train_local(model, init, ds.train_x, ds.train_y, full_cfg, d.index, spec.loss_fn())
        rows.append(
            {
                "device": d.index,
                "model": spec.name,
                "samples": len(idx),
                "lower_own_data": evaluate(model, own.state, ds.test_x, ds.test_y, spec.loss_fn())[
                    0
                ],
                "fedzkt": last["fedzkt"].loc[d.index, "accuracy"],
                "fedmd": last["fedmd"].loc[d.index, "accuracy"],
                "upper_all_data": evaluate(model, full.state, ds.test_x, ds.test_y, spec.loss_fn())[
                    0
                ],
            }
        )
    return pd.DataFrame(rows)


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
            b = bounds(where, args.rounds)
            b.to_csv(OUT / "bounds.csv", index=False)
            print(b.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        table.to_csv(OUT / f"{name}.csv", index=False)
        if name == "methods":
            table = methods_summary(table)
            table.to_csv(OUT / "methods_summary.csv", index=False)
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"figures: {OUT}")


if __name__ == "__main__":
    main()
