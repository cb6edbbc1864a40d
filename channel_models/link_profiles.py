"""Named fixed-rate link profiles (uplink/downlink bit rates per device).

The table ships as package data (``channel_models/data/link_profiles.yaml``)
and reproduces EcoFed (arXiv 2304.05495) Appendix B.1, Table XI.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

from channel_models.units import mbps_to_bps

__all__ = ["LinkProfile", "link_profiles", "get_link_profile"]


@dataclass(frozen=True)
class LinkProfile:
    """A fixed-rate access link.

    Parameters
    ----------
    name : str
        Registry name, e.g. ``"4g_lte"``.
    uplink_bps : float
        Device → base-station rate [bit/s].
    downlink_bps : float
        Base-station → device rate [bit/s].
    description : str
        Human-readable name.
    source : str
        Where the numbers come from.
    modem_profile : str or None
        The compute profile whose modem powers match this technology (a measured
        phone's; ``devices.modem_profile: link`` takes it); None: no measured match.
    """

    name: str
    uplink_bps: float
    downlink_bps: float
    description: str = ""
    source: str = ""
    modem_profile: str | None = None

    def __repr__(self) -> str:
        return (
            f"LinkProfile({self.name!r}, uplink={self.uplink_bps / 1e6:g} Mbit/s, "
            f"downlink={self.downlink_bps / 1e6:g} Mbit/s)"
        )


@lru_cache(maxsize=1)
def link_profiles() -> dict[str, LinkProfile]:
    """All bundled link profiles by name."""
    text = resources.files("channel_models").joinpath("data/link_profiles.yaml").read_text()
    raw = yaml.safe_load(text)
    source = raw["source"]
    return {
        name: LinkProfile(
            name=name,
            uplink_bps=float(mbps_to_bps(p["uplink_mbps"])),
            downlink_bps=float(mbps_to_bps(p["downlink_mbps"])),
            description=p.get("description", ""),
            source=source,
            modem_profile=p.get("modem_profile"),
        )
        for name, p in raw["profiles"].items()
    }


def get_link_profile(name: str) -> LinkProfile:
    """Look a profile up by name; ``KeyError`` lists the valid names."""
    profiles = link_profiles()
    if name not in profiles:
        raise KeyError(f"unknown link profile {name!r} (valid: {', '.join(sorted(profiles))})")
    return profiles[name]
