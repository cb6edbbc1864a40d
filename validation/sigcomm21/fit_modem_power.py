"""Fit phone modem power profiles to public measurements (issue 54, part 1): the artifact
of Narayanan et al., "A Variegated Look at 5G in the Wild: Performance, Power, and QoE
Implications", SIGCOMM 2021 (github.com/SIGCOMM21-5G/artifact; not copied here).

Reads, from the artifact (a checkout, or the bare snapshot the fetch tool makes, read
with ``git show``):

- ``Data-Transfer-Power/MN-Transfer/data-processed/MN-Transfer_combined.csv``: a Galaxy
  S20 Ultra on Verizon, whole-device power (Monsoon, mW, one row a second) against iPerf
  throughput (Mbit/s), for LTE, 5G NSA low-band (``NSALow``) and mmWave, both
  directions, at target rates from 1 Mbit/s to 2.4 Gbit/s;
- ``Power-Model/MN-Wild/data-processed/baseline_power.csv``: the same phone's baseline
  (screen at maximum, no transfer) per run, mW.

Per network type, direction and target rate it keeps the median power, the median
throughput and the sample count; a target is **well sampled** when it has at least 30
seconds and its median throughput reaches the target within 10 % (a saturated target —
the link could not carry it — mixes rates and is left out of the fit). On the well-sampled
medians it fits the modem's power above the median baseline, P − P_base = β + α·R
(least squares; Huang et al.'s linear form — the data show no curvature a piecewise model
would pay for, see the fit errors), per network type and direction.

Writes ``tests/reference/sigcomm21_modem_power.json``: the aggregated figures (no raw
log), the baseline, the coefficients with their fit errors and provenance. The compute
profiles ``s20u_lte``, ``s20u_5g_lowband`` and ``s20u_5g_mmwave``
(``netfl/compute/data/compute_profiles.yaml``) carry the coefficients; the tests hold
the profiles to the figures, and re-run this fit where the artifact is at hand.

    .venv/bin/python -m validation.sigcomm21.fit_modem_power [--artifact PATH]
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "reference" / "sigcomm21_modem_power.json"
#: where the fetch tool leaves the artifact's snapshot on this machine
DEFAULT_ARTIFACT = Path("/work/.mirror/SIGCOMM21-5G+artifact/repo")
TRANSFER = "Data-Transfer-Power/MN-Transfer/data-processed/MN-Transfer_combined.csv"
BASELINE = "Power-Model/MN-Wild/data-processed/baseline_power.csv"
#: the artifact's network types → netfl's names
NETWORKS = {"LTE": "lte", "NSALow": "5g_lowband", "mmwave": "5g_mmwave"}
MIN_SECONDS = 30
REACHED = 0.10  # (median throughput within this of the target)


def read(artifact: Path, path: str) -> pd.DataFrame:
    """A CSV of the artifact: from a checkout, else from a bare repository's HEAD."""
    if (artifact / path).is_file():
        return pd.read_csv(artifact / path)
    text = subprocess.run(
        ["git", "-C", str(artifact), "show", f"HEAD:{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return pd.read_csv(io.StringIO(text))


def commit(artifact: Path) -> str | None:
    out = subprocess.run(
        ["git", "-C", str(artifact), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return out.stdout.strip() or None


def aggregate(transfer: pd.DataFrame) -> pd.DataFrame:
    """Median power [mW] and throughput [Mbit/s] and seconds per network type, direction
    and target rate (Verizon, the phone of the data set), and whether well sampled."""
    d = transfer[transfer["provider"] == "Verizon"]
    g = (
        d.groupby(["network type", "direction", "target bandwidth"])
        .agg(
            seconds=("avg_power", "size"),
            power_mw=("avg_power", "median"),
            throughput_mbps=("throughput", "median"),
        )
        .reset_index()
        .rename(columns={"network type": "network", "target bandwidth": "target_mbps"})
    )
    g["network"] = g["network"].map(NETWORKS)
    g["well_sampled"] = (g["seconds"] >= MIN_SECONDS) & (
        (g["throughput_mbps"] - g["target_mbps"]).abs() <= REACHED * g["target_mbps"]
    )
    return g


def fit(figures: pd.DataFrame, base_mw: float) -> dict:
    """β [W] and α [W per Mbit/s] of P − P_base = β + α·R per network and direction, on
    the well-sampled medians, with the fit's largest and RMS relative error on the
    whole-device medians."""
    out = {}
    for (net, direction), g in figures[figures["well_sampled"]].groupby(["network", "direction"]):
        r = g["throughput_mbps"].to_numpy()
        p = (g["power_mw"].to_numpy() - base_mw) / 1e3
        alpha, beta = np.polyfit(r, p, 1)
        whole = (base_mw / 1e3 + beta + alpha * r) / (g["power_mw"].to_numpy() / 1e3) - 1.0
        out[f"{net}/{direction}"] = {
            "beta_w": round(float(beta), 5),
            "alpha_w_per_mbps": round(float(alpha), 6),
            "points": len(g),
            "max_rel_error": round(float(np.abs(whole).max()), 4),
            "rms_rel_error": round(float(np.sqrt(np.mean(whole**2))), 4),
        }
    return out


def build(artifact: Path) -> dict:
    transfer = read(artifact, TRANSFER)
    base = read(artifact, BASELINE).dropna(subset=["base_power"])
    base_mw = float(base["base_power"].median())
    figures = aggregate(transfer)
    return {
        "source": {
            "artifact": "github.com/SIGCOMM21-5G/artifact",
            "commit": commit(artifact),
            "paper": "Narayanan et al., A Variegated Look at 5G in the Wild, SIGCOMM 2021",
            "files": {
                TRANSFER: f"{len(transfer)} rows (one a second), Verizon, Galaxy S20 Ultra",
                BASELINE: f"{len(base)} runs with a baseline",
            },
            "well_sampled": f">= {MIN_SECONDS} s and median throughput within "
            f"{REACHED:.0%} of the target",
        },
        "baseline_mw": round(base_mw, 3),
        "figures": [
            {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}
            for row in figures.to_dict("records")
        ],
        "fit": fit(figures, base_mw),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", type=Path, default=DEFAULT_ARTIFACT)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    result = build(args.artifact)
    args.out.write_text(json.dumps(result, indent=1, default=bool) + "\n")
    for key, f in result["fit"].items():
        print(
            f"{key}: P - P_base = {f['beta_w']:.3f} W + {f['alpha_w_per_mbps'] * 1e3:.2f} mW/Mbps "
            f"x R ({f['points']} medians; whole-device error max {f['max_rel_error']:.1%}, "
            f"rms {f['rms_rel_error']:.1%})"
        )
    print(f"baseline {result['baseline_mw']:.0f} mW; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
