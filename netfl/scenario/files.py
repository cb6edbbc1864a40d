"""Scenario files in and out: ``--set`` overrides, validation errors as key paths.

Every problem becomes one line ``FILE: key.path: what is wrong (valid: …)``
(:class:`~netfl.errors.ScenarioError`). Validating a file with its plugins and its
algorithm's options — :func:`~netfl.loading.scenarios.load_scenario`,
``parse_scenario``, the JSON schema and the resolved form — is
:mod:`netfl.loading.scenarios` (it needs the algorithm registry, which this package
sits below).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from netfl.errors import ScenarioError
from netfl.scenario.reading import excerpt as _excerpt
from netfl.scenario.reading import parse_yaml_text, read_yaml
from netfl.scenario.schema import Scenario

__all__ = [
    "apply_overrides",
    "apply_values",
    "parse_overrides",
    "read_yaml",
]


def _model_at(loc: tuple, root: type[BaseModel] = Scenario) -> type[BaseModel] | None:
    """The pydantic model class under ``root`` that owns the last key of ``loc``."""
    import typing

    cls: Any = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = cls.model_fields.get(part) if isinstance(cls, type) else None
        if field is None:
            return None
        ann = field.annotation
        for arg in (ann, *typing.get_args(ann)):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                cls = arg
                break
        else:
            return None
    return cls if isinstance(cls, type) and issubclass(cls, BaseModel) else None


def _problems(
    err: ValidationError, prefix: tuple = (), root: type[BaseModel] = Scenario
) -> list[tuple[str, str]]:
    """``(key path, message)`` of every error of ``err``, validating as ``root``.

    A value that fits none of a union's forms (``server_site: foo``) is one problem
    listing what each form expected, without pydantic's internal names of the forms."""
    out: list[tuple[str, str]] = []
    union: dict[str, int] = {}  # path → index in out of its union problem
    for e in err.errors():
        raw = prefix + tuple(e["loc"])
        loc = tuple(p for p in raw if not (isinstance(p, str) and _UNION_TAG.match(p)))
        path = ".".join(str(p) for p in loc)
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            owner = _model_at(tuple(e["loc"]), root) if not prefix else None
            msg = "unknown key"
            if owner is not None:
                msg += f" (valid keys: {', '.join(owner.model_fields)})"
        elif len(loc) < len(raw):  # one form of a union: said with the others
            if path in union:
                i = union[path]
                out[i] = (path, out[i][1].removesuffix(f" (got {_excerpt(e.get('input'))})"))
                msg = f"{out[i][1]}; or {msg.removeprefix('Input should be ')}"
                msg += f" (got {_excerpt(e['input'])})" if "input" in e else ""
                out[i] = (path, msg)
                continue
            union[path] = len(out)
            msg = f"expected {msg[0].lower()}{msg[1:]}".replace(
                "expected input should be", "expected"
            )
            msg += f" (got {_excerpt(e['input'])})" if "input" in e else ""
        elif e["type"] not in ("value_error", "missing") and "input" in e:
            msg += f" (got {_excerpt(e['input'])})"
        out.append((path, msg))
    return out


#: pydantic's names of a union's forms in an error's location (``constrained-int``,
#: ``literal['cloud']``, ``function-after[...]``, …): not keys of the file
_UNION_TAG = re.compile(
    r"^(constrained-|literal\[|function-|tagged-union|lax-|json-or-python|chain\[|nullable\[|"
    r"default\[|list\[|tuple\[|dict\[|int$|float$|str$|bool$|none$)"
)


def _check_link_profiles(scenario: Scenario) -> list[tuple[str, str]]:
    """A device's ``link_profile`` (its fixed rates) does not apply to an OFDMA cell,
    which rates each device from its channel: refused, not written into the devices
    table as if it had been used."""
    if scenario.cell.link.mode != "ofdma":
        return []
    devices = scenario.devices
    keys = [("devices.link_profile", devices)] + [
        (f"devices.groups.{i}.link_profile", g) for i, g in enumerate(devices.groups)
    ]
    why = "a link profile sets a fixed-rate link; an OFDMA cell rates each device from its channel"
    return [(key, why) for key, section in keys if section.given({"link_profile"})]


