"""TR 38.901 multi-cell calibration (Phase 1): coupling loss and downlink geometry SINR of
netfl's multi-cell geometry against Sionna's 3GPP drop and channel model.

    /tmp/sionnavenv/bin/python validation/sionna/multicell_calibration.py [--drops 48] [--netfl-only]

Configuration (TR 38.901 Table 7.8-1, UMa / UMi): 19 sites × 3 sectors with
wrap-around, ISD 500 / 200 m, BS 25 / 10 m, 6 GHz, 20 MHz, BS 49 / 44 dBm, UE noise
figure 9 dB, BS array 10 × 1 vertical elements 0.8 λ apart with the 38.901 element and
an electrical downtilt to zenith 102°, omni UE, 80 % indoor (low-loss O2I: Sionna's
channel takes one O2I model), minimum distance 35 / 10 m, 10 UEs per sector.

Sionna side (``sionna-no-rt``, CPU): ``gen_tr38901_multicell_topology`` and the UMa /
UMi channel with ``PanelArray`` antennas; each link's gain is Σ over paths of |Σ_m w_m
a_m|² (the channel coefficients combined with the downtilt weights w_m, summed over
rays: large-scale gain with the array's beam, no fast fading). netfl side:
:mod:`channel_models.multicell` on its own drop. Writes each side's 5th/50th/95th
percentiles of the serving cell's coupling loss and of the geometry SINR to
``tests/reference/multicell_calibration.json`` and the CDFs to
``docs/multicell_calibration.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

FC = 6e9
BANDWIDTH_HZ = 20e6
NF_DB = 9.0
SCENARIOS = {
    "uma": {"isd_m": 500.0, "bs_height_m": 25.0, "tx_dbm": 49.0, "min_m": 35.0},
    "umi": {"isd_m": 200.0, "bs_height_m": 10.0, "tx_dbm": 44.0, "min_m": 10.0},
}
PERCENTILES = (5, 50, 95)


def noise_dbm() -> float:
    return -174.0 + 10.0 * math.log10(BANDWIDTH_HZ) + NF_DB


def sionna_side(
    scenario: str, drops: int, ues_per_sector: int, spec_version: str = "16.1"
) -> tuple[np.ndarray, np.ndarray]:
    import torch
    from sionna.phy.channel.tr38901 import PanelArray, UMa, UMi
    from sionna.sys import gen_tr38901_multicell_topology

    bs = PanelArray(
        num_rows_per_panel=10,
        num_cols_per_panel=1,
        polarization="single",
        polarization_type="V",
        antenna_pattern="38.901",
        carrier_frequency=FC,
        element_vertical_spacing=0.8,
        device="cpu",
    )
    ut = PanelArray(
        num_rows_per_panel=1,
        num_cols_per_panel=1,
        polarization="single",
        polarization_type="V",
        antenna_pattern="omni",
        carrier_frequency=FC,
        device="cpu",
    )
    model = {"uma": UMa, "umi": UMi}[scenario](
        FC, "low", ut, bs, "downlink", device="cpu", spec_version=spec_version
    )
    lam = 299_792_458.0 / FC
    z = bs.ant_pos[:, 2].double().numpy()
    tilt = math.radians(102.0)
    cl_all, sinr_all = [], []
    from sionna.phy import config

    for d in range(drops):
        torch.manual_seed(1000 + d)
        config.seed = 1000 + d  # (Sionna's own generators: without it, runs differ)
        topo = gen_tr38901_multicell_topology(scenario, 1, ues_per_sector, FC, device="cpu")
        model.set_topology(*topo)
        a = model(1, 1.0)[0][0, :, 0, :, :, :, 0].numpy()  # (UT, BS, ant, path)
        gains = []
        for sign in (1.0, -1.0):  # steer to θ_t; the sign that points the beam down wins
            w = np.exp(-sign * 1j * 2 * np.pi / lam * z * math.cos(tilt)) / math.sqrt(len(z))
            g = (np.abs(np.einsum("m,ubmp->ubp", w, a)) ** 2).sum(axis=-1)
            gains.append(g)
        g = max(gains, key=lambda x: np.median(x.max(axis=1)))
        cl = -10.0 * np.log10(np.maximum(g, 1e-30))
        cl_all.append(cl.min(axis=1))
        sinr_all.append(geometry(cl, SCENARIOS[scenario]["tx_dbm"]))
    return np.concatenate(cl_all), np.concatenate(sinr_all)


def geometry(cl: np.ndarray, tx_dbm: float) -> np.ndarray:
    from channel_models.multicell import geometry_sinr_db

    return geometry_sinr_db(cl, tx_dbm, noise_dbm())


def netfl_side(scenario: str, drops: int, ues_per_sector: int, seed: int = 7):
    from channel_models.multicell import coupling_loss_db, drop_ues
    from channel_models.site_layouts import HexLayout

    c = SCENARIOS[scenario]
    layout = HexLayout(c["isd_m"], 2, 3, c["bs_height_m"])
    rng = np.random.default_rng(seed)
    cl_all, sinr_all = [], []
    for _ in range(drops):
        drop = drop_ues(layout, 3 * ues_per_sector, rng, 0.8, c["min_m"], high_loss_fraction=0.0)
        cl = coupling_loss_db(layout, drop, FC, rng, scenario)
        cl_all.append(cl.min(axis=1))
        sinr_all.append(geometry(cl, c["tx_dbm"]))
    return np.concatenate(cl_all), np.concatenate(sinr_all)


def _percentiles(cl: np.ndarray, sinr: np.ndarray) -> dict:
    return {
        "coupling_loss_db": np.percentile(cl, PERCENTILES).round(2).tolist(),
        "geometry_sinr_db": np.percentile(sinr, PERCENTILES).round(2).tolist(),
    }


def _cdf(cl: np.ndarray, sinr: np.ndarray) -> dict:
    """Every percentile 0..100 (the figure's CDFs, kept so ``--netfl-only`` can draw them)."""
    q = np.arange(101)
    return {
        "coupling_loss_db": np.percentile(cl, q).round(2).tolist(),
        "geometry_sinr_db": np.percentile(sinr, q).round(2).tolist(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drops", type=int, default=48)
    ap.add_argument("--ues-per-sector", type=int, default=10)
    ap.add_argument("--scenarios", nargs="+", default=list(SCENARIOS))
    ap.add_argument(
        "--spec-version",
        default="16.1",
        help="Sionna's TR 38.901 parameter tables (16.1: the Rel-16/17 tables netfl implements)",
    )
    ap.add_argument(
        "--netfl-only",
        action="store_true",
        help="keep the Sionna side stored in --out and recompute netfl's (no Sionna needed)",
    )
    ap.add_argument(
        "--out", default=str(ROOT / "tests" / "reference" / "multicell_calibration.json")
    )
    ap.add_argument("--figure", default=str(ROOT / "docs" / "multicell_calibration.png"))
    args = ap.parse_args()
    if args.netfl_only:
        result = json.loads(Path(args.out).read_text())
    else:
        import sionna

        result = {
            "percentiles": list(PERCENTILES),
            "scenarios": {},
            "spec_version": args.spec_version,
            "source": f"Sionna {sionna.__version__} (pip sionna-no-rt), TR 38.901 tables "
            f"v{args.spec_version}; validation/sionna/multicell_calibration.py",
        }
    for sc in args.scenarios:
        entry = result["scenarios"].setdefault(sc, {})
        if not args.netfl_only:
            t0 = time.perf_counter()
            s_cl, s_sinr = sionna_side(sc, args.drops, args.ues_per_sector, args.spec_version)
            half = len(s_cl) // 2
            entry.update(
                config=SCENARIOS[sc],
                ues=int(len(s_cl)),
                sionna_wall_s=round(time.perf_counter() - t0, 1),
                sionna=_percentiles(s_cl, s_sinr),
                # the reference's own sampling noise: |first half − second half of drops|
                sionna_halves_gap={
                    k: np.abs(np.subtract(a, b)).round(2).tolist()
                    for (k, a), b in zip(
                        _percentiles(s_cl[:half], s_sinr[:half]).items(),
                        _percentiles(s_cl[half:], s_sinr[half:]).values(),
                        strict=True,
                    )
                },
                sionna_cdf=_cdf(s_cl, s_sinr),
            )
        t1 = time.perf_counter()
        n_cl, n_sinr = netfl_side(sc, args.drops, args.ues_per_sector)
        entry.update(
            netfl_wall_s=round(time.perf_counter() - t1, 2),
            netfl=_percentiles(n_cl, n_sinr),
            netfl_cdf=_cdf(n_cl, n_sinr),
        )
        print(sc, json.dumps({k: entry[k] for k in ("sionna", "netfl")}), flush=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    if args.figure:
        _figure(result, args.figure)
    return 0


def _figure(result: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    q = np.arange(101) / 100
    for i, (sc, entry) in enumerate(result["scenarios"].items()):
        for ax, key in zip(axes, ("coupling_loss_db", "geometry_sinr_db"), strict=True):
            for side, style, who in (("sionna_cdf", "-", "Sionna"), ("netfl_cdf", "--", "netfl")):
                ax.plot(entry[side][key], q, style, color=f"C{i}", label=f"{sc.upper()} {who}")
    axes[0].set_xlabel("coupling loss, serving cell [dB]")
    axes[1].set_xlabel("downlink geometry SINR [dB]")
    for ax in axes:
        ax.set_ylabel("CDF")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(
        "TR 38.901 calibration, 19 sites × 3 sectors, wrap-around, 6 GHz "
        f"(Sionna tables v{result.get('spec_version', '?')})",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
