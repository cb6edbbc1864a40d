"""Infer the RRC inactivity (tail) timer and the promotion delay of each network from
the RRC-Probe measurements of Narayanan et al., SIGCOMM 2021 (issue 54; the artifact's
RRC *power* traces are not in its repository, so only the timers are fitted here).

RRC-Probe (``RRC-Probe/data/*.csv`` of github.com/SIGCOMM21-5G/artifact, paper §4.1)
sends a packet to an idle phone after a chosen idle interval (0–40 s, in 0.2–0.4 s
steps, five probes each) and records the round trip. While the phone is still
connected the RTT is the network's plus at most one DRX cycle (≲ 0.35 s on Verizon);
once the inactivity timer has expired the phone must be paged (a 1.28 s cycle) and
promoted first, so the RTT jumps. From the per-interval medians of the kept probes:

- **tail timer**: a median is idle-looking when it exceeds every median below 5 s
  (surely connected, every DRX phase sampled); the timer is the first interval from
  which every 2-s window centred on an interval holds a majority of idle-looking
  medians (the timer jitters: for about a second the probes alternate between the
  states);
- **promotion delay**: the lowest idle-looking median from the timer on (a probe that
  met a paging occasion at once) less the lowest connected one (one that met a DRX
  on-duration at once): the promotion's share of the RTT. An upper bound by tens of ms:
  an idle probe whose RTT falls under the connected maximum is not counted (on LTE the
  lowest idle median, 328 ms, lies under it: 264 ms instead of 316), and the 0.1–0.2 s
  steps sample the 1.28 s paging cycle. The 5G NSA phones reconnect on their LTE
  anchor (``active_radio_type`` 4 after idle), so this is the LTE leg's promotion; the
  5G leg is added later while the LTE anchor already carries data.

Files: Verizon LTE on the Galaxy S20 Ultra (``S20US_162_Verizon_4G``, the phone of the
power fit), Verizon 5G NSA low band and mmWave on the artifact's ``SALMONBERRY_299``
phone (no S20 Ultra probe of those two networks is in the repository).

Writes ``tests/reference/sigcomm21_rrc_timers.json``: the medians per interval (no raw
probe) and the timers; the modem profiles ``s20u_*`` carry them.

    .venv/bin/python -m validation.sigcomm21.fit_rrc_timers [--artifact PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from validation.sigcomm21.fit_modem_power import DEFAULT_ARTIFACT, ROOT, commit, read

OUT = ROOT / "tests" / "reference" / "sigcomm21_rrc_timers.json"
#: netfl's network name → the RRC-Probe file
FILES = {
    "lte": "RRC-Probe/data/S20US_162_Verizon_4G.csv",
    "5g_lowband": "RRC-Probe/data/SALMONBERRY_299_Verizon_NSAlow.csv",
    "5g_mmwave": "RRC-Probe/data/SALMONBERRY_299_Verizon_NSAmmwave.csv",
}


def medians(probe: pd.DataFrame) -> pd.DataFrame:
    """Per idle interval: the median RTT [ms] of the kept probes and their count."""
    kept = probe[probe["KeepOrDrop"] == "YEP"].copy()
    kept["rtt_ms"] = (kept["RTT1"] + kept["RTT2"]) / 2.0
    g = kept.groupby("interval")["rtt_ms"].agg(["median", "size"]).reset_index()
    return g.rename(columns={"interval": "interval_s", "median": "rtt_ms", "size": "probes"})


#: idle intervals below this are surely connected (every DRX phase is sampled there)
CONNECTED_REFERENCE_S = 5.0
#: the window over which a run of idle-looking medians must hold (over one paging cycle)
WINDOW_S = 2.0


def timers(m: pd.DataFrame) -> dict:
    """The tail timer and promotion delay from a table of ``interval_s``, ``rtt_ms``
    (per-interval medians): a median is idle-looking when it exceeds every median of the
    intervals below :data:`CONNECTED_REFERENCE_S` (connected, all DRX phases); the timer
    is the first interval from which every :data:`WINDOW_S` window centred on an
    interval holds a majority of idle-looking medians (a centred window crosses one half
    at a clean step; the timer jitters by about a second, over which the probes
    alternate, and the crossing falls within it); the promotion is the lowest idle-looking median from it on less
    the lowest connected one."""
    m = m.sort_values("interval_s").reset_index(drop=True)
    t = m["interval_s"].to_numpy(dtype=float)
    rtt = m["rtt_ms"].to_numpy(dtype=float)
    reference = t < CONNECTED_REFERENCE_S
    idle = rtt > rtt[reference].max()
    half = WINDOW_S / 2.0
    share = np.array([idle[(t >= u - half) & (t < u + half)].mean() for u in t])
    below = np.flatnonzero(share < 0.5)
    k = 0 if below.size == 0 else int(below[-1]) + 1
    if k >= len(t):
        raise ValueError("no interval after which the phone stays idle")
    after = idle & (t >= t[k])
    return {
        "tail_s": float(t[k]),
        "connected_rtt_ms_max": float(rtt[reference].max()),
        "promotion_s": round((rtt[after].min() - rtt[reference].min()) / 1e3, 4),
        "connected_rtt_ms_median": float(np.median(rtt[t < t[k]])),
        "idle_rtt_ms_median": float(np.median(rtt[after])),
    }


def build(artifact: Path) -> dict:
    out = {
        "source": {
            "artifact": "github.com/SIGCOMM21-5G/artifact",
            "commit": commit(artifact),
            "paper": "Narayanan et al., A Variegated Look at 5G in the Wild, SIGCOMM 2021, sec. 4.1",
            "files": FILES,
        },
        "medians": {},
        "timers": {},
    }
    for network, path in FILES.items():
        m = medians(read(artifact, path))
        out["medians"][network] = m.to_dict(orient="records")
        out["timers"][network] = timers(m)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", type=Path, default=DEFAULT_ARTIFACT)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    result = build(args.artifact)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for network, t in result["timers"].items():
        print(
            f"{network}: tail {t['tail_s']:.2f} s, promotion {t['promotion_s'] * 1e3:.0f} ms "
            f"(RTT medians connected {t['connected_rtt_ms_median']:.0f} ms, idle "
            f"{t['idle_rtt_ms_median']:.0f} ms)"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
