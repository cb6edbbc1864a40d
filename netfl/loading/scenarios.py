"""Scenario files with their algorithm: read, validate, resolve, and the JSON schema.

:func:`parse_scenario` loads the scenario's plugins (and the installed entry point its
algorithm names), validates the schema (:mod:`netfl.scenario`), then the algorithm's
options with its ``Config`` and what depends on the algorithm (per-device models,
availability, a deadline, the algorithm's own checks). Every problem becomes one line
``FILE: key.path: what is wrong (valid: …)`` (:class:`~netfl.errors.ScenarioError`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from netfl.algorithms import ALGORITHMS, get_algorithm
from netfl.errors import ScenarioError, UserCodeError
from netfl.loading.knob_checks import check_codecs, check_over_the_air, check_policy
from netfl.loading.plugins import (
    PluginCodeError,
    PluginError,
    load_entry_point,
    load_plugin_entry_points,
    load_plugins,
)
from netfl.scenario.files import (
    _check_link_profiles,
    _check_modem_profiles,
    _problems,
    apply_overrides,
)
from netfl.scenario.layout import KIND_KEYS
from netfl.scenario.plausibility import warn_implausible
from netfl.scenario.reading import read_yaml
from netfl.scenario.schema import LINK_MODE_KEYS, Scenario

__all__ = [
    "parse_scenario",
    "load_scenario",
    "scenario_schema",
    "algorithm_config",
    "resolved",
]


def parse_scenario(
    data: Any, source: str = "<scenario>", base_dir: str | Path | None = None
) -> Scenario:
    """Validate plain data as a scenario; :class:`ScenarioError` names every bad key.

    Relative file names in it (a CSV layout, a channel-profile file) are read from
    ``base_dir``, by default the folder of ``source`` when that is a file, else the
    working directory (a sweep passes its base scenario's folder)."""
    if not isinstance(data, dict):
        raise ScenarioError(source, [("", "a scenario must be a mapping of sections")])
    folder = Path(base_dir) if base_dir is not None else _base_dir(source)
    try:
        if data.get("plugins"):  # (registered before the algorithm name is checked)
            load_plugins(data["plugins"], folder)
        load_plugin_entry_points()  # (installed packages' models, schedulers, laws, ...)
        algorithm = data.get("algorithm")
        name = algorithm.get("name") if isinstance(algorithm, dict) else None
        if isinstance(name, str) and name not in ALGORITHMS:
            load_entry_point(name)
    except PluginCodeError as err:  # (the plugin's own code failed: not the input)
        raise UserCodeError(f"{source}: {err.key}: {err}", err.trace) from None
    except PluginError as err:
        raise ScenarioError(source, [(err.key, str(err))]) from None
    try:
        scenario = Scenario.model_validate(data, context={"base_dir": folder})
    except ValidationError as err:
        raise ScenarioError(source, _problems(err)) from None

    name = scenario.algorithm.name
    if name not in ALGORITHMS:
        raise ScenarioError(
            source,
            [
                (
                    "algorithm.name",
                    f"unknown algorithm {name!r} (valid: {', '.join(sorted(ALGORITHMS))}; your "
                    "own: `plugins: [my_algorithm.py]`, or an installed package's "
                    "netfl.algorithms entry point)",
                )
            ],
        )
    options = scenario.algorithm.options()
    resolved_options = ALGORITHMS[name].resolve_options(options, folder)
    if resolved_options != options:  # (file names made absolute: a run directory re-reads them)
        scenario.algorithm = type(scenario.algorithm)(name=name, **resolved_options)
    try:
        algorithm_config(scenario)
    except ValidationError as err:
        probs = _problems(err, ("algorithm",))
        fields = ", ".join(["name", *ALGORITHMS[name].Config.model_fields])
        probs = [
            (p, m.replace("unknown key", f"unknown key (valid keys: {fields})")) for p, m in probs
        ]
        raise ScenarioError(source, probs) from None
    probs = (
        _check_device_models(scenario)
        + _check_link_profiles(scenario)
        + _check_modem_profiles(scenario)
        + _check_availability(scenario)
        + _check_deadline(scenario)
        + check_policy(scenario)
        + check_codecs(scenario)
        + check_over_the_air(scenario)
        + ALGORITHMS[name].check_scenario(scenario)
    )
    if probs:
        raise ScenarioError(source, probs)
    return scenario


def _base_dir(source: str) -> Path:
    """Where a scenario's relative file names (a layout's CSV) are read from: the
    scenario file's folder, or the working directory for data that has no file."""
    path = Path(source)
    return path.parent if path.is_file() else Path.cwd()


def algorithm_config(scenario: Scenario) -> BaseModel:
    """The scenario's ``algorithm`` options validated by that algorithm's ``Config``."""
    return get_algorithm(scenario.algorithm.name).Config(**scenario.algorithm.options())


def _check_deadline(scenario: Scenario) -> list[tuple[str, str]]:
    """``algorithm.deadline_s`` is kept by the rounds that declare it (``@honours``):
    FedAvg's, inherited or wrapped (DFL, FD); an algorithm that runs its own rounds
    (FedDif, HierFAVG, EcoFed, the heterogeneous families) refuses it."""
    if scenario.algorithm.options().get("deadline_s") is None:
        return []

    def keeps(cls: type) -> bool:
        return "deadline_s" in cls.round_honours()

    name = scenario.algorithm.name
    if keeps(ALGORITHMS[name]):
        return []
    able = ", ".join(sorted(k for k, c in ALGORITHMS.items() if keeps(c)))
    return [
        (
            "algorithm.deadline_s",
            f"algorithm {name!r} runs its own rounds; a deadline applies to FedAvg's "
            f"round (valid with: {able})",
        )
    ]


def _check_availability(scenario: Scenario) -> list[tuple[str, str]]:
    """Availability other than ``always`` is for algorithms that select among the
    devices available at a round's start (the FedAvg family); a trace names every
    device that follows it."""
    sections = scenario.devices.availability_of()
    if not any(a.varies for a in sections):
        return []
    name = scenario.algorithm.name
    if not ALGORITHMS[name].supports_availability:
        able = ", ".join(sorted(k for k, c in ALGORITHMS.items() if c.supports_availability))
        return [
            (
                "devices.availability",
                f"algorithm {name!r} does not apply device availability yet (valid with: {able})",
            )
        ]
    from netfl.core.availability import read_availability_trace

    for i, a in enumerate(sections):
        if a.model == "trace" and f"ue{i}" not in read_availability_trace(a.file):
            return [("devices.availability.file", f"{a.file} has no interval for device ue{i}")]
    return []


def _check_device_models(scenario: Scenario) -> list[tuple[str, str]]:
    """Per-device models are for algorithms that declare ``heterogeneous_models``."""
    name = scenario.algorithm.name
    if ALGORITHMS[name].heterogeneous_models:
        return []
    if set(scenario.devices.model_names(scenario.model.name)) == {scenario.model.name}:
        return []
    able = ", ".join(sorted(k for k, c in ALGORITHMS.items() if c.heterogeneous_models))
    key = "devices.models" if scenario.devices.models else "devices.groups"
    return [
        (
            key,
            f"algorithm {name!r} trains one model (model.name) on every device; "
            f"per-device models need one of: {able}",
        )
    ]


def load_scenario(path: str | Path, overrides: list[str] | None = None) -> Scenario:
    """Read, override and validate a scenario file."""
    data = read_yaml(path)
    if isinstance(data, dict) and "base" in data:
        raise ScenarioError(
            str(path),
            [
                (
                    "base",
                    "a scenario has no base; a sweep file (name, base, grid, ...) runs with "
                    "`netfl sweep` and is checked with `netfl validate`",
                )
            ],
        )
    if overrides:
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ScenarioError(str(path), [("", "a scenario must be a mapping of sections")])
        data = apply_overrides(data, overrides)
    scenario = parse_scenario(data, str(path))
    warn_implausible(scenario, str(path))  # (one line per implausible link budget value)
    return scenario


def resolved(scenario: Scenario) -> dict[str, Any]:
    """The scenario with every default filled in (algorithm options too), as plain data.

    Written as a run's ``scenario.yaml``; it parses back to a scenario that resolves and
    runs the same. An OFDMA link's grid says what the run derived from its profile
    (``bandwidth_hz``, ``numerology``, ``num_rbs``: TS 38.101 N_RB where only the
    bandwidth was given).
    """
    data = scenario.model_dump(mode="json")
    link = data["cell"]["link"]
    for mode, keys in LINK_MODE_KEYS.items():
        if mode != link["mode"]:
            for key in keys:
                link.pop(key, None)  # keys of the other link mode would not validate
    if link["mode"] == "ofdma":
        profile = scenario.cell.link.channel_profile_resolved()
        for key in ("bandwidth_hz", "numerology", "num_rbs"):
            if link.get(key) is None:
                link[key] = getattr(profile, key)
    devices = data["devices"]
    devices["layout"] = _layout_data(devices["layout"])
    for section in (devices, *devices["groups"]):
        if section.get("modem_profile") is None:  # (unset: as before the key existed, so
            section.pop("modem_profile", None)  # a scenario's fingerprint is unchanged)
    for group in devices["groups"]:
        if group.get("layout") is not None:
            group["layout"] = _layout_data(group["layout"])
    data["algorithm"] = {
        "name": scenario.algorithm.name,
        **algorithm_config(scenario).model_dump(mode="json"),
    }
    return data


def _layout_data(layout: dict[str, Any]) -> dict[str, Any]:
    """A layout's own keys (those of its kind that are set, and the antenna height every
    kind takes): the others would not validate."""
    keys = KIND_KEYS[layout["kind"]] | {"height_m"}
    return {
        "kind": layout["kind"],
        **{k: v for k, v in layout.items() if k in keys and v is not None},
    }


def scenario_schema() -> dict[str, Any]:
    """JSON schema of scenario files, with each algorithm's options under ``algorithm``."""

    schema = Scenario.model_json_schema()
    variants = []
    for name, cls in sorted(ALGORITHMS.items()):
        sub = cls.Config.model_json_schema()
        sub.setdefault("properties", {})["name"] = {"const": name}
        sub["required"] = ["name", *sub.get("required", [])]
        sub["additionalProperties"] = False
        sub["title"] = f"algorithm: {name}"
        schema.setdefault("$defs", {}).update(sub.pop("$defs", {}))
        variants.append(sub)
    schema["$defs"]["AlgorithmSection"] = {"oneOf": variants, "title": "AlgorithmSection"}
    return schema
