"""One look-up for every name → object table (profiles, models, algorithms, ...).

``lookup(table, name, "channel profile")`` returns ``table[name]`` or raises
:class:`UnknownNameError`, whose message lists the valid names:
``unknown channel profile 'x' (valid: feddif, nr_fr1_uma)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

__all__ = ["UnknownNameError", "lookup", "check_name"]

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
