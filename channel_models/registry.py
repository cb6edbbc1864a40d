"""One look-up for every name → object table (profiles, models, algorithms, ...).

``lookup(table, name, "channel profile")`` returns ``table[name]`` or raises
:class:`UnknownNameError`, whose message lists the valid names:
``unknown channel profile 'x' (valid: feddif, nr_fr1_uma)``. :func:`register_class`
adds a class to a registry of classes under its own ``name`` (path-loss and fading laws
here; netfl's schedulers, mobility and availability models).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any, TypeVar

__all__ = ["UnknownNameError", "lookup", "check_name", "register_class"]

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A name not in its table; ``str()`` is the one-line message (no KeyError quotes)."""

    def __init__(self, kind: str, name: object, valid: Iterable[str]):
        self.kind, self.name, self.valid = kind, name, sorted(valid)
        self.message = f"unknown {kind} {name!r} (valid: {', '.join(self.valid)})"
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


def lookup(table: Mapping[str, T], name: str, kind: str) -> T:
    """``table[name]``, or :class:`UnknownNameError` naming ``kind`` and the valid names."""
    try:
        return table[name]
    except (KeyError, TypeError):
        raise UnknownNameError(kind, name, table) from None


def check_name(name: str | None, table: Mapping[str, object], kind: str) -> str | None:
    """``name`` if it is in ``table`` (or None); else :class:`UnknownNameError`."""
    if name is not None:
        lookup(table, name, kind)
    return name


_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def register_class(
    table: MutableMapping[str, Any],
    cls: Any,
    base: type,
    kind: str,
    config_base: type | None = None,
) -> Any:
    """Add ``cls``, a concrete subclass of ``base`` with a ``name`` of its own, to
    ``table``; returns it (a class decorator's body). ``ValueError`` says what is wrong:
    not a subclass, a malformed or taken name, an abstract method left, or (with
    ``config_base``) a ``Config`` that is neither None nor a subclass of it."""
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ValueError(f"a {kind} must subclass {base.__module__}.{base.__name__} (got {cls!r})")
    name = vars(cls).get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"a {kind} needs a name of lower-case letters, digits and _ (got {name!r})"
        )
    if name in table:
        raise ValueError(f"{kind} {name!r} registered twice")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise ValueError(f"{kind} {name!r} does not implement {missing}")
    if config_base is not None:
        config = getattr(cls, "Config", None)
        if config is not None and not (
            isinstance(config, type) and issubclass(config, config_base)
        ):
            raise ValueError(f"{kind} {name!r}: Config must subclass {config_base.__name__}")
    table[name] = cls
    return cls
