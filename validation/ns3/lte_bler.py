"""Export ns-3's LTE transport-block error curves (``LteMiErrorModel``) to netfl's
package data (``channel_models/data/lte_bler_ns3.json``).

    /tmp/ns3venv/bin/python validation/ns3/lte_bler.py

ns-3's LTE PHY decides every transport block's fate with ``LteMiErrorModel`` (Mezzavilla
et al., "A Lightweight and Accurate Link Abstraction Model for the Simulation of LTE
Networks in ns-3", MSWiM 2012): the SINR of each RB is mapped to mutual information
per modulation (MIESM), each code block of the TB (TS 36.212 segmentation) fails with
``0.5·erfc((MI − b)/(√2·c))`` (ECR curves per MCS and code-block size, fitted to
turbo-code link-level runs), and the TB fails if any code block does. This script calls
``LteMiErrorModel::GetTbDecodificationStats`` on a flat SINR (every RB the same, as a
netfl fading block is) for every MCS 0..28 and the TBS of the standard LTE allocations
(6, 15, 25, 50, 75, 100 PRBs; uplink and downlink TBS tables), on a 0.05-dB grid from
−12 to 32 dB, and stores each curve's transition (BLER between 1 − 1e-6 and 1e-6): the
``lte_bler`` link abstraction (:mod:`channel_models.lte`) reads it at set-up. It also
stores the downlink CQI rule of an LTE UE (``LteAmc::CreateCqiFeedbacks`` with the
default ``MiErrorModel`` AMC: the highest MCS whose TB error rate is at most 10 %, as a
CQI): the lowest flat SINR at which each CQI 1..15 is reported.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "channel_models" / "data" / "lte_bler_ns3.json"
GRID_DB = (-12.0, 32.0, 0.05)  # start, stop, step
PRBS = (6, 15, 25, 50, 75, 100)
TAIL = 1e-6

CPP = r"""
#include "ns3/lte-mi-error-model.h"
#include "ns3/lte-amc.h"
#include "ns3/lte-spectrum-value-helper.h"
#include <cmath>
#include <vector>
std::vector<double> netfl_bler_curve(int nrb, int tb_bytes, int mcs, double db0, double step, int n) {
    using namespace ns3;
    Ptr<SpectrumModel> sm = LteSpectrumValueHelper::GetSpectrumModel(18100, 100);
    SpectrumValue sinr(sm);
    std::vector<int> map;
    for (int i = 0; i < nrb; ++i) { map.push_back(i); }
    std::vector<double> out;
    for (int k = 0; k < n; ++k) {
        double lin = std::pow(10.0, (db0 + k * step) / 10.0);
        for (int i = 0; i < 100; ++i) { sinr[i] = lin; }
        HarqProcessInfoList_t none;
        out.push_back(LteMiErrorModel::GetTbDecodificationStats(sinr, map, tb_bytes, mcs, none).tbler);
    }
    return out;
}
// the wideband CQI an LTE UE reports at a flat downlink SINR: LteUePhy's
// CreateCqiFeedbacks(sinr, dlBandwidth) with LteAmc's default AmcModel (MiErrorModel)
std::vector<int> netfl_dl_cqi(double db0, double step, int n) {
    using namespace ns3;
    Ptr<SpectrumModel> sm = LteSpectrumValueHelper::GetSpectrumModel(100, 100);
    SpectrumValue sinr(sm);
    Ptr<LteAmc> amc = CreateObject<LteAmc>();
    std::vector<int> out;
    for (int k = 0; k < n; ++k) {
        double lin = std::pow(10.0, (db0 + k * step) / 10.0);
        for (int i = 0; i < 100; ++i) { sinr[i] = lin; }
        out.push_back(amc->CreateCqiFeedbacks(sinr, 100).at(0));
    }
    return out;
}
"""


def main() -> int:
    import cppyy
    from ns import ns

    cppyy.cppdef(CPP)
    amc = ns.CreateObject[ns.LteAmc]()
    db0, db1, step = GRID_DB
    n = int(round((db1 - db0) / step)) + 1
    curves: dict[str, dict] = {}
    for direction, tbs_of in (
        ("uplink", amc.GetUlTbSizeFromMcs),
        ("downlink", amc.GetDlTbSizeFromMcs),
    ):
        per_prbs = {}
        for prbs in PRBS:
            rows = []
            for mcs in range(29):
                tbs_bits = int(tbs_of(mcs, prbs))
                b = list(cppyy.gbl.netfl_bler_curve(prbs, tbs_bits // 8, mcs, db0, step, n))
                assert all(x >= y - 1e-12 for x, y in zip(b, b[1:], strict=False)), (
                    direction,
                    prbs,
                    mcs,
                )
                lo = max([k for k, x in enumerate(b) if x >= 1 - TAIL], default=0)
                hi = min([k for k, x in enumerate(b) if x <= TAIL], default=n - 1)
                rows.append(
                    {
                        "mcs": mcs,
                        "tbs_bits": tbs_bits,
                        "start_db": round(db0 + lo * step, 6),
                        "bler": [float(f"{x:.6g}") for x in b[lo : hi + 1]],
                    }
                )
            per_prbs[str(prbs)] = rows
            print(f"{direction} {prbs} PRBs: done", flush=True)
        curves[direction] = per_prbs
    # the downlink CQI rule: the lowest SINR at which each CQI 1..15 is reported
    cqi_step = 0.01
    m = int(round((db1 - db0) / cqi_step)) + 1
    cqi = list(cppyy.gbl.netfl_dl_cqi(db0, cqi_step, m))
    assert all(a <= b for a, b in zip(cqi, cqi[1:], strict=False)), "CQI not monotone"
    thresholds = [
        round(db0 + cqi_step * next(k for k, c in enumerate(cqi) if c >= q), 6)
        if max(cqi) >= q
        else None
        for q in range(1, 16)
    ]
    print(f"downlink CQI thresholds [dB]: {thresholds}", flush=True)
    OUT.write_text(
        json.dumps(
            {
                "source": "ns-3 3.44 LteMiErrorModel::GetTbDecodificationStats "
                "(pip ns3==3.44.post0), flat SINR over the allocation, no HARQ history; "
                "exported by validation/ns3/lte_bler.py, do not edit by hand",
                "step_db": step,
                "prbs": list(PRBS),
                "curves": curves,
                "downlink_cqi": {
                    "rule": "LteAmc::CreateCqiFeedbacks(sinr, 100), AmcModel MiErrorModel "
                    "(the UE's wideband CQI at a flat SINR over 100 PRBs)",
                    "step_db": cqi_step,
                    "thresholds_db": thresholds,
                },
            },
            separators=(",", ":"),
        )
        + "\n"
    )
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
