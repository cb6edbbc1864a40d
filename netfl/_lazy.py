"""Lazy re-exports (PEP 562): a package names its public objects without importing
the modules that hold them until one is used, so ``import netfl`` (and every light
verb of the command line) costs no torch import."""

from __future__ import annotations

import importlib
from typing import Any


def lazy_exports(package: str, table: dict[str, str]):
    """``__getattr__`` and ``__dir__`` for ``package`` re-exporting ``name`` from the
    module ``table[name]``; an unknown name is the usual ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals_ = importlib.import_module(package).__dict__
        globals_[name] = value  # later look-ups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(importlib.import_module(package).__dict__) | set(table))

    return __getattr__, __dir__
