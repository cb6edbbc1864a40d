"""Non-finite updates: a global model is never aggregated from NaN/Inf values."""

from __future__ import annotations

import logging

__all__ = ["keep_finite"]

log = logging.getLogger(__name__)


def keep_finite(
    items: list, names: list[str], policy: str, round_: int, source: str, faults: list[str]
) -> list:
    """The items (device results, states, scores) whose tensors are all finite.

    Each dropped one is appended to ``faults`` (the runner writes their count as
    ``nonfinite_updates``); with ``policy`` (``training.on_nonfinite``) ``abort`` the
    first one raises :class:`~netfl.errors.NumericalFault`.
    """
    from netfl.errors import NumericalFault
    from netfl.learning.params import all_finite

    kept = []
    for item, name in zip(items, names, strict=True):
        if item is None or all_finite(item):
            kept.append(item)
            continue
        if policy == "abort":
            raise NumericalFault(
                f"{source}: training.on_nonfinite: round {round_}: "
                f"{name}'s update holds NaN/Inf values (lower training.lr, or set "
                "on_nonfinite: drop to leave such updates out)"
            )
        log.warning("round %d: %s's update holds NaN/Inf values; dropped", round_, name)
        faults.append(name)
    return kept