def _check_modem_profiles(scenario: Scenario) -> list[tuple[str, str]]:
    """``modem_profile: link`` needs, for every device it applies to, a link (fixed
    rate: the device's link profile; OFDMA or a network: the cell's channel profile)
    that names a known compute profile as its measured modem — reported at the key
    that said ``link``; a channel profile's beamforming gain is a single cell's (a
    network's BS antennas are its sectors')."""
    from channel_models import get_link_profile, link_profiles
    from netfl.compute.profiles import compute_profiles

    d, out = scenario.devices, []
    ofdma = scenario.cell.link.mode == "ofdma" or scenario.network is not None
    channel = scenario.cell.link.channel_profile_resolved() if ofdma else None
    if channel is not None and scenario.network is not None and channel.antenna_gain_db:
        out.append(("cell.link.channel_profile", network_gain_problem(channel)))
    # each device's modem choice, the key that made it, and its link (fixed rate)
    keys, links, i = ["devices.modem_profile"] * d.count, [d.link_profile] * d.count, 0
    for k, g in enumerate(d.groups):
        if g.modem_profile is not None:
            keys[i : i + g.count] = [f"devices.groups.{k}.modem_profile"] * g.count
        if g.link_profile is not None:
            links[i : i + g.count] = [g.link_profile] * g.count
        i += g.count
    seen = set()
    for modem, key, link_name in zip(d.modem_profiles_of(), keys, links, strict=True):
        if modem != "link" or key in seen:
            continue
        kind = "channel" if channel is not None else "link"
        owner = channel if channel is not None else get_link_profile(link_name)
        named = scenario.cell.link.profiles() if channel is not None else link_profiles()
        if owner.modem_profile is None:
            seen.add(key)
            those = ", ".join(n for n, p in named.items() if p.modem_profile is not None)
            out.append(
                (
                    key,
                    f"'link': {kind} profile {owner.name!r} names no measured modem "
                    f"(those that do: {those or 'none'}); choose one of those, or name a "
                    "modem profile (s20u_lte, s20u_5g_lowband, s20u_5g_mmwave, "
                    "huang2012_lte or any compute profile)",
                )
            )
        elif owner.modem_profile not in compute_profiles():
            seen.add(key)
            out.append(
                (
                    key,
                    f"'link': {kind} profile {owner.name!r} names modem profile "
                    f"{owner.modem_profile!r}, which is no compute profile",
                )
            )
    return out


def network_gain_problem(channel: Any) -> str:
    """Why a network refuses a channel profile with a serving-link beamforming gain."""
    return (
        f"{channel.name!r} has a serving-link beamforming gain (antenna_gain_db "
        f"{channel.antenna_gain_db:g} dB), a single cell's model; a network's BS "
        "antennas are its sectors' (network.antenna): drop network: for one cell, or "
        "give cell.link.channel_profile_file a copy of the profile without antenna_gain_db"
    )


def _parse_value(text: str) -> Any:
    try:
        return parse_yaml_text(text, "--set")
    except ScenarioError:
        return text


def parse_overrides(overrides: list[str], source: str = "--set") -> dict[str, Any]:
    """``["key.path=value", ...]`` → ``{key.path: value}`` (values parsed as YAML)."""
    values = {}
    for item in overrides:
        if "=" not in item:
            raise ScenarioError(
                source, [("", f"override {item!r} is not of the form key.path=value")]
            )
        path, value = item.split("=", 1)
        values[path.strip()] = _parse_value(value)
    return values


def apply_overrides(data: dict, overrides: list[str], source: str = "--set") -> dict:
    """Apply ``key.path=value`` overrides (values parsed as YAML) to a copy of ``data``."""
    return apply_values(data, parse_overrides(overrides, source), source)


def apply_values(data: dict, values: dict[str, Any], source: str = "--set") -> dict:
    """Set ``{key.path: value}`` (values already parsed) in a copy of ``data``.

    A mapping value replaces the whole section at its path; list items are
    addressed by index (``devices.groups.0.count``).
    """
    data = copy.deepcopy(data)
    for path, value in values.items():
        keys = str(path).split(".")
        if not all(keys):
            raise ScenarioError(source, [(path, "empty key in override path")])
        node: Any = data
        for i, key in enumerate(keys[:-1]):
            if isinstance(node, list):
                if not key.isdigit() or int(key) >= len(node):
                    raise ScenarioError(source, [(".".join(keys[: i + 1]), "no such list index")])
                node = node[int(key)]
                continue
            if not isinstance(node, dict):
                raise ScenarioError(source, [(".".join(keys[:i]), "is not a section")])
            node = node.setdefault(key, {})
        last = keys[-1]
        if isinstance(node, list):
            if not last.isdigit() or int(last) >= len(node):
                raise ScenarioError(source, [(path, "no such list index")])
            node[int(last)] = copy.deepcopy(value)
        elif isinstance(node, dict):
            node[last] = copy.deepcopy(value)
        else:
            raise ScenarioError(source, [(".".join(keys[:-1]), "is not a section")])
    return data
