"""The registry of path-loss laws: ``pathloss: {model: NAME, ...parameters}``.

:data:`PATHLOSS_MODELS` maps a name to a :class:`~channel_models.pathloss.PathLoss`
subclass — the built-ins :class:`~channel_models.pathloss.LogDistance` (FedDif eq. (8)),
:class:`~channel_models.pathloss.FreeSpace` and TR 38.901's UMa, UMi and RMa
(:mod:`channel_models.tr38901`); :func:`register_pathloss` adds one (netfl's plugins:
``netfl.register_pathloss``). A law's parameters are its constructor's keyword
arguments (:func:`pathloss_parameters`), checked against their physical ranges
(:data:`~channel_models.value_ranges.PATHLOSS_BOUNDS` and the law's own
``parameter_bounds``) when built (:func:`build_pathloss`).
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from channel_models.pathloss import FreeSpace, LogDistance, PathLoss
from channel_models.registry import lookup, register_class
from channel_models.tr38901 import RMa, UMa, UMi
from channel_models.value_ranges import check_pathloss_values

__all__ = ["PATHLOSS_MODELS", "build_pathloss", "pathloss_parameters", "register_pathloss"]

#: the path-loss laws by name
PATHLOSS_MODELS: dict[str, type[PathLoss]] = {
    cls.name: cls for cls in (LogDistance, FreeSpace, UMa, UMi, RMa)
}


def register_pathloss(cls: type[PathLoss]) -> type[PathLoss]:
    """Add a :class:`PathLoss` subclass under its ``name`` (a class decorator);
    ``ValueError`` for a malformed or taken name, an incomplete law, or bounds that are
    no ``{parameter: (low, high)}``."""
    bounds = getattr(cls, "parameter_bounds", {}) if isinstance(cls, type) else {}
    name = vars(cls).get("name", cls) if isinstance(cls, type) else cls
    if not isinstance(bounds, dict):
        raise ValueError(f"path-loss law {name!r}: parameter_bounds must be a dict")
    for key, pair in bounds.items():
        ok = isinstance(pair, tuple) and len(pair) == 2
        ok = ok and all(isinstance(b, (int, float)) and math.isfinite(b) for b in pair)
        if not ok or pair[0] > pair[1]:
            raise ValueError(f"path-loss law {name!r}: parameter_bounds[{key!r}] is no (low, high)")
    return register_class(PATHLOSS_MODELS, cls, PathLoss, "path-loss law")


def pathloss_parameters(name: str) -> list[str]:
    """The parameters path-loss law ``name`` takes (besides the carrier frequency)."""
    cls = lookup(PATHLOSS_MODELS, name, "path loss model")
    names: list[str] = []
    for klass in cls.__mro__:
        if klass is object or "__init__" not in vars(klass):
            continue
        for p in inspect.signature(klass.__init__).parameters.values():
            if p.name not in ("self", "carrier_hz") and p.kind in (
                p.POSITIONAL_OR_KEYWORD,
                p.KEYWORD_ONLY,
            ):
                names.append(p.name)
    return list(dict.fromkeys(names))


def build_pathloss(spec: dict[str, Any], carrier_hz: float) -> PathLoss:
    """A :class:`PathLoss` from ``{model: NAME, ...parameters}``; ``ValueError`` names an
    unknown law or parameter, or a parameter outside its physical range."""
    params = dict(spec)
    name = params.pop("model")
    cls = lookup(PATHLOSS_MODELS, name, "path loss model")
    unknown = sorted(set(params) - set(pathloss_parameters(name)))
    if unknown:
        raise ValueError(
            f"unknown parameter {', '.join(unknown)} of path loss model {name!r} "
            f"(valid: {', '.join(pathloss_parameters(name))})"
        )
    check_pathloss_values(params, cls.parameter_bounds)
    if cls.uses_carrier_hz:
        params["carrier_hz"] = carrier_hz
    return cls(**params)
