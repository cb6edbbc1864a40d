"""``netfl describe``: a scenario's effective link budget, from its first drop."""

from __future__ import annotations

import numpy as np
import yaml

from netfl import World, parse_scenario
from netfl.cli.app import main
from tests.conftest import tiny_scenario

#: ns-3's LTE cell, one UE at 100 m and one at 280 m (its uplink below CQI 1)
LTE = tiny_scenario(
    devices={"count": 2, "layout": {"kind": "positions", "positions_m": [[100, 0], [280, 0]]}},
    cell={
        "radius_m": 300,
        "link": {
            "mode": "ofdma",
            "channel_profile": "lte_20mhz",
            "fading": "none",
            "pathloss": {
                "model": "log_distance",
                "beta0_db": -30.0,
                "kappa": 3.75,
                "height_tx_m": 23.5,
            },
        },
    },
)


def test_describe_prints_the_law_the_drop_and_who_is_starved(tmp_path, capsys):
    f = tmp_path / "lte.yaml"
    f.write_text(yaml.safe_dump(LTE))
    assert main(["describe", str(f)]) == 0
    out = capsys.readouterr().out
    assert "path loss: log-distance β0 + 10κ·log10(d/d0), no shadowing" in out
    assert (
        "height_tx_m 23.5, height_rx_m 0.0" in out and "beta0_db -30.0, kappa 3.75, d0_m 1.0" in out
    )
    assert "fading: none" in out and "UE 23 dBm, BS 46 dBm" in out
    assert "downlink allocation: rbg_round_robin (groups of 4 RBs)" in out
    assert "starved (no rate even at a fading peak): 1 of 2 (uplink 1, downlink 0): ue1" in out
    # the percentiles are the coverage table's
    coverage = World(parse_scenario(LTE)).coverage.tables()["coverage"]
    down = coverage["downlink_snr_db"].to_numpy()
    assert f"median {np.median(down):.1f}" in out and f"max {down.max():.1f}" in out


def test_describe_a_fixed_rate_cell_and_a_bad_key(tmp_path, capsys):
    f = tmp_path / "fixed.yaml"
    f.write_text(yaml.safe_dump(tiny_scenario(devices={"count": 3, "link_profile": "3g"})))
    assert main(["describe", str(f)]) == 0
    assert "3 device(s) up 0.4 / down 3 Mbit/s" in capsys.readouterr().out
    assert main(["describe", str(f), "--set", "cell.link.nope=1"]) == 2
    assert "cell.link.nope" in capsys.readouterr().err


def _antenna_lines(scenario: dict, tmp_path, capsys) -> list[str]:
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(scenario))
    assert main(["describe", str(f)]) == 0
    out = capsys.readouterr().out.splitlines()
    i = next(i for i, line in enumerate(out) if line.startswith("  BS antenna: "))
    return out[i : i + 2]


NR = {"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}}


def test_describe_names_the_bs_antenna_and_the_calibration_it_departs_from(tmp_path, capsys):
    single = _antenna_lines(tiny_scenario(cell={**NR, "radius_m": 250}), tmp_path, capsys)
    assert single[0].startswith("  BS antenna: omni, 0 dBi in every direction (one cell")
    assert "not TR 38.901's calibration (Table 7.8-1: 3 sectors per site" in single[1]
    assert "18 dBi peak): set network: {sites: 1}" in single[1]
    # one 3-sector site: Table 7.3-1's 8 dBi element + the 10-row array's 10 dB at the tilt
    site = _antenna_lines(tiny_scenario(cell=NR, network={"sites": 1}), tmp_path, capsys)
    assert "TR 38.901 sector pattern (Table 7.3-1 element, 8 dBi" in site[0]
    assert "10 × 1 vertical array (0.8 λ, downtilt 102°): max gain 18.0 dBi" in site[0]
    assert site[0].endswith("3 sectors per site (boresights 30°/150°/270°)")
    assert site[1] == "    as TR 38.901's calibration (Table 7.8-1)"
    # one cell per site: the 4-row array alone (10·log10 4 = 6.0 dB), or an omni element
    net = {"sites": 1, "sectors": 1, "antenna_rows": 4}
    rows4 = _antenna_lines(tiny_scenario(cell=NR, network=net), tmp_path, capsys)
    assert "omni in azimuth (no element pattern), a 4 × 1 vertical array" in rows4[0]
    assert "max gain 6.0 dBi; 1 cell per site" in rows4[0]
    assert rows4[1].startswith("    not TR 38.901's calibration")
    net = {"sites": 1, "sectors": 1, "antenna": "omni"}
    omni = _antenna_lines(tiny_scenario(cell=NR, network=net), tmp_path, capsys)
    assert "omni, 0 dBi in every direction (no vertical array): max gain 0.0 dBi" in omni[0]


def test_describe_a_network_with_moving_devices(tmp_path, capsys):
    """A network's interference, backhaul and server, and where devices move: each
    group's motion, the shadowing along their paths and the A3 rule's settings."""
    f = tmp_path / "moving.yaml"
    data = tiny_scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        network={
            "sites": 7,
            "interference": {"model": "load_factor", "load": 0.5},
            "handover": {"hysteresis_db": 2, "ttt_s": 0.32},
            "mobility": {"shadowing": "spatially_consistent"},
        },
        devices={
            "count": 6,
            "groups": [
                {
                    "count": 2,
                    "mobility": {"model": "random_waypoint", "v_min_kmh": 3, "v_max_kmh": 60},
                }
            ],
        },
    )
    f.write_text(yaml.safe_dump(data))
    assert main(["describe", str(f)]) == 0
    out = capsys.readouterr().out
    assert "interference: load factor: every other cell on 50% of its RBs" in out
    assert "backhaul: " in out and "the FL server " in out
    assert "devices: 2 random waypoint 3–60 km/h, pause 0 s; 4 static" in out
    assert "moving devices' shadowing: spatially_consistent" in out
    assert "handover: A3, hysteresis 2 dB, time-to-trigger 0.32 s" in out
    still = tiny_scenario(
        cell={"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}},
        network={"sites": 7},
    )
    f.write_text(yaml.safe_dump(still))
    assert main(["describe", str(f)]) == 0
    out = capsys.readouterr().out
    assert "interference: " in out and "handover:" not in out  # (no device moves)
