"""Compute profiles of devices and servers (package data with sources)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from channel_models.registry import lookup

__all__ = ["ComputeProfile", "compute_profiles", "get_compute_profile"]


@dataclass(frozen=True)
class ComputeProfile:
    """What a node computes per second and what it draws.

    Parameters
    ----------
    name : str
        Registry name.
    effective_flops_per_s : float
        Sustained training throughput [FLOP/s].
    reference_flops_per_s : float
        The published figure (measurement or datasheet peak) it derives from [FLOP/s].
    busy_power_w, idle_power_w : float
        Electrical power while computing / idle [W].
    tx_power_w, rx_power_w : float
        Electrical radio power while transmitting / receiving [W].
    parallel_jobs : int
        Compute steps that may run at once; further steps queue.
    radio_wait_power_w : float
        Modem power while a transfer is active but holds no RBs (queued, RRC
        connected) [W].
    rrc_tail_power_w, rrc_tail_s : float
        Modem power [W] and length [s] of the RRC tail after the last transfer
        ends (cut short when the next transfer starts).
    tx_power_per_mbps_w, rx_power_per_mbps_w : float
        Radio power that grows with the transfer's throughput on air [W per Mbit/s]
        (Huang et al. 2012's α_u, α_d: P = α·R + β with β the ``tx``/``rx`` power);
        0: a constant power.
    rrc_promotion_power_w, rrc_promotion_s : float
        Modem power [W] and length [s] of the promotion from RRC idle to connected
        that a transfer of an idle UE waits for (0: none).
    """

    name: str
    effective_flops_per_s: float
    busy_power_w: float
    idle_power_w: float
    tx_power_w: float
    rx_power_w: float
    parallel_jobs: int = 1
    radio_wait_power_w: float = 0.0
    reference_flops_per_s: float = 0.0
    rrc_tail_power_w: float = 0.0
    rrc_tail_s: float = 0.0
    tx_power_per_mbps_w: float = 0.0
    rx_power_per_mbps_w: float = 0.0
    rrc_promotion_power_w: float = 0.0
    rrc_promotion_s: float = 0.0
    description: str = ""
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    def with_overrides(self, **overrides: Any) -> ComputeProfile:
        """A copy with some values replaced (scenario-level overrides)."""
        clean = {k: v for k, v in overrides.items() if v is not None}
        if not clean:
            return self
        sources = dict(self.sources)
        for k in clean:
            sources[k] = "scenario override"
        return replace(self, sources=sources, **clean)

    def __repr__(self) -> str:
        return (
            f"ComputeProfile({self.name!r}, {self.effective_flops_per_s:.3g} FLOP/s, "
            f"busy={self.busy_power_w:g} W, idle={self.idle_power_w:g} W)"
        )


@lru_cache(maxsize=1)
def compute_profiles() -> dict[str, ComputeProfile]:
    """All bundled compute profiles by name."""
    text = resources.files("netfl.compute").joinpath("data/compute_profiles.yaml").read_text()
    raw = yaml.safe_load(text)["profiles"]
    return {
        name: ComputeProfile(
            name=name,
            effective_flops_per_s=float(p["effective_flops_per_s"]),
            busy_power_w=float(p["busy_power_w"]),
            idle_power_w=float(p["idle_power_w"]),
            tx_power_w=float(p["tx_power_w"]),
            rx_power_w=float(p["rx_power_w"]),
            parallel_jobs=int(p.get("parallel_jobs", 1)),
            radio_wait_power_w=float(p.get("radio_wait_power_w", 0.0)),
            reference_flops_per_s=float(p["reference_flops_per_s"]),
            rrc_tail_power_w=float(p.get("rrc_tail_power_w", 0.0)),
            rrc_tail_s=float(p.get("rrc_tail_s", 0.0)),
            tx_power_per_mbps_w=float(p.get("tx_power_per_mbps_w", 0.0)),
            rx_power_per_mbps_w=float(p.get("rx_power_per_mbps_w", 0.0)),
            rrc_promotion_power_w=float(p.get("rrc_promotion_power_w", 0.0)),
            rrc_promotion_s=float(p.get("rrc_promotion_s", 0.0)),
            description=p.get("description", ""),
            sources={k: " ".join(str(v).split()) for k, v in p["sources"].items()},
        )
        for name, p in raw.items()
    }


def get_compute_profile(name: str) -> ComputeProfile:
    """Look a profile up by name; ``KeyError`` lists the valid names."""
    return lookup(compute_profiles(), name, "compute profile")
