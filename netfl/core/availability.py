"""The registry of availability models: when a device can take part
(``devices.availability.model``).

A model answers for one device either a probability of being on in each round
(:meth:`AvailabilityModel.round_probability`: Bernoulli, drawn jointly per round) or a
process in simulated time (:meth:`AvailabilityModel.process`: an :class:`OnOff` —
``is_on(t)``, ``next_off(t)``, ``next_on(t)`` — whose state is a function of time, so
it costs no event of its own). The built-ins (:mod:`netfl.core.onoff`):

- ``always`` — every device in coverage, every round;
- ``bernoulli`` — on in each round with probability ``p``, independently;
- ``markov`` — a two-state Markov on/off process (exponential periods of means
  ``mean_on_s`` and ``mean_off_s``, stationary at the start);
- ``trace`` — the on-intervals of a CSV ``file`` (columns device, on_s, off_s);
- ``fedscale`` — FedScale's client availability trace ``file`` (it repeats).

:func:`register_availability` adds a model (a plugin: ``netfl.register_availability``);
its options are ``devices.availability.options``, validated by its pydantic ``Config``.
The built-ins read the section's own keys (:attr:`AvailabilityModel.keys`, all required).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

import numpy as np
from pydantic import BaseModel

from channel_models.registry import register_class
from netfl.core.bounded_reading import cached_per_file, read_bytes_bounded, read_text_bounded
from netfl.core.onoff import MarkovOnOff, TraceAvailability
from netfl.errors import RegistrationError

__all__ = [
    "AVAILABILITY_MODELS",
    "AvailabilityModel",
    "OnOff",
    "read_availability_trace",
    "read_fedscale_file",
    "register_availability",
]


class OnOff(Protocol):
    """A device's availability in simulated time."""

    def is_on(self, t: float) -> bool:
        """Whether the device can take part at ``t`` [s]."""
        ...

    def next_off(self, t: float) -> float | None:
        """When the device, on at ``t``, turns off (None: off at ``t``, or never)."""
        ...

    def next_on(self, t: float) -> float | None:
        """When the device, off at ``t``, turns on (None: on at ``t``, or never)."""
        ...


#: a trace file larger than this is refused before it is parsed
MAX_TRACE_BYTES = 8 << 20


def _read_availability_trace(path: str) -> dict[str, list[tuple[float, float]]]:
    """A trace CSV (columns ``device``, ``on_s``, ``off_s``; a device by index from 0 or
    by name): each device's on-intervals, sorted and merged where they touch; read
    bounded (a regular file of at most 8 MiB); ``ValueError`` names the line at fault."""
    try:
        text = read_text_bounded(path, MAX_TRACE_BYTES, "availability trace")
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [h.strip() for h in reader.fieldnames or []]
    if not {"device", "on_s", "off_s"} <= set(header):
        raise ValueError(f"{path} needs the columns device, on_s, off_s (has {header[:6]})")
    out: dict[str, list[tuple[float, float]]] = {}
    for i, row in enumerate(reader, start=2):
        row = {k.strip(): (v or "").strip() for k, v in row.items() if k is not None}
        try:
            on, off = float(row["on_s"]), float(row["off_s"])
        except ValueError:
            raise ValueError(f"{path} line {i}: on_s, off_s must be numbers") from None
        if not (math.isfinite(on) and math.isfinite(off) and 0.0 <= on < off <= 1e12):
            raise ValueError(f"{path} line {i}: needs 0 ≤ on_s < off_s (finite)")
        device = row["device"]
        if not device:
            raise ValueError(f"{path} line {i}: no device")
        key = f"ue{int(device)}" if device.isdigit() else device
        out.setdefault(key, []).append((on, off))
    for key, spans in out.items():
        spans.sort()
        merged = [spans[0]]
        for a, b in spans[1:]:
            if a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        out[key] = merged
    return out


#: :func:`_read_availability_trace`, cached per file and modification time
read_availability_trace = cached_per_file(_read_availability_trace, maxsize=4)


