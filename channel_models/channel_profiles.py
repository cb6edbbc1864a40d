"""Named OFDMA channel profiles (package data): carrier, laws and powers of a cell."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import yaml

from channel_models.fading import FADING_MODELS, BlockFading
from channel_models.link_budget import cqi_efficiency, noise_power_w, shannon_efficiency
from channel_models.numerology import SUBFRAME_S, rb_bandwidth_hz
from channel_models.pathloss import PATHLOSS_MODELS, PathLoss
from channel_models.units import dbm_to_w

__all__ = [
    "ChannelProfile",
    "channel_profiles",
    "get_channel_profile",
    "build_pathloss",
    "build_fading",
]


def build_pathloss(spec: dict[str, Any], carrier_hz: float) -> PathLoss:
    """A :class:`PathLoss` from ``{model: NAME, ...parameters}``."""
    params = dict(spec)
    name = params.pop("model")
    if name not in PATHLOSS_MODELS:
        raise KeyError(f"unknown path loss model {name!r} (valid: {', '.join(PATHLOSS_MODELS)})")
    if name in ("free_space", "uma", "umi"):
        params["carrier_hz"] = carrier_hz
    return PATHLOSS_MODELS[name](**params)


def build_fading(spec: dict[str, Any]) -> BlockFading:
    """A :class:`BlockFading` from ``{model: NAME, coherence_time_s: ..., k_factor: ...}``."""
    params = dict(spec)
    name = params.pop("model")
    if name not in FADING_MODELS:
        raise KeyError(f"unknown fading model {name!r} (valid: {', '.join(FADING_MODELS)})")
    return FADING_MODELS[name](**params)


@dataclass(frozen=True)
class ChannelProfile:
    """An OFDMA cell: carrier, resource grid, path loss, fading, noise, powers.

    SNR of a link (FedDif eq. (9)): p·β·|h|² / (N0·B·F) with B the carrier
    bandwidth; a resource block then carries ``rb_bandwidth_hz × efficiency(SNR)``
    bit/s (FedDif eq. (10): bandwidth = bits / efficiency).
    """

    name: str
    carrier_hz: float
    bandwidth_hz: float
    numerology: int
    num_rbs: int
    pathloss: dict[str, Any]
    d2d_pathloss: dict[str, Any]
    fading: dict[str, Any]
    noise_dbm_per_hz: float
    noise_figure_db: float
    ue_tx_power_dbm: float
    bs_tx_power_dbm: float
    efficiency: dict[str, Any]
    description: str = ""
    source: str = field(default="", compare=False)

    @property
    def rb_bandwidth_hz(self) -> float:
        return rb_bandwidth_hz(self.numerology)

    @property
    def subframe_s(self) -> float:
        return SUBFRAME_S

    @property
    def noise_w(self) -> float:
        return float(noise_power_w(self.bandwidth_hz, self.noise_figure_db, self.noise_dbm_per_hz))

    @property
    def ue_tx_power_w(self) -> float:
        return float(dbm_to_w(self.ue_tx_power_dbm))

    @property
    def bs_tx_power_w(self) -> float:
        return float(dbm_to_w(self.bs_tx_power_dbm))

    def build_pathloss(self, d2d: bool = False) -> PathLoss:
        return build_pathloss(self.d2d_pathloss if d2d else self.pathloss, self.carrier_hz)

    def build_fading(self) -> BlockFading:
        return build_fading(self.fading)

    def efficiency_bps_per_hz(self, snr: np.ndarray) -> np.ndarray:
        """Spectral efficiency [bit/s/Hz] at linear SNR: Shannon (capped) or CQI table."""
        params = dict(self.efficiency)
        if params.pop("model") == "cqi":
            return cqi_efficiency(snr, **params)
        return shannon_efficiency(snr, params.get("max_bps_per_hz"))

    def with_overrides(self, **overrides: Any) -> ChannelProfile:
        from dataclasses import replace

        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


@lru_cache(maxsize=1)
def channel_profiles() -> dict[str, ChannelProfile]:
    text = resources.files("channel_models").joinpath("data/channel_profiles.yaml").read_text()
    raw = yaml.safe_load(text)["profiles"]
    return {
        name: ChannelProfile(name=name, source=" ".join(p.pop("source").split()), **p)
        for name, p in raw.items()
    }


def get_channel_profile(name: str) -> ChannelProfile:
    profiles = channel_profiles()
    if name not in profiles:
        raise KeyError(f"unknown channel profile {name!r} (valid: {', '.join(sorted(profiles))})")
    return profiles[name]
