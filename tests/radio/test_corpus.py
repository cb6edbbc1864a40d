"""A corpus of radio scenarios whose every transfer, compute step and round total is
stored (issue 34, item 6): moving code around the radio must leave each of them event
for event as it was. Every scheduler, CUE traffic, multicast, D2D (FedDif), TDD, LTE
grant cycles with HARQ, shared and dedicated fixed-rate links, networks with and
without mobility, HierFAVG's edges, and devices that leave mid-transfer.

Event for event: the same rows in the same order, every name, count and integer equal,
and every float equal to :data:`RTOL` relative — not to the last bit: numpy's vectorised
functions (the single-precision ``cos``/``exp`` along moving devices' paths among them)
round differently on other CPUs' SIMD paths and in other releases, and a store of
hashes taken on one machine failed 9 of its 12 scenarios on another with nothing changed
(2026-11-28; the tables of that tree and of the one before were bit-identical there). A
refactor that changes the model moves events (rows, counts, cells) or values far beyond
that.

A deliberate change of the model updates the stored tables, in the same commit, with
``.venv/bin/python -m tests.radio.test_corpus --update`` (and says why).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from netfl.loading.scenarios import parse_scenario
from netfl.sim.runner import run
from tests.conftest import tiny_scenario

STORE = Path(__file__).resolve().parents[1] / "reference" / "radio_corpus.json"
#: relative tolerance on floats (platform rounding; see the module docstring)
RTOL = 1e-6

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
    "device_active_energy_j",  # (the stored column before idle joined device_energy_j)
    "bs_radio_energy_j",
    "server_energy_j",
]


def _scenario(name: str):
    sections = dict(CORPUS[name])
    devices = {"count": 4, **sections.pop("devices", {})}
    return parse_scenario(tiny_scenario(devices=devices, seed=5, **sections))


def tables(name: str) -> dict[str, dict]:
    """The run's transfers, compute steps and round totals (the columns above), each
    ``{"columns": [...], "rows": [[...], ...]}`` with every float at full precision."""
    result = run(_scenario(name))
    out = {}
    for key, frame, columns in (
        ("transfers", result.transfers, _TRANSFER_COLUMNS),
        ("computes", result.computes, _COMPUTE_COLUMNS),
        ("rounds", result.rounds, _ROUND_COLUMNS),
    ):
        rows = [[_plain(v) for v in row] for row in frame[columns].itertuples(index=False)]
        out[key] = {"columns": columns, "rows": rows}
    return out


def _plain(value):
    """A cell as JSON keeps it: str, bool, int, or float (NaN and ±inf too: Python's
    JSON writes and reads them)."""
    if isinstance(value, str | bool | np.bool_):
        return value if isinstance(value, str) else bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    return float(value)


def _same(column: str, x, y, rtol: float) -> bool:
    """Floats to ``rtol`` relative (a ``*_db`` column to 1e-4 dB absolute as well: a
    ratio near 0 dB has no relative scale), NaN equal to NaN; anything else equal and of
    the same type (an int column turned float, or bool, is a change)."""
    if isinstance(x, float) and isinstance(y, float):
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return math.isclose(x, y, rel_tol=rtol, abs_tol=1e-4 if column.endswith("_db") else 1e-12)
    return type(x) is type(y) and x == y


def differences(stored: dict, now: dict, rtol: float = RTOL) -> list[str]:
    """Where ``now`` departs from ``stored`` (both :func:`tables`): a table more or
    less, a table's columns or row count, a name or integer, or a float beyond ``rtol``
    relative (:func:`_same`); the first few, as lines."""
    out: list[str] = []
    for key in sorted(stored.keys() | now.keys()):
        if key not in stored or key not in now:
            out.append(f"{key}: {'not stored' if key not in stored else 'not produced'}")
            continue
        old, new = stored[key], now[key]
        if new["columns"] != old["columns"]:
            out.append(f"{key}: columns {new['columns']} (stored {old['columns']})")
            continue
        if len(new["rows"]) != len(old["rows"]):
            out.append(f"{key}: {len(new['rows'])} rows (stored {len(old['rows'])})")
            continue
        for i, (a, b) in enumerate(zip(old["rows"], new["rows"], strict=True)):
            for column, x, y in zip(old["columns"], a, b, strict=True):
                if not _same(column, x, y, rtol):
                    out.append(f"{key} row {i} {column}: {y!r} (stored {x!r})")
                    if len(out) >= 5:
                        return out
    return out


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_corpus_runs_event_for_event_as_stored(name):
    stored = json.loads(STORE.read_text())
    assert name in stored, f"no stored tables for {name}: run this module with --update"
    diff = differences(stored[name], tables(name))
    assert not diff, (
        f"{name} changed: a refactoring must leave it event for event; a deliberate model "
        "change updates tests/reference/radio_corpus.json (python -m tests.radio.test_corpus "
        "--update) and says why:\n" + "\n".join(diff)
    )


def test_the_comparison_tells_float_noise_from_a_change():
    """Rounding at 1e-9 passes; a float moved by 1e-4, a row more, another name, an int
    turned float, a table more or less fail; NaN equals NaN; dB near 0 within 1e-4 dB."""
    cols = ["src", "end_s", "num_models", "mean_snr_db"]

    def table(*rows):
        return {"t": {"columns": cols, "rows": [list(r) for r in rows]}}

    old = table(["ue0", 1.0, 1, 0.05], ["ue1", 2.5, 0, float("nan")])
    assert differences(old, old) == []
    noise = table(["ue0", 1.0 + 1e-9, 1, 0.05 + 1e-6], ["ue1", 2.5, 0, float("nan")])
    assert differences(old, noise) == []
    moved = table(["ue0", 1.0001, 1, 0.05], ["ue1", 2.5, 0, float("nan")])
    assert differences(old, moved) == ["t row 0 end_s: 1.0001 (stored 1.0)"]
    db = table(["ue0", 1.0, 1, 0.0502], ["ue1", 2.5, 0, float("nan")])
    assert differences(old, db) == ["t row 0 mean_snr_db: 0.0502 (stored 0.05)"]
    more = {"t": {"columns": cols, "rows": [*old["t"]["rows"], ["ue2", 3.0, 0, 1.0]]}}
    assert differences(old, more) == ["t: 3 rows (stored 2)"]
    other = table(["ue0", 1.0, 1, 0.05], ["ue3", 2.5, 0, float("nan")])
    assert differences(old, other) == ["t row 1 src: 'ue3' (stored 'ue1')"]
    floated = table(["ue0", 1.0, 1.0, 0.05], ["ue1", 2.5, 0, float("nan")])
    assert differences(old, floated) == ["t row 0 num_models: 1.0 (stored 1)"]
    number = table(["ue0", 1.0, 1, 0.05], ["ue1", 2.5, 0, 1.0])
    assert differences(old, number) == ["t row 1 mean_snr_db: 1.0 (stored nan)"]
    assert differences(old, {**old, "u": old["t"]}) == ["u: not stored"]
    assert differences({**old, "u": old["t"]}, old) == ["u: not produced"]


def main(argv: list[str]) -> int:
    if argv != ["--update"]:
        print("usage: python -m tests.radio.test_corpus --update", file=sys.stderr)
        return 2
    stored = {name: tables(name) for name in sorted(CORPUS)}
    STORE.write_text(json.dumps(stored, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"wrote {len(stored)} scenarios' tables to {STORE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
