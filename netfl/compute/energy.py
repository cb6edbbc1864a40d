"""Per-node energy meters (compute, radio tx, radio rx)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EnergyMeter"]


@dataclass
class EnergyMeter:
    """Cumulative busy time [s] and energy [J] of one node, by activity."""

    compute_s: float = 0.0
    compute_j: float = 0.0
    tx_s: float = 0.0
    tx_j: float = 0.0
    rx_s: float = 0.0
    rx_j: float = 0.0

    @property
    def total_j(self) -> float:
        return self.compute_j + self.tx_j + self.rx_j
