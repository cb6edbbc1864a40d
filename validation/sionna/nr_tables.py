"""Export TS 38.214 MCS tables, transport block sizes and Sionna's LDPC BLER curves to
netfl's package data (``channel_models/data/nr_sionna.json``).

    python3.11 -m venv /tmp/sionnavenv && /tmp/sionnavenv/bin/pip install "sionna-no-rt>=2.2"
    /tmp/sionnavenv/bin/python validation/sionna/nr_tables.py

Everything comes from Sionna (``sionna-no-rt``, PyTorch, CPU), none of it is typed here:

- ``sionna.phy.nr.utils.decode_mcs_index``: modulation order and target code rate of
  every MCS of TS 38.214 Tables 5.1.3.1-1 (64QAM, "table 1") and 5.1.3.1-2 (256QAM,
  "table 2"), PUSCH and PDSCH;
- ``sionna.phy.nr.utils.calculate_tb_size``: the TBS procedure of TS 38.214 §5.1.3.2 /
  §6.1.4.2 (with its LDPC code-block segmentation) for a slot of 14 OFDM symbols with
  one DMRS symbol (12 DMRS REs per PRB), one layer, no further overhead, for the
  allocations of 6 channel bandwidths at 30 kHz (TS 38.101-1 Table 5.3.2-1);
- ``sionna.sys.PHYAbstraction.get_bler``: Sionna's pre-computed AWGN code-block BLER
  tables (LDPC, per MCS and code-block size; CBS above the simulated 2000 bits uses
  that curve, as Sionna does), evaluated on a 0.05-dB grid and raised to the transport
  block: TBLER = 1 − (1 − BLER_CB)^C. MCSs without a Sionna table (e.g. PUSCH table-1
  MCS 0–2) are stored as null — Sionna's link adaptation skips them too.

netfl's ``nr_bler`` link abstraction (:mod:`channel_models.link_abstraction`) reads it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "channel_models" / "data" / "nr_sionna.json"
GRID_DB = (-12.0, 35.0, 0.05)
#: PRBs at 30 kHz of 10, 20, 40, 50, 80 and 100 MHz channels (TS 38.101-1 Table 5.3.2-1)
PRBS = (24, 51, 106, 133, 217, 273)
SYMBOLS, DMRS_PER_PRB = 14, 12
TAIL = 1e-6


def main() -> int:
    import numpy as np
    import torch
    from sionna.phy.nr.utils import calculate_tb_size, decode_mcs_index
    from sionna.sys import PHYAbstraction

    phy = PHYAbstraction(device="cpu")
    db0, db1, step = GRID_DB
    grid = np.round(np.arange(db0, db1 + step / 2, step), 6)
    snr = torch.tensor(10.0 ** (grid / 10.0), dtype=torch.float32)
    out: dict = {}
    for direction, pusch, category in (("uplink", True, 0), ("downlink", False, 1)):
        for table in (1, 2):
            key = f"{direction}/table{table}"
            num_mcs = 29 if table == 1 else 28
            mcs_rows, curves = [], {}
            for mcs in range(num_mcs):
                qm, rate = decode_mcs_index(mcs, table_index=table, is_pusch=pusch, device="cpu")
                mcs_rows.append({"mcs": mcs, "modulation_order": int(qm), "code_rate": float(rate)})
            for prbs in PRBS:
                rows = []
                for r in mcs_rows:
                    tbs, cbs, num_cb, *_ = calculate_tb_size(
                        modulation_order=r["modulation_order"],
                        target_coderate=r["code_rate"],
                        num_prbs=prbs,
                        num_ofdm_symbols=SYMBOLS,
                        num_dmrs_per_prb=DMRS_PER_PRB,
                        device="cpu",
                    )
                    tbs, cbs, num_cb = int(tbs), int(cbs), int(num_cb)
                    cb = phy.get_bler(r["mcs"], table, category, cbs, snr).double().numpy()
                    row = {"mcs": r["mcs"], "tbs_bits": tbs, "cb_bits": cbs, "num_cb": num_cb}
                    if not np.all(np.isfinite(cb)):
                        rows.append({**row, "start_db": None, "bler": None})
                        continue
                    tb = 1.0 - (1.0 - np.clip(cb, 0.0, 1.0)) ** num_cb
                    tb = np.minimum.accumulate(tb)  # (interpolation ripples: keep it monotone)
                    lo = max([k for k, x in enumerate(tb) if x >= 1 - TAIL], default=0)
                    hi = min([k for k, x in enumerate(tb) if x <= TAIL], default=len(tb) - 1)
                    rows.append(
                        {
                            **row,
                            "start_db": float(grid[lo]),
                            "bler": [float(f"{x:.6g}") for x in tb[lo : hi + 1]],
                        }
                    )
                curves[str(prbs)] = rows
            out[key] = {"mcs": mcs_rows, "curves": curves}
            print(f"{key}: done", flush=True)
    import sionna

    OUT.write_text(
        json.dumps(
            {
                "source": f"Sionna {sionna.__version__} (pip sionna-no-rt): decode_mcs_index, "
                "calculate_tb_size, PHYAbstraction.get_bler; exported by "
                "validation/sionna/nr_tables.py, do not edit by hand",
                "slot": {"ofdm_symbols": SYMBOLS, "dmrs_res_per_prb": DMRS_PER_PRB, "layers": 1},
                "step_db": step,
                "prbs": list(PRBS),
                "tables": out,
            },
            separators=(",", ":"),
        )
        + "\n"
    )
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
