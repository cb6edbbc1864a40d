"""Update-codec study (a): accuracy against the bits on air and the simulated time for
none / fp16 / QSGD / top-k with error feedback / signSGD on one LTE cell (public API).

Alistarh et al. (QSGD, NeurIPS 2017) and Stich, Cordonnier & Jaggi (Sparsified SGD
with Memory, NeurIPS 2018) report "the same accuracy for a fraction of the bits";
Bernstein et al. (signSGD with majority vote, ICLR 2019) 32× fewer bits per value.
Runs ``scenarios/codecs/compress.sweep.yaml`` with ``netfl.sweep`` (FedAvg, the uplink
codec the variable) and draws from the run directories:

- test accuracy against the cumulative uplink bits and against simulated time, mean ±
  std over seeds (``accuracy_vs_bits_and_time.png``);
- per codec (mean ± std over seeds): the bits of one upload, the accuracy over the last
  five rounds, the rounds, uplink bits, simulated time and device energy to a target
  accuracy (``summary.csv``, per run ``runs.csv``), and each codec's ratios to ``none``
  on the same seed (``paired.csv``).

    .venv/bin/python analysis/codecs_study.py [--workers 1] [--target 0.9]
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from hierfavg_study import summary  # noqa: E402  (the same per-variant table)
from study_bands import band, band_on_time  # noqa: E402
from study_output import (  # noqa: E402
    run_sweep_file,
    save_figure,
    show_tables,
    study_parser,
    write_tables,
)

from netfl import read_run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "analysis" / "codecs"
VARIANTS = ["none", "fp16", "qsgd", "topk", "sign"]


def run_study(workers: int, out: Path) -> tuple[pd.DataFrame, Path]:
    return run_sweep_file("codecs/compress.sweep.yaml", workers, out)


def per_run(index: pd.DataFrame, where: Path, target: float) -> pd.DataFrame:
    rows = []
    for _, row in index[index["status"] == "complete"].iterrows():
        run = read_run(where / row["run"])
        r = run.rounds
        up = run.transfers[run.transfers["kind"] == "model_up"]
        hit = r.index[r["accuracy"] >= target]
        upto = r.loc[: hit[0]] if len(hit) else None

        def to_target(col: str, upto=upto) -> float:
            return float(upto[col].sum()) if upto is not None else np.nan

        rows.append(
            {
                "variant": row["variant"],
                "seed": row["seed"],
                "upload_bits": float(up["size_bits"].mean()),
                "last5_accuracy": float(r["accuracy"].tail(5).mean()),
                "rounds_to_target": float(r.loc[hit[0], "round"] + 1) if len(hit) else np.nan,
                "uplink_bits_to_target": to_target("uplink_bits"),
                "time_to_target_s": float(r.loc[hit[0], "sim_time_s"]) if len(hit) else np.nan,
                "energy_to_target_j": to_target("device_active_energy_j"),
                "uplink_bits": float(r["uplink_bits"].sum()),
                "sim_time_s": float(r["sim_time_s"].iloc[-1]),
            }
        )
    return pd.DataFrame(rows)


def paired(runs: pd.DataFrame, baseline: str = "none") -> pd.DataFrame:
    """Per codec, mean ± std over seeds of its ratio to ``none`` on the same seed (the
    same drop, data split and initial model) of the bits per upload and of the uplink
    bits, time and device energy to the target, and its accuracy difference."""
    base = runs[runs["variant"] == baseline].set_index("seed")
    rows = []
    for variant in VARIANTS:
        g = runs[runs["variant"] == variant].set_index("seed")
        if g.empty:
            continue
        row = {"variant": variant}
        for col in (
            "upload_bits",
            "uplink_bits_to_target",
            "time_to_target_s",
            "energy_to_target_j",
        ):
            ratio = g[col] / base[col].reindex(g.index)
            row[f"{col}_ratio_mean"], row[f"{col}_ratio_std"] = ratio.mean(), ratio.std()
        diff = g["last5_accuracy"] - base["last5_accuracy"].reindex(g.index)
        row["last5_accuracy_minus_none_mean"] = diff.mean()
        row["last5_accuracy_minus_none_std"] = diff.std()
        rows.append(row)
    return pd.DataFrame(rows)


def figure(index: pd.DataFrame, where: Path, target: float) -> None:
    fig, (by_bits, by_time) = plt.subplots(1, 2, figsize=(11, 4))
    done = index[index["status"] == "complete"]
    for c, variant in enumerate(v for v in VARIANTS if v in set(done["variant"])):
        curves = [read_run(where / n).rounds for n in done.loc[done["variant"] == variant, "run"]]
        acc = np.array([r["accuracy"].to_numpy() for r in curves])
        bits = np.array([r["uplink_bits"].cumsum().to_numpy() for r in curves]).mean(axis=0)
        label = f"{variant} ({len(curves)} seeds)"
        band(by_bits, bits, acc, f"C{c}", label)  # (the seeds' uploads are the same sizes)
        band_on_time(by_time, curves, f"C{c}", label)
    by_bits.set_xscale("log")
    by_bits.set_xlabel("uplink bits on air, cumulative (all devices)")
    by_time.set_xlabel("simulated time [s]")
    for ax in (by_bits, by_time):
        ax.axhline(target, color="k", ls=":", lw=1)
        ax.set_ylabel("test accuracy")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save_figure(fig, OUT, "accuracy_vs_bits_and_time.png")


def main() -> None:
    args = study_parser(__doc__, "codecs_study", 0.9).parse_args()
    index, where = run_study(args.workers, Path(args.out))
    runs = per_run(index, where, args.target)
    table = summary(runs).set_index("variant").reindex(VARIANTS).reset_index()
    ratios = paired(runs)
    figure(index, where, args.target)
    write_tables(OUT, runs=runs, summary=table, paired=ratios)
    show_tables(table, ratios, OUT, 250)


if __name__ == "__main__":
    main()
