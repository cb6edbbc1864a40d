"""Shared pieces of the scenario schema: the strict base model and name checks."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    field_validator,
)

from channel_models.registry import UnknownNameError, check_name

__all__ = ["STRICT_CONFIG", "beside", "no_bool_for_numbers", "resolve_plugin_spec"]


def _allows_bool(annotation: Any) -> bool:
    """Whether a field's type admits ``bool`` (directly or in a union)."""
    import typing

    if annotation is bool:
        return True
    return any(_allows_bool(a) for a in typing.get_args(annotation))


#: integers beyond this are no physical quantity (and overflow numpy's int64)
MAX_INT = 2**63 - 1


def _first_bool(value: Any, depth: int = 0) -> Any:
    """The first boolean inside a list or tuple (nested), or None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (list, tuple)) and depth < 4:
        for v in value:
            found = _first_bool(v, depth + 1)
            if found is not None:
                return found
    return None


def no_bool_for_numbers(cls: type[BaseModel], value: Any, info: Any) -> Any:
    """YAML reads ``yes``/``true`` as booleans and pydantic would take them as 1:
    a boolean is accepted only where the field is one (also inside lists: positions,
    shapes). An integer beyond ±2⁶³ is refused where it would go."""
    if info.field_name is None:
        return value
    field = cls.model_fields.get(info.field_name)
    if field is None or _allows_bool(field.annotation):
        return value
    found = _first_bool(value)
    if found is not None:
        if isinstance(value, bool):
            raise ValueError(f"expected {_type_name(field.annotation)}, got a boolean ({value})")
        raise ValueError(f"expected numbers, got a boolean ({found}) inside the list")
    if isinstance(value, int) and abs(value) > MAX_INT:
        raise ValueError(f"integer too large ({str(value)[:12]}…, {len(str(value))} digits)")
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

    def given(self, keys: set[str]) -> list[str]:
        """:func:`given` of this section."""
        return given(self, keys)


def given(model: BaseModel, keys: set[str]) -> list[str]:
    """Those of ``keys`` the input set on ``model`` to a value other than their default
    (a resolved scenario, which writes every default, gives none it did not set): the
    keys to refuse where another choice of the section makes them inapplicable."""
    fields = type(model).model_fields
    return sorted(
        k
        for k in set(keys) & model.model_fields_set
        if getattr(model, k) != fields[k].get_default(call_default_factory=True)
    )


def refuse(stray: list[str], why: str) -> None:
    """``ValueError`` "``stray`` does not apply …" when any key is stray."""
    if stray:
        verb = "does" if len(stray) == 1 else "do"
        raise ValueError(f"{', '.join(stray)} {verb} not apply {why}")


def _check_name(kind: str, name: str | None, valid: dict) -> str | None:
    try:
        return check_name(name, valid, kind)
    except UnknownNameError as err:  # pydantic reports ValueError with the key path
        raise ValueError(str(err)) from None


def check_options(config: type[BaseModel], options: Any, prefix: str, owner: str) -> None:
    """``options`` (a mapping, or None: none given) are valid for the pydantic model
    ``config`` — a registered model's ``Config`` — else a ``ValueError`` naming the first
    bad one: ``PREFIX.KEY: what is wrong (OWNER; its options: ...)``. A key the model
    has no field for is refused whatever its ``extra`` setting (a typo never passes)."""
    valid = ", ".join(config.model_fields) or "none"
    unknown = sorted(set(options or {}) - set(config.model_fields))
    if unknown:
        raise ValueError(f"{prefix}.{unknown[0]}: unknown option ({owner}; its options: {valid})")
    try:
        config(**(options or {}))
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        msg = "unknown option" if first["type"] == "extra_forbidden" else first["msg"]
        raise ValueError(
            f"{prefix}{'.' + where if where else ''}: {msg} ({owner}; its options: {valid})"
        ) from None


def check_registered_options(kind: Any, options: Any, owner: str) -> None:
    """``options`` of a registered class ``kind`` (its ``Config``, or None: it takes
    none) — :func:`check_options` under the key ``options``."""
    if kind.Config is None:
        if options:
            raise ValueError(f"options: {owner} takes none")
    else:
        check_options(kind.Config, options, "options", owner)


def beside(path: Any, base_dir: Any = None) -> str:
    """``path`` (``~`` expanded) made absolute against ``base_dir`` — the scenario file's
    folder; None: the working directory — so the resolved scenario names the same file
    from anywhere."""
    from pathlib import Path

    base = Path(base_dir) if base_dir is not None else Path.cwd()
    return str((base / Path(path).expanduser()).resolve())


def resolve_plugin_spec(spec: str, base_dir: Any = None) -> str:
    """A ``.py`` plugin as an absolute path (relative to ``base_dir``, the scenario
    file's folder); a module name as it is (:mod:`netfl.loading.plugins`)."""

    if spec.endswith(".py"):
        return beside(spec, base_dir)
    return spec