def _read_fedscale(path: str) -> list[tuple[tuple[tuple[float, float], ...], float]]:
    """FedScale's client availability trace at ``path`` (a regular file of at most 256
    MiB); ``ValueError`` says what is wrong."""
    from netfl.core.onoff import MAX_FEDSCALE_BYTES, read_fedscale_trace

    try:
        return read_fedscale_trace(read_bytes_bounded(path, MAX_FEDSCALE_BYTES, "FedScale trace"))
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


#: :func:`_read_fedscale`, cached per file and modification time
read_fedscale_file = cached_per_file(_read_fedscale, maxsize=4)


class AvailabilityModel:
    """A way of being available: per round (:meth:`round_probability`) or in time
    (:meth:`process`). ``settings`` is the ``devices.availability`` section for a
    built-in (its :attr:`keys`) and the validated :attr:`Config`
    (``devices.availability.options``) for a plugin's."""

    #: ``devices.availability.model``
    name: ClassVar[str]
    description: ClassVar[str] = ""
    #: the section's keys it needs (built-ins; a plugin's reads ``options``)
    keys: ClassVar[frozenset[str]] = frozenset()
    #: its options (``devices.availability.options``): a pydantic model, or None
    Config: ClassVar[type[BaseModel] | None] = None
    #: whether a device of this model is ever unavailable (``always``: never)
    varies: ClassVar[bool] = True

    @classmethod
    def check(cls, settings: Any) -> None:
        """More than the keys' types: e.g. the trace file reads (``ValueError``)."""
        return None

    @classmethod
    def round_probability(cls, settings: Any) -> float:
        """P(on) in each round, drawn per round for every device jointly (1: not a
        per-round model)."""
        return 1.0

    @classmethod
    def process(
        cls,
        settings: Any,
        device_index: int,
        device_name: str,
        rng: Callable[[], np.random.Generator],
    ) -> OnOff | None:
        """The device's availability in time (None: a per-round model); ``rng()`` gives
        the device's own ``availability`` stream."""
        return None


#: the availability models by name
AVAILABILITY_MODELS: dict[str, type[AvailabilityModel]] = {}


def register_availability(cls: type[AvailabilityModel]) -> type[AvailabilityModel]:
    """Add an :class:`AvailabilityModel` under its ``name`` (a class decorator);
    :class:`~netfl.errors.RegistrationError` for a malformed or taken name, or a
    ``Config`` that is no pydantic model."""
    try:
        return register_class(
            AVAILABILITY_MODELS, cls, AvailabilityModel, "availability model", BaseModel
        )
    except ValueError as err:
        raise RegistrationError(str(err)) from None


@register_availability
class Always(AvailabilityModel):
    name = "always"
    description = "every device in coverage, every round"
    varies = False


@register_availability
class Bernoulli(AvailabilityModel):
    name = "bernoulli"
    description = "on in each round with probability p"
    keys = frozenset({"p"})

    @classmethod
    def round_probability(cls, settings: Any) -> float:
        return float(settings.p)


@register_availability
class Markov(AvailabilityModel):
    name = "markov"
    description = "two-state Markov on/off, exponential periods (stationary at the start)"
    keys = frozenset({"mean_on_s", "mean_off_s"})

    @classmethod
    def process(cls, settings, device_index, device_name, rng) -> OnOff:
        return MarkovOnOff(float(settings.mean_on_s), float(settings.mean_off_s), rng())


@register_availability
class Trace(AvailabilityModel):
    name = "trace"
    description = "the on-intervals of a CSV trace (device, on_s, off_s)"
    keys = frozenset({"file"})

    @classmethod
    def check(cls, settings: Any) -> None:
        read_availability_trace(settings.file)

    @classmethod
    def process(cls, settings, device_index, device_name, rng) -> OnOff:
        return TraceAvailability(tuple(read_availability_trace(settings.file)[device_name]))


@register_availability
class FedScale(AvailabilityModel):
    name = "fedscale"
    description = "FedScale's client availability trace (repeating)"
    keys = frozenset({"file"})

    @classmethod
    def check(cls, settings: Any) -> None:
        read_fedscale_file(settings.file)

    @classmethod
    def process(cls, settings, device_index, device_name, rng) -> OnOff:
        clients = read_fedscale_file(settings.file)  # (client id i + 1, modulo the clients)
        spans, period = clients[(device_index + 1) % len(clients)]
        return TraceAvailability(spans, period)
