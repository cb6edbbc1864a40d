"""channel_models: pure physics of wireless links (no SimPy, no torch, no netfl).

Unit conversions, named link profiles; path loss, fading, SNR, rates and
outage follow in later modules. Everything is vectorised numpy and SI.
"""

from channel_models.link_profiles import LinkProfile, get_link_profile, link_profiles
from channel_models.units import (
    bps_to_mbps,
    db_to_linear,
    dbm_to_w,
    linear_to_db,
    mbps_to_bps,
    w_to_dbm,
)

__all__ = [
    "LinkProfile",
    "get_link_profile",
    "link_profiles",
    "db_to_linear",
    "linear_to_db",
    "dbm_to_w",
    "w_to_dbm",
    "mbps_to_bps",
    "bps_to_mbps",
]
