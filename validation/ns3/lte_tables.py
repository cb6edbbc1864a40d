"""Export the LTE link-adaptation tables of ns-3's ``LteAmc`` (TS 36.213) to netfl's
package data (``channel_models/data/lte_36213.yaml``).

    /tmp/ns3/bin/python validation/ns3/lte_tables.py

ns-3 holds TS 36.213's tables as C++ arrays (``src/lte/model/lte-amc.cc``); this reads
them back through its public functions, so netfl's copy comes from a reference no one
here wrote and is regenerated, not typed: the CQI efficiencies (Table 7.2.3-1), the
CQI → MCS mapping ns-3's schedulers use, and the transport block sizes (Table
7.1.7.2.1-1) per MCS (through Table 8.6.1-1 on the uplink, 7.1.7.1-1 on the downlink)
and number of PRBs. Tests check a few entries against the specification by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "channel_models" / "data" / "lte_36213.yaml"


def main() -> int:
    from ns import ns

    amc = ns.CreateObject[ns.LteAmc]()
    cqi_eff = [float(amc.GetSpectralEfficiencyFromCqi(c)) for c in range(16)]
    mcs_from_cqi = [int(amc.GetMcsFromCqi(c)) for c in range(16)]
    ul = [[int(amc.GetUlTbSizeFromMcs(m, n)) for n in range(1, 111)] for m in range(29)]
    dl = [[int(amc.GetDlTbSizeFromMcs(m, n)) for n in range(1, 111)] for m in range(29)]
    # the CQI rule of ns-3's LteAmc::GetCqiFromSpectralEfficiency: the largest CQI c
    # with efficiency(c) < s (strictly), found by probing it at the table's values
    for c in range(1, 16):
        assert amc.GetCqiFromSpectralEfficiency(cqi_eff[c]) == c - 1
        assert amc.GetCqiFromSpectralEfficiency(cqi_eff[c] * (1 + 1e-9)) == c
    lines = [
        "# TS 36.213 tables as ns-3 3.44 (LteAmc, src/lte/model/lte-amc.cc) holds them,",
        "# exported by validation/ns3/lte_tables.py; do not edit by hand.",
        "source: ns-3 3.44 LteAmc (pip ns3==3.44.post0)",
        "# Table 7.2.3-1: spectral efficiency [bit/s/Hz] of CQI 0..15 (0: out of range)",
        f"cqi_efficiency: [{', '.join(repr(x) for x in cqi_eff)}]",
        "# the MCS ns-3's schedulers pick for CQI 0..15 (highest MCS whose efficiency",
        "# does not exceed the CQI's)",
        f"mcs_from_cqi: [{', '.join(map(str, mcs_from_cqi))}]",
        "# Table 7.1.7.2.1-1 via Table 8.6.1-1: uplink TBS [bit], rows MCS 0..28, columns N_PRB 1..110",
        "ul_tbs_bits:",
        *[f"  - [{', '.join(map(str, row))}]" for row in ul],
        "# Table 7.1.7.2.1-1 via Table 7.1.7.1-1: downlink TBS [bit], same layout",
        "dl_tbs_bits:",
        *[f"  - [{', '.join(map(str, row))}]" for row in dl],
    ]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
