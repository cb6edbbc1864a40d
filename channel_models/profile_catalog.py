"""The named channel profiles: reading and checking the YAML format
``{profiles: {NAME: {key: value, ...}}}`` into :class:`ChannelProfile` objects — the
ones netfl ships (package data ``data/channel_profiles.yaml``) and user files."""

from __future__ import annotations

import dataclasses
import os
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from channel_models.channel_profiles import ChannelProfile
from channel_models.registry import lookup

__all__ = [
    "channel_profiles",
    "get_channel_profile",
    "load_channel_profiles",
    "parse_channel_profiles",
]


def parse_channel_profiles(raw: Any, where: str = "profiles") -> dict[str, ChannelProfile]:
    """Profiles from plain data ``{profiles: {NAME: {key: value, ...}}}`` (the format of
    ``data/channel_profiles.yaml``); ``ValueError`` names the profile and key at fault."""
    if not isinstance(raw, dict) or not isinstance(raw.get("profiles"), dict):
        raise ValueError(f"{where}: expected a mapping 'profiles: {{NAME: {{...}}}}'")
    fields = {f.name for f in dataclasses.fields(ChannelProfile)} - {"name"}
    out = {}
    for name, spec in raw["profiles"].items():
        if not isinstance(spec, dict):
            raise ValueError(f"{where}.{name}: expected a mapping of profile keys")
        p = dict(spec)
        unknown = sorted(set(p) - fields)
        if unknown:
            raise ValueError(
                f"{where}.{name}: unknown key {', '.join(unknown)} (valid: {', '.join(sorted(fields))})"
            )
        try:
            out[str(name)] = ChannelProfile(
                name=str(name),
                source=" ".join(str(p.pop("source", "")).split()),
                special_slot_symbols=tuple(p.pop("special_slot_symbols", (10, 2, 2))),
                **p,
            )
            for direction in ("uplink", "downlink"):  # the laws and rate functions build
                out[str(name)].efficiency_for(direction)
            out[str(name)].build_pathloss()
            out[str(name)].build_pathloss(d2d=True)
            out[str(name)].build_fading()
        except (TypeError, KeyError, ValueError) as err:
            message = str(err).strip('"')
            if isinstance(err, TypeError) and "required positional argument" in message:
                message = "missing " + message.split("missing ", 1)[-1]
            raise ValueError(f"{where}.{name}: {message}") from None
    return out


@lru_cache(maxsize=1)
def channel_profiles() -> dict[str, ChannelProfile]:
    """The named profiles netfl ships (``data/channel_profiles.yaml``)."""
    text = resources.files("channel_models").joinpath("data/channel_profiles.yaml").read_text()
    return parse_channel_profiles(yaml.safe_load(text), "channel_profiles.yaml")


def load_channel_profiles(path: str) -> dict[str, ChannelProfile]:
    """User-defined profiles from a YAML file in the same format (cached per file and
    modification time); ``ValueError`` names the file, the profile and the key."""
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror or err}") from None
    return _load_profiles_file(path, stamp)


@lru_cache(maxsize=16)
def _load_profiles_file(path: str, _stamp: int) -> dict[str, ChannelProfile]:
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise ValueError(f"cannot read {path} as YAML ({type(err).__name__})") from None
    return parse_channel_profiles(raw, f"{path}: profiles")


def get_channel_profile(name: str) -> ChannelProfile:
    return lookup(channel_profiles(), name, "channel profile")
