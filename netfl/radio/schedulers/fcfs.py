"""First come, first served: in arrival order each session takes up to its demand and
each flow up to its cap while RBs remain; later arrivals wait
(:func:`~netfl.radio.schedulers.shares.first_come_first_served`)."""

from __future__ import annotations

import numpy as np

from netfl.radio.schedulers.base import Demands, Scheduler, register_scheduler
from netfl.radio.schedulers.shares import first_come_first_served

__all__ = ["FirstComeFirstServed"]


@register_scheduler
class FirstComeFirstServed(Scheduler):
    """In arrival order, each up to its demand or cap."""

    name = "fcfs"
    description = "first come, first served up to each demand"

    def allocate(self, demands: Demands) -> tuple[np.ndarray, float]:
        return first_come_first_served(
            demands.capacity, demands.sessions, demands.caps, demands.arrivals
        )
