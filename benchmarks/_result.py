"""One machine-readable line per benchmark target, collected by ``run_all.py``."""

from __future__ import annotations

import json

PREFIX = "BENCH "


def report(name: str, measured: float, target: float, unit: str, higher_is_better: bool = False):
    """Print ``BENCH {...}``: the measured value, its target and whether it is met."""
    measured, target = float(measured), float(target)
    met = bool(measured >= target if higher_is_better else measured <= target)
    print(
        PREFIX
        + json.dumps(
            {
                "name": name,
                "measured": measured,
                "target": target,
                "unit": unit,
                "ratio": measured / target,
                "met": met,
                "higher_is_better": higher_is_better,
            }
        ),
        flush=True,
    )
