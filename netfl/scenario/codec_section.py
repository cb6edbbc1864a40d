"""``algorithm.uplink_codec`` / ``algorithm.downlink_codec``: the update codec of each
direction (:mod:`netfl.codecs`, docs/codecs.md)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from netfl.codecs import CODECS
from netfl.scenario.strict import _check_name, _Strict, check_registered_options

__all__ = ["CodecSection"]


class CodecSection(_Strict):
    """A codec of the registry and its options."""

    name: str = Field(
        "none",
        description="an update codec (`netfl list codecs`; a plugin's: "
        "netfl.register_codec); none: the values as they are, model.size_bits on air",
        json_schema_extra=lambda schema: schema.update(enum=list(CODECS)),
    )
    options: dict[str, Any] | None = Field(
        None, description="the codec's options (its Config: `netfl list codecs`)"
    )

    _n = field_validator("name")(lambda v: _check_name("update codec", v, CODECS))

    @model_validator(mode="after")
    def _options(self) -> CodecSection:
        check_registered_options(CODECS[self.name], self.options, f"codec {self.name!r}")
        return self

    def directions(self) -> frozenset[str]:
        """The directions its codec may encode."""
        return CODECS[self.name].directions
