"""Resource-policy study (c): least-energy shares, powers and frequencies vs equal
bandwidth at the same round deadline (public API).

Z. Yang, M. Chen, W. Saad, C. S. Hong, M. Shikh-Bahaei, "Energy Efficient Federated
Learning over Wireless Communication Networks", IEEE TWC 2021, compare their joint
allocation with EB-FDMA (every device the same bandwidth, its power and frequency still
chosen) as the completion time varies. Runs ``scenarios/policies/min_energy.sweep.yaml``
(``policy: min_energy`` with and without ``equal_shares``, five deadlines, three seeds;
timing mode) with ``netfl.sweep`` and draws from the run directories:

- per deadline and variant (mean ± std over seeds): the devices' compute and transmit
  energy per round and per update that arrived, the updates per round, the late ones
  (``summary.csv``, per run ``runs.csv``);
- per deadline, the energy per update saved against equal shares on the same seed
  (``paired.csv``), and ``energy_vs_deadline.png``.

    .venv/bin/python analysis/min_energy_study.py [--workers 1]
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from study_output import (  # noqa: E402
    run_sweep_file,
    save_figure,
    show_tables,
    study_parser,
    write_tables,
)

from netfl import read_run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "analysis" / "min_energy"


def run_study(workers: int, out: Path) -> tuple[pd.DataFrame, Path]:
    return run_sweep_file("policies/min_energy.sweep.yaml", workers, out)


def per_run(index: pd.DataFrame, where: Path) -> pd.DataFrame:
    rows = []
    for _, row in index[index["status"] == "complete"].iterrows():
        run = read_run(where / row["run"])
        r = run.rounds
        energy = r["device_compute_energy_j"] + r["device_tx_energy_j"]
        rows.append(
            {
                "variant": row["variant"],
                "deadline_s": float(run.scenario.algorithm.options()["deadline_s"]),
                "seed": row["seed"],
                "energy_per_round_mj": 1e3 * float(energy.mean()),
                "compute_per_round_mj": 1e3 * float(r["device_compute_energy_j"].mean()),
                "tx_per_round_mj": 1e3 * float(r["device_tx_energy_j"].mean()),
                "energy_per_update_mj": 1e3 * float(energy.sum() / r["clients_arrived"].sum()),
                "updates_per_round": float(r["clients_arrived"].mean()),
                "late_per_round": float(r["clients_late"].mean()),
                "round_time_s": float(r["round_time_s"].max()),
            }
        )
    return pd.DataFrame(rows)


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    agg = runs.drop(columns="seed").groupby(["deadline_s", "variant"]).agg(["mean", "std"])
    agg.columns = [f"{a}_{b}" for a, b in agg.columns]
    return agg.reset_index()


def paired(runs: pd.DataFrame) -> pd.DataFrame:
    """Per deadline: 1 − min_energy's energy per update over equal shares' on the same
    seed (the same drop), mean ± std over seeds."""
    k = ["deadline_s", "seed"]
    opt = runs[runs["variant"] == "min_energy"].set_index(k)["energy_per_update_mj"]
    eq = runs[runs["variant"] == "equal_shares"].set_index(k)["energy_per_update_mj"]
    saved = (1.0 - opt / eq).rename("saved").reset_index()
    out = saved.groupby("deadline_s")["saved"].agg(["mean", "std"])
    return out.rename(columns=lambda c: f"energy_per_update_saved_{c}").reset_index()


def figure(table: pd.DataFrame) -> None:
    fig, (energy, served) = plt.subplots(1, 2, figsize=(10, 3.8))
    deadlines = sorted(table["deadline_s"].unique())
    for c, (variant, g) in enumerate(table.groupby("variant", sort=False)):
        for ax, col in ((energy, "energy_per_update_mj"), (served, "updates_per_round")):
            ax.errorbar(
                g["deadline_s"],
                g[f"{col}_mean"],
                yerr=g[f"{col}_std"],
                marker="o",
                color=f"C{c}",
                capsize=3,
                label=variant,
            )
    energy.set_ylabel("energy per update [mJ]\n(compute + transmit)")
    served.set_ylabel("updates per round (of 10)")
    for ax in (energy, served):
        ax.set_xscale("log")
        ax.set_xticks(deadlines, [f"{d:g}" for d in deadlines])
        ax.minorticks_off()
        ax.set_xlabel("round deadline [s]")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save_figure(fig, OUT, "energy_vs_deadline.png")


def main() -> None:
    args = study_parser(__doc__, "min_energy_study").parse_args()
    index, where = run_study(args.workers, Path(args.out))
    runs = per_run(index, where)
    table = summary(runs)
    saved = paired(runs)
    figure(table)
    write_tables(OUT, runs=runs, summary=table, paired=saved)
    show_tables(table, saved, OUT, 250)


if __name__ == "__main__":
    main()
