"""The ``devices.availability`` section (issue 33, item 3): when a device can take
part, and the trace files it may name (a CSV of on-intervals, FedScale's client
availability trace), read bounded. The processes themselves are
:mod:`netfl.core.onoff`; :mod:`netfl.sim.device_availability` asks them each round."""

from __future__ import annotations

import csv
import io
import math
from typing import Literal

from pydantic import Field, ValidationInfo, model_validator

from netfl.scenario.reading import cached_per_file, read_bytes_bounded, read_text_bounded
from netfl.scenario.strict import _Strict, beside

__all__ = ["AvailabilitySection", "read_availability_trace", "read_fedscale_file"]

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


class AvailabilitySection(_Strict):
    """When a device can take part (``netfl.core.onoff``): ``always``; in each
    round with probability ``p`` (``bernoulli``); a two-state Markov on/off process in
    simulated time (``markov``: exponential on/off periods of means ``mean_on_s`` and
    ``mean_off_s``, stationary at the start); or the on-intervals of a ``trace`` (a CSV
    ``file`` with columns ``device`` — index from 0, or name — ``on_s``, ``off_s``,
    relative to the scenario file). Checked at each round's start; a device that is off
    is not selected and rejoins at the first round it is on."""

    model: Literal["always", "bernoulli", "markov", "trace", "fedscale"] = "always"
    p: float | None = Field(None, ge=0.0, le=1.0, description="bernoulli: P(on) per round")
    mean_on_s: float | None = Field(None, ge=1e-3, le=1e9, description="markov: mean on-period [s]")
    mean_off_s: float | None = Field(
        None, ge=1e-3, le=1e9, description="markov: mean off-period [s]"
    )
    file: str | None = Field(
        None, max_length=500, description="trace: CSV of device, on_s, off_s (on-intervals)"
    )

    @model_validator(mode="after")
    def _keys_of_model(self, info: ValidationInfo) -> AvailabilitySection:
        keys = {"always": set(), "bernoulli": {"p"}, "markov": {"mean_on_s", "mean_off_s"}}
        keys["trace"] = keys["fedscale"] = {"file"}
        given = {
            k for k in ("p", "mean_on_s", "mean_off_s", "file") if getattr(self, k) is not None
        }
        stray, missing = sorted(given - keys[self.model]), sorted(keys[self.model] - given)
        if stray:
            raise ValueError(f"{', '.join(stray)} does not apply to model {self.model!r}")
        if missing:
            raise ValueError(f"model {self.model!r} needs {', '.join(missing)}")
        if self.file is not None:
            # (absolute: the resolved scenario names it)
            self.__dict__["file"] = beside(self.file, (info.context or {}).get("base_dir"))
            if self.model == "trace":  # (one line if the file is bad)
                read_availability_trace(self.file)
            else:
                read_fedscale_file(self.file)
        return self

    @property
    def varies(self) -> bool:
        return self.model != "always"
