"""Shared pieces of the scenario schema: the strict base model and name checks."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    field_validator,
)

from channel_models.registry import UnknownNameError, check_name

__all__ = ["STRICT_CONFIG", "no_bool_for_numbers"]


def _allows_bool(annotation: Any) -> bool:
    """Whether a field's type admits ``bool`` (directly or in a union)."""
    import typing

    if annotation is bool:
        return True
    return any(_allows_bool(a) for a in typing.get_args(annotation))


def no_bool_for_numbers(cls: type[BaseModel], value: Any, info: Any) -> Any:
    """YAML reads ``yes``/``true`` as booleans and pydantic would take them as 1:
    a boolean is accepted only where the field is one."""
    if isinstance(value, bool) and info.field_name is not None:
        field = cls.model_fields.get(info.field_name)
        if field is not None and not _allows_bool(field.annotation):
            raise ValueError(f"expected {_type_name(field.annotation)}, got a boolean ({value})")
    return value


def _type_name(annotation: Any) -> str:
    import typing

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    base = args[0] if args else annotation
    return {int: "an integer", float: "a number", str: "a string"}.get(
        typing.get_origin(base) or base, "a value of another type"
    )


#: every user-facing model: unknown keys, NaN/inf and booleans-as-numbers are errors
STRICT_CONFIG = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class _Strict(BaseModel):
    model_config = STRICT_CONFIG

    _no_bool = field_validator("*", mode="before")(classmethod(no_bool_for_numbers))


def _check_name(kind: str, name: str | None, valid: dict) -> str | None:
    try:
        return check_name(name, valid, kind)
    except UnknownNameError as err:  # pydantic reports ValueError with the key path
        raise ValueError(str(err)) from None
