"""Guard rails on link budgets (issue 35, item 5): values a schema accepts but that are
almost surely a mistake — a path-loss law that gains at its reference distance, a mean
SNR no cell has, a transmit power no UE or macro BS has. Each is a one-line warning
naming the key; the scenario still runs."""

from __future__ import annotations

import logging
import math
from typing import Any

__all__ = ["MAX_MEAN_SNR_DB", "MAX_TX_POWER_DBM", "link_budget_warnings", "warn_implausible"]

log = logging.getLogger(__name__)

#: a mean SNR above this (at two thirds of the cell radius) is no cell's [dB]
MAX_MEAN_SNR_DB = 60.0
#: a transmit power above this is no UE's or macro BS's [dBm] (1 kW)
MAX_TX_POWER_DBM = 60.0


def link_budget_warnings(scenario: Any) -> list[tuple[str, str]]:
    """``(key, message)`` of every implausible value of an OFDMA link's budget."""
    link = scenario.cell.link
    if link.mode != "ofdma":
        return []
    out = []
    profile = link.channel_profile_resolved()
    law = profile.pathloss
    own = link.pathloss is not None  # (set in the scenario, or the profile's)
    where = "cell.link.pathloss" if own else f"cell.link.channel_profile ({profile.name})"
    beta0 = law.get("beta0_db")
    if law.get("model") == "log_distance" and beta0 is not None and beta0 > 0:
        out.append(
            (
                f"{where}.beta0_db" if own else where,
                f"beta0_db = {beta0:+g} dB is a gain at the reference distance; a loss is "
                "negative (the LTE profiles use -15.3, FedDif's -30)",
            )
        )
    for key, dbm in (
        ("ue_tx_power_dbm", profile.ue_tx_power_dbm),
        ("bs_tx_power_dbm", profile.bs_tx_power_dbm),
    ):
        if dbm > MAX_TX_POWER_DBM:
            out.append(
                (
                    f"cell.link.{key}",
                    f"{dbm:g} dBm is above {MAX_TX_POWER_DBM:g} dBm (1 kW): no UE or macro BS "
                    "transmits that much",
                )
            )
    distance = (
        scenario.network.isd_m / 3.0
        if getattr(scenario, "network", None) is not None
        else 2.0 * scenario.cell.radius_m / 3.0
    )
    loss = float(profile.build_pathloss().mean_loss_db([max(distance, 1.0)])[0])
    loss -= profile.antenna_gain_db  # (a serving link's beamforming gain)
    snr_db = (
        10.0 * math.log10(profile.bs_tx_power_w) - loss - 10.0 * math.log10(profile.noise_w("ue"))
    )
    if snr_db > MAX_MEAN_SNR_DB:
        out.append(
            (
                "cell.link",
                f"the mean downlink SNR at {distance:.0f} m is {snr_db:.0f} dB (above "
                f"{MAX_MEAN_SNR_DB:g} dB): check the path loss (its sign), the powers and "
                "the noise",
            )
        )
    return out


def warn_implausible(scenario: Any, source: str) -> list[tuple[str, str]]:
    """Log each of :func:`link_budget_warnings` as ``SOURCE: KEY: message``."""
    found = link_budget_warnings(scenario)
    for key, message in found:
        log.warning("%s: %s: %s", source, key, message)
    return found
