"""ns-3 LTE downlink reference: each UE's duration to download one UDP burst (issue 37).

    python -m venv /tmp/ns3 && /tmp/ns3/bin/pip install ns3==3.44.post0
    /tmp/ns3/bin/python validation/ns3/lte_downlink.py [--quick] [--out FILE]

The uplink reference's cell and harness (:mod:`validation.ns3.lte_uplink`: one eNB,
20 MHz FDD, log-distance path loss, no fading, RLC UM, HARQ) with the traffic turned
round: the remote host's UdpClients send every UE ``payload_bytes`` as datagrams of
``datagram_bytes`` at ``start_s`` (all UEs at once, 1 µs between datagrams); a UE's
download duration is the arrival of its last datagram minus ``start_s``. The eNB
(46 dBm over 100 PRBs) schedules resource allocation type 0 in groups of 4 PRBs
with LENA's round robin or proportional fair; the MCS follows the UE's wideband CQI
(periodic, from the reference signals). A UE that received nothing by ``stop_s`` is
starved (``duration_s: null``). Written to ``tests/reference/ns3_lte_downlink.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from validation.ns3.lte_uplink import cli  # noqa: E402


def geometries(quick: bool) -> dict[str, list[float]]:
    """Single UEs at 30, 150 and 280 m (the last one's uplink is starved, its downlink
    is not), lines of 5, 10 and 20 UEs at 30–300 m, and two pairs."""
    singles = {f"single-{d}m": [float(d)] for d in (30, 150, 280)}
    lines = {f"line-{n}": [30.0 + 270.0 * i / (n - 1) for i in range(n)] for n in (5, 10, 20)}
    pairs = {"pair-60-60m": [60.0, 60.0], "pair-50-250m": [50.0, 250.0]}
    if quick:
        return {"single-150m": [150.0], "line-5": lines["line-5"]}
    return {**singles, **lines, **pairs}


def main() -> int:
    return cli("downlink", geometries, 20.0)


if __name__ == "__main__":
    raise SystemExit(main())
