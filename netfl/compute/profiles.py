"""Compute profiles of devices and servers (package data with sources); the profile
itself is a node's (:class:`netfl.core.nodes.ComputeProfile`)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml

from channel_models.registry import lookup
from netfl.core.nodes import ComputeProfile

__all__ = ["ComputeProfile", "compute_profiles", "get_compute_profile"]


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
            tx_power_per_w=float(p.get("tx_power_per_w", 0.0)),
            rx_power_per_mbps_w=float(p.get("rx_power_per_mbps_w", 0.0)),
            rrc_promotion_power_w=float(p.get("rrc_promotion_power_w", 0.0)),
            rrc_promotion_s=float(p.get("rrc_promotion_s", 0.0)),
            min_frequency_hz=float(p.get("min_frequency_hz", 0.0)),
            max_frequency_hz=float(p.get("max_frequency_hz", 0.0)),
            capacitance=float(p.get("capacitance", 0.0)),
            cycles_per_flop=float(p.get("cycles_per_flop", 0.0)),
            cycles_per_sample=float(p.get("cycles_per_sample", 0.0)),
            description=p.get("description", ""),
            sources={k: " ".join(str(v).split()) for k, v in p["sources"].items()},
        )
        for name, p in raw.items()
    }


def get_compute_profile(name: str) -> ComputeProfile:
    """Look a profile up by name; ``KeyError`` lists the valid names."""
    return lookup(compute_profiles(), name, "compute profile")
