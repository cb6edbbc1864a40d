"""Per-node energy meters: compute, and the radio states of UEs and of the BS.

A device's power is its platform power (``busy_power_w`` while computing,
``idle_power_w`` otherwise; idle is derived from the meters by the round
accounting) plus its modem's power: ``tx``/``rx`` while the transfer holds
resource blocks (airtime), ``wait`` while a transfer is active but queued
(RRC connected, no RBs), ``tail`` in the RRC tail after its last transfer,
``promotion`` from RRC idle to connected before a transfer of an idle UE.
The BS is charged by its load-dependent power model while it carries FL
traffic (``bs_radio``), never per concurrent flow.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["EnergyMeter", "METER_FIELDS"]


@dataclass
class EnergyMeter:
    """Cumulative time [s] and energy [J] of one node, by activity."""

    compute_s: float = 0.0
    compute_j: float = 0.0
    tx_s: float = 0.0
    tx_j: float = 0.0
    rx_s: float = 0.0
    rx_j: float = 0.0
    wait_s: float = 0.0
    wait_j: float = 0.0
    tail_s: float = 0.0
    tail_j: float = 0.0
    promotion_s: float = 0.0
    promotion_j: float = 0.0
    bs_radio_s: float = 0.0
    bs_radio_j: float = 0.0

    @property
    def radio_j(self) -> float:
        return (
            self.tx_j + self.rx_j + self.wait_j + self.tail_j + self.promotion_j + self.bs_radio_j
        )

    @property
    def total_j(self) -> float:
        """Compute and radio energy (the idle platform power is accounted apart)."""
        return self.compute_j + self.radio_j

    def values(self) -> tuple[float, ...]:
        return tuple(getattr(self, f) for f in METER_FIELDS)


METER_FIELDS = tuple(f.name for f in fields(EnergyMeter))
