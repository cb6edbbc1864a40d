"""The ``devices.availability`` section (issue 33, item 3): when a device can take
part — a model of the registry :mod:`netfl.core.availability` (its trace files read
bounded there) and the keys it needs; :mod:`netfl.sim.device_availability` asks the
models each round."""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationInfo, field_validator, model_validator

from netfl.core.availability import (
    AVAILABILITY_MODELS,
    read_availability_trace,
    read_fedscale_file,
)
from netfl.scenario.strict import _check_name, _Strict, beside, check_options

__all__ = ["AvailabilitySection", "read_availability_trace", "read_fedscale_file"]

#: the section's keys a built-in model may need
_KEYS = ("p", "mean_on_s", "mean_off_s", "file")


class AvailabilitySection(_Strict):
    """When a device can take part (``netfl.core.onoff``): ``always``; in each
    round with probability ``p`` (``bernoulli``); a two-state Markov on/off process in
    simulated time (``markov``: exponential on/off periods of means ``mean_on_s`` and
    ``mean_off_s``, stationary at the start); or the on-intervals of a ``trace`` (a CSV
    ``file`` with columns ``device`` — index from 0, or name — ``on_s``, ``off_s``,
    relative to the scenario file). Checked at each round's start; a device that is off
    is not selected and rejoins at the first round it is on."""

    model: str = Field(
        "always",
        description="an availability model of the registry (`netfl list "
        "availability-models`; a plugin's: netfl.register_availability)",
        json_schema_extra=lambda schema: schema.update(enum=list(AVAILABILITY_MODELS)),
    )
    p: float | None = Field(None, ge=0.0, le=1.0, description="bernoulli: P(on) per round")
    mean_on_s: float | None = Field(None, ge=1e-3, le=1e9, description="markov: mean on-period [s]")
    mean_off_s: float | None = Field(
        None, ge=1e-3, le=1e9, description="markov: mean off-period [s]"
    )
    file: str | None = Field(
        None, max_length=500, description="trace: CSV of device, on_s, off_s (on-intervals)"
    )

    options: dict[str, Any] | None = Field(
        None, description="a plugin's model: its options (the model's Config)"
    )

    _m = field_validator("model")(
        lambda v: _check_name("availability model", v, AVAILABILITY_MODELS)
    )

    @model_validator(mode="after")
    def _keys_of_model(self, info: ValidationInfo) -> AvailabilitySection:
        kind = AVAILABILITY_MODELS[self.model]
        given = {k for k in _KEYS if getattr(self, k) is not None}
        if self.options is not None:
            given.add("options")
        wanted = set(kind.keys) | ({"options"} if kind.Config is not None else set())
        stray, missing = sorted(given - wanted), sorted(set(kind.keys) - given)
        if stray:
            raise ValueError(f"{', '.join(stray)} does not apply to model {self.model!r}")
        if missing:
            raise ValueError(f"model {self.model!r} needs {', '.join(missing)}")
        if self.file is not None:
            # (absolute: the resolved scenario names it)
            self.__dict__["file"] = beside(self.file, (info.context or {}).get("base_dir"))
        if kind.Config is not None:
            check_options(kind.Config, self.options, "options", f"model {self.model!r}")
        kind.check(self.settings())  # (one line if a trace file is bad)
        return self

    def settings(self) -> Any:
        """What the model reads: this section (a built-in), or its validated options."""
        kind = AVAILABILITY_MODELS[self.model]
        return kind.Config(**(self.options or {})) if kind.Config is not None else self

    @property
    def varies(self) -> bool:
        return AVAILABILITY_MODELS[self.model].varies
