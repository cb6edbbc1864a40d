"""MAC procedures around an OFDMA transfer's flows, as SimPy generators: the buffer-status
grant cycles of an LTE uplink and the HARQ tail of the ``bler`` link abstractions.

Both are a few events per transfer, none per TTI: the carrier's flows carry the bits,
these add the deterministic delays between them and after the last one.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import simpy

from channel_models.numerology import SUBFRAME_S
from channel_models.units import linear_to_db
from netfl.core.activity import DeviceCut, TransferCut
from netfl.radio.ofdma import OfdmaCarrier
from netfl.radio.ofdma_flow import OfdmaFlow

__all__ = [
    "flows_accounting",
    "deliver_in_grant_cycles",
    "harq_tail",
    "cut_flows",
    "MAX_GRANT_CYCLES",
]

#: buffer-status grant cycles of one uplink at most (an LTE cycle carries 150 kB; 10,000
#: of them are a 1.5 GB payload and take seconds of simulator time): scenarios whose
#: transfers would take more are refused before they run
MAX_GRANT_CYCLES = 10_000


def deliver_in_grant_cycles(
    env: simpy.Environment,
    send: Callable[[float], OfdmaFlow],
    size_bits: float,
    grant: dict[str, float],
) -> Generator[simpy.Event, Any, tuple[dict[str, float], OfdmaFlow]]:
    """An uplink transfer of a buffer-status-driven MAC (``profile.uplink_grant``): idle
    for the start-up delay, then one flow (``send(bits)``) per grant cycle of at most
    ``bsr_max_bytes``, cycles ``cycle_gap_s`` apart (meanwhile the carrier serves the
    others: the scheduler believes this UE's buffer empty). Returns the transfer's
    accounting fields and its last flow."""
    chunk_bits = 8.0 * grant["bsr_max_bytes"]
    if grant["startup_delay_s"] > 0:
        yield env.timeout(grant["startup_delay_s"])
    left, flows = size_bits, []
    while True:
        flow = send(min(left, chunk_bits))
        yield flow.done
        flows.append(flow)
        left -= flow.size_bits
        if left <= 0:
            break
        if grant["cycle_gap_s"] > 0:
            yield env.timeout(grant["cycle_gap_s"])
    return flows_accounting(flows), flows[-1]


def flows_accounting(flows: list[OfdmaFlow]) -> dict[str, float]:
    """One transfer's accounting fields from the flows that carried it (grant cycles, or
    the cells of a moving UE): RB sub-frames, airtime and the airtime-mean SNR."""
    airtime = sum(f.airtime_s for f in flows)
    snr = sum(f.snr_seconds for f in flows) / airtime if airtime > 0 else flows[0].mean_snr
    return {
        "rb_subframes": sum(f.rb_seconds for f in flows) / SUBFRAME_S,
        "mean_snr_db": float(linear_to_db(snr)),
        "airtime_s": airtime,
    }


def cut_flows(carrier: OfdmaCarrier, flows: list[OfdmaFlow], cause: DeviceCut) -> TransferCut:
    """A transfer carried by ``flows`` (grant cycles; the last may be on air) is cut now:
    the flow on air leaves the carrier (:meth:`OfdmaCarrier.withdraw`); the bits
    delivered are those of every flow until now (a cut in the HARQ round trips of the
    last block counts its bits: they were on air) and the accounting theirs."""
    for f in flows:
        if any(g is f for g in carrier.flows):
            carrier.withdraw(f)
    delivered = sum(f.size_bits - f.remaining_bits for f in flows)
    extra = flows_accounting(flows) if flows else {"airtime_s": 0.0, "rb_subframes": 0.0}
    return TransferCut(cause, delivered, extra)


def harq_tail(
    env: simpy.Environment,
    harq: dict[str, float],
    efficiency: Any,
    extra: dict[str, Any],
    rng: np.random.Generator,
) -> Generator[simpy.Event, Any, None]:
    """The ``bler`` abstractions' HARQ (none for other efficiency models): the transfer's
    last transport block fails with OLLA's BLER at the transfer's mean SINR and is resent
    one round trip ``harq["rtt_s"]`` later (chase combining;
    :meth:`~channel_models.link_abstraction.BlerLinkAdaptation.retransmissions`), drawn
    from ``rng`` — the generator of the transfer's last flow, after its fading draws (its
    own stream; no generator is made per transfer). The earlier blocks' failures are in
    the goodput; only the last one's round trips add to the duration. Writes
    ``extra["harq_retransmissions"]``."""
    model = getattr(efficiency, "bler_model", None)
    if model is None or not extra.get("airtime_s"):
        return
    sinr = 10.0 ** (extra["mean_snr_db"] / 10.0)
    n = model.retransmissions(sinr, rng, int(harq["max_transmissions"]))
    extra["harq_retransmissions"] = n
    if n:
        yield env.timeout(n * harq["rtt_s"])
