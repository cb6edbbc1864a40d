"""EcoFed study: classic FL, vanilla DPFL, local-loss DPFL and EcoFed over 3G/4G/5G.

Runs ``scenarios/ecofed/schemes.sweep.yaml`` (VGG11 and ResNet9 × 3G HSPA+,
4G LTE-Advanced, 5G × the four schemes) with ``netfl.sweep`` and draws, from
the run directories (public API only):

- stacked bars of the mean per-round time split (computation only,
  communication only, both at once) per scheme and network, per model;
- a table of communication volume (device bits per round) and round time,
  with ratios against classic FL and vanilla DPFL; with ``--learn`` (needs
  CIFAR-10 under ``--data-root``) also volume and time to ``--target``
  accuracy.

    .venv/bin/python analysis/ecofed_study.py [--workers 2] [--rounds 4]
    .venv/bin/python analysis/ecofed_study.py --learn --data-root DIR --rounds 200 --target 0.7
    .venv/bin/python analysis/ecofed_study.py --digits --model resnet9 --rounds 20 --target 0.9
    .venv/bin/python analysis/ecofed_study.py --digits-seeds --target 0.9   # 3 seeds, hflip

``--digits`` learns on scikit-learn's bundled 8×8 digits (a stand-in when no
CIFAR-10 is at hand: the same schemes and bytes, a much easier task).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from netfl import read_run  # noqa: E402
from netfl.sweep import expand, load_sweep, run_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "analysis" / "ecofed"
SCHEMES = ("classic_fl", "vanilla_dpfl", "local_loss_dpfl", "ecofed")
NETWORKS = {"3g_hspa_plus": "3G", "4g_lte_advanced": "4G", "5g": "5G"}


def per_round(index: pd.DataFrame, where: Path) -> pd.DataFrame:
    rows = []
    for _, row in index[index["status"] == "complete"].iterrows():
        r = read_run(where / row["run"]).rounds
        bits = r[["uplink_bits", "downlink_bits", "d2d_bits"]].sum(axis=1)
        rows.append(
            {
                "model": row["model.name"],
                "network": NETWORKS.get(row["devices.link_profile"], row["devices.link_profile"]),
                "scheme": row["variant"],
                "round_time_s": r["round_time_s"].mean(),
                "compute_only_s": r["compute_time_s"].mean(),
                "comm_only_s": r["comm_time_s"].mean(),
                "overlap_s": r["overlap_time_s"].mean(),
                "gbit_per_round": bits.mean() / 1e9,
                "uplink_gbit_per_round": r["uplink_bits"].mean() / 1e9,
                "device_energy_j_per_round": r["device_active_energy_j"].mean(),
                **{
                    k: row[k]
                    for k in (
                        "final_accuracy",
                        "rounds_to_target",
                        "time_to_target_s",
                        "bits_to_target",
                        "energy_to_target_j",
                    )
                    if k in row
                },
            }
        )
    df = pd.DataFrame(rows)
    for base in ("classic_fl", "vanilla_dpfl"):
        ref = df[df["scheme"] == base].set_index(["model", "network"])
        key = list(zip(df["model"], df["network"], strict=True))
        df[f"volume_vs_{base}"] = [
            g / ref.loc[k, "gbit_per_round"] for g, k in zip(df["gbit_per_round"], key, strict=True)
        ]
        df[f"time_vs_{base}"] = [
            t / ref.loc[k, "round_time_s"] for t, k in zip(df["round_time_s"], key, strict=True)
        ]
    return df


def time_split_figure(df: pd.DataFrame) -> Path:
    models = sorted(df["model"].unique())
    fig, axes = plt.subplots(1, len(models), figsize=(6.5 * len(models), 4), sharey=False)
    axes = [axes] if len(models) == 1 else axes
    for ax, model in zip(axes, models, strict=True):
        d = df[df["model"] == model]
        labels, x = [], 0
        for net in NETWORKS.values():
            for scheme in SCHEMES:
                row = d[(d["network"] == net) & (d["scheme"] == scheme)]
                if row.empty:
                    continue
                row = row.iloc[0]
                bottom = 0.0
                for col, color, name in (
                    ("compute_only_s", "C0", "computation only"),
                    ("overlap_s", "C2", "both"),
                    ("comm_only_s", "C1", "communication only"),
                ):
                    ax.bar(x, row[col], bottom=bottom, color=color, label=name if x == 0 else None)
                    bottom += row[col]
                labels.append(f"{net}\n{scheme.replace('_dpfl', '').replace('_', ' ')}")
                x += 1
            x += 0.5
        ax.set_xticks([i + 0.5 * (i // len(SCHEMES)) for i in range(len(labels))])
        ax.set_xticklabels(labels, fontsize=6)
        ax.set_ylabel("simulated time per round [s]")
        ax.set_title(f"{model}: per-round latency")
        ax.legend(fontsize=8)
    fig.tight_layout()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "round_time_split.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def digits_study(workers: int, target: float, out: Path) -> pd.DataFrame:
    """``scenarios/ecofed/digits.sweep.yaml``: the schemes and EcoFed with hflip on the
    bundled digits, 3 seeds; per variant mean ± std of rounds, time, bits and the
    devices' active energy (compute + modem) to ``target`` (fixed in advance) and of the
    final accuracy."""
    spec, path = load_sweep(ROOT / "scenarios" / "ecofed" / "digits.sweep.yaml")
    runs = expand(spec, path)
    where = out / "digits_seeds"
    index = run_sweep(runs, where, workers, target, lambda n, s: print(f"  {n}: {s}", flush=True))
    ok = index[index["status"] == "complete"].copy()
    # the devices' active energy (compute + modem) to the target, as the table says (the
    # index's energy_to_target_j also counts the idle platform power)
    ok["energy_to_target_j"] = [
        read_run(where / run).rounds["device_active_energy_j"].iloc[: int(n)].sum()
        if pd.notna(n)
        else float("nan")
        for run, n in zip(ok["run"], ok["rounds_to_target"], strict=True)
    ]
    cols = [
        "final_accuracy",
        "rounds_to_target",
        "time_to_target_s",
        "bits_to_target",
        "energy_to_target_j",
    ]
    rows = []
    for variant, g in ok.groupby("variant", sort=False):
        row = {
            "variant": variant,
            "reached": f"{int(g['rounds_to_target'].notna().sum())}/{len(g)}",
        }
        for c in cols:
            row[f"{c}_mean"] = g[c].mean()
            row[f"{c}_std"] = g[c].std()
        rows.append(row)
    table = pd.DataFrame(rows)
    # curves: mean ± std of accuracy per round
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for c, (variant, g) in enumerate(ok.groupby("variant", sort=False)):
        wide = pd.concat(
            [read_run(where / run).rounds.set_index("round")["accuracy"] for run in g["run"]],
            axis=1,
        )
        mean, std = wide.mean(axis=1), wide.std(axis=1).fillna(0.0)
        ax.plot(mean.index, mean.values, color=f"C{c}", label=variant)
        ax.fill_between(mean.index, mean - std, mean + std, color=f"C{c}", alpha=0.15, lw=0)
    ax.axhline(target, color="k", ls=":", lw=1)
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy (digits)")
    ax.set_title("ResNet9, PP2, 3G; mean ± std over 3 seeds", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    OUT.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT / "digits_accuracy.png", dpi=120)
    plt.close(fig)
    ok.to_csv(OUT / "digits_runs.csv", index=False)
    table.to_csv(OUT / "digits_summary.csv", index=False)
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--learn", action="store_true", help="train on CIFAR-10 (needs --data-root)")
    ap.add_argument("--data-root", help="local CIFAR-10 root (torchvision layout)")
    ap.add_argument("--digits", action="store_true", help="learn on the bundled 8×8 digits")
    ap.add_argument("--model", choices=["vgg11", "resnet9"], help="run only this model")
    ap.add_argument("--target", type=float, default=None, help="target accuracy (learn mode)")
    ap.add_argument(
        "--digits-seeds",
        action="store_true",
        help="the seeded digits comparison with hflip (scenarios/ecofed/digits.sweep.yaml)",
    )
    ap.add_argument("--out", default=str(ROOT / "runs" / "ecofed_study"))
    args = ap.parse_args()
    if args.digits_seeds:
        table = digits_study(args.workers, args.target or 0.9, Path(args.out))
        pd.set_option("display.width", 200)
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        return
    spec, path = load_sweep(ROOT / "scenarios" / "ecofed" / "schemes.sweep.yaml")
    overrides: dict = {"training.rounds": args.rounds, "outputs.figures": False}
    if args.learn:
        if not args.data_root:
            ap.error("--learn needs --data-root (CIFAR-10 is not downloaded)")
        overrides.update(
            {
                "learning.mode": "learn",
                "data.dataset": "cifar10",
                "data.root": str(Path(args.data_root).resolve()),  # (from here, not the scenario)
                "data.synthetic": {},
            }
        )
    if args.digits:
        overrides.update({"learning.mode": "learn", "data.dataset": "digits", "data.synthetic": {}})
    runs = expand(spec, path, overrides)
    if args.model:
        runs = [r for r in runs if r.params.get("model.name") == args.model]
    mode = "learn" if args.learn else "digits" if args.digits else "timing"
    where = Path(args.out) / mode
    index = run_sweep(
        runs, where, args.workers, args.target, lambda n, s: print(f"  {n}: {s}", flush=True)
    )
    df = per_round(index, where)
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(OUT / ("per_round.csv" if mode == "timing" else f"{mode}.csv"), index=False)
    pd.set_option("display.width", 200)
    show = [
        "model",
        "network",
        "scheme",
        "round_time_s",
        "gbit_per_round",
        "device_energy_j_per_round",
        "volume_vs_classic_fl",
        "volume_vs_vanilla_dpfl",
        "time_vs_classic_fl",
        "time_vs_vanilla_dpfl",
    ]
    show += [
        c
        for c in ("final_accuracy", "rounds_to_target", "time_to_target_s", "bits_to_target")
        if c in df
    ]
    print(df[show].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    if mode == "timing":
        print(time_split_figure(df))


if __name__ == "__main__":
    main()
