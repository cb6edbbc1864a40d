"""A corpus of radio scenarios whose every transfer, compute step and round total is
hashed (issue 34, item 6): moving code around the radio must leave each of them event
for event as it was. Every scheduler, CUE traffic, multicast, D2D (FedDif), TDD, LTE
grant cycles with HARQ, shared and dedicated fixed-rate links, networks with and
without mobility, HierFAVG's edges, and devices that leave mid-transfer.

A deliberate change of the model updates the stored digests, in the same commit, with
``.venv/bin/python -m tests.radio.test_corpus --update`` (and says why).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from netfl.scenario.files import parse_scenario
from netfl.sim.runner import run
from tests.conftest import tiny_scenario

STORE = Path(__file__).resolve().parents[1] / "reference" / "radio_corpus.json"

_NR = {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}
_CUES = {"density_per_km2": 300, "session_rate_per_s": 0.2, "mean_session_s": 2, "demand_rbs": 4}
_TWO_SITES = {
    "site_positions_m": [[0.0, 0.0], [500.0, 0.0]],
    "sectors": 1,
    "antenna": "omni",
    "interference": {"model": "load_factor", "load": 0.5},
}

#: name → scenario sections (over ``tiny_scenario``: timing mode, 4 devices, 2 rounds)
CORPUS: dict[str, dict] = {
    "fixed_dedicated": {},
    "fixed_shared": {
        "cell": {
            "link": {
                "mode": "fixed_rate",
                "shared": True,
                "uplink_capacity_mbps": 8,
                "downlink_capacity_mbps": 30,
            }
        }
    },
    "nr_round_robin_cues": {"cell": {"radius_m": 300, "link": _NR, "cues": _CUES}},
    "nr_fcfs": {"cell": {"link": {**_NR, "scheduler": "fcfs"}, "cues": _CUES}},
    "nr_proportional_fair": {"cell": {"link": {**_NR, "scheduler": "proportional_fair"}}},
    "nr_multicast": {
        "cell": {"link": _NR},
        "algorithm": {"name": "fedavg", "downlink": "multicast"},
    },
    "lte_grant_cycles": {
        "cell": {
            "link": {"mode": "ofdma", "channel_profile": "lte_20mhz", "link_abstraction": "bler"}
        },
        "model": {"name": "cnn"},
    },
    "feddif_d2d": {
        "cell": {"link": {"mode": "ofdma", "channel_profile": "feddif"}},
        "devices": {"count": 6},
        "algorithm": {"name": "feddif"},
    },
    "network_static": {
        "cell": {"link": _NR},
        "network": _TWO_SITES,
        "devices": {"count": 6},
    },
    "network_moving": {
        "cell": {"link": _NR},
        "network": {"sites": 7, "sectors": 3},
        "devices": {
            "count": 4,
            "mobility": {"model": "random_waypoint", "v_min_kmh": 30, "v_max_kmh": 60},
        },
        "model": {"name": "cnn"},
    },
    "hierfavg_edges": {
        "cell": {"link": _NR},
        "network": {**_TWO_SITES, "server_site": "cloud"},
        "devices": {"count": 6},
        "algorithm": {"name": "hierfavg", "kappa2": 2},
    },
    "markov_departures": {
        "cell": {"link": _NR},
        "devices": {
            "count": 6,
            "availability": {"model": "markov", "mean_on_s": 0.3, "mean_off_s": 0.1},
        },
        "model": {"name": "cnn"},
        "training": {"rounds": 4, "batch_size": 16},
    },
}

_TRANSFER_COLUMNS = [
    "round",
    "src",
    "dst",
    "kind",
    "direction",
    "size_bits",
    "start_s",
    "end_s",
    "num_models",
    "tx_energy_j",
    "rx_energy_j",
    "airtime_s",
    "multicast_group",
    "rb_subframes",
    "mean_snr_db",
    "harq_retransmissions",
    "delivered_bits",
]
_COMPUTE_COLUMNS = ["round", "node", "kind", "flops", "start_s", "end_s", "energy_j"]
_ROUND_COLUMNS = [
    "sim_time_s",
    "num_clients",
    "uplink_bits",
    "downlink_bits",
    "d2d_bits",
    "backhaul_bits",
    "rb_subframes",
    "device_active_energy_j",  # (the digests' column before idle joined device_energy_j)
    "bs_radio_energy_j",
    "server_energy_j",
]


def _scenario(name: str):
    sections = dict(CORPUS[name])
    devices = {"count": 4, **sections.pop("devices", {})}
    return parse_scenario(tiny_scenario(devices=devices, seed=5, **sections))


def digest(name: str) -> str:
    """SHA-256 of the run's transfers, compute steps and round totals, every float at
    full precision."""
    result = run(_scenario(name))
    h = hashlib.sha256()
    for frame, columns in (
        (result.transfers, _TRANSFER_COLUMNS),
        (result.computes, _COMPUTE_COLUMNS),
        (result.rounds, _ROUND_COLUMNS),
    ):
        for row in frame[columns].itertuples(index=False):
            h.update(repr(tuple(row)).encode())
    return h.hexdigest()


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_corpus_runs_event_for_event_as_stored(name):
    stored = json.loads(STORE.read_text())
    assert name in stored, f"no stored digest for {name}: run this module with --update"
    assert digest(name) == stored[name], (
        f"{name} changed: a refactoring must leave it event for event; a deliberate model "
        "change updates tests/reference/radio_corpus.json (python -m tests.radio.test_corpus "
        "--update) and says why"
    )


def main(argv: list[str]) -> int:
    if argv != ["--update"]:
        print("usage: python -m tests.radio.test_corpus --update", file=sys.stderr)
        return 2
    digests = {name: digest(name) for name in sorted(CORPUS)}
    STORE.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(digests)} digests to {STORE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
