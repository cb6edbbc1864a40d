"""RB schedulers of the OFDMA carriers: strategies in a registry.

- ``round_robin`` (:mod:`~netfl.radio.schedulers.round_robin`) — max-min fair: every
  session and flow gets an equal share, a session never more than its demand, a flow
  never more than its cap; what one cannot use goes to the others.
- ``fcfs`` (:mod:`~netfl.radio.schedulers.fcfs`) — in arrival order each takes up to
  its demand (flows: their cap) while capacity remains; later arrivals wait.
- ``proportional_fair`` (:mod:`~netfl.radio.schedulers.proportional_fair`) — sessions
  and the FL budget as round robin, then the budget handed out per fading block by r/R̄.

A new scheduler is one module: a :class:`Scheduler` subclass decorated with
:func:`register_scheduler` (a plugin calls ``netfl.register_scheduler``). The sharing
rules they build on are in :mod:`~netfl.radio.schedulers.shares`.
"""

# (built-ins register in this order: round robin first, the schema's default)
from netfl.radio.schedulers.round_robin import RoundRobin  # isort: split

from netfl.radio.schedulers.base import (
    SCHEDULER_INTERFACE,
    SCHEDULERS,
    Demands,
    Scheduler,
    SchedulerConfig,
    allocation_problem,
    build_scheduler,
    register_scheduler,
)
from netfl.radio.schedulers.fcfs import FirstComeFirstServed
from netfl.radio.schedulers.proportional_fair import ProportionalFair
from netfl.radio.schedulers.shares import (
    equal_share,
    first_come_first_served,
    max_min_fair,
    uncapped_equal_share,
)

__all__ = [
    "SCHEDULERS",
    "SCHEDULER_INTERFACE",
    "Demands",
    "FirstComeFirstServed",
    "ProportionalFair",
    "RoundRobin",
    "Scheduler",
    "SchedulerConfig",
    "allocation_problem",
    "build_scheduler",
    "equal_share",
    "first_come_first_served",
    "max_min_fair",
    "register_scheduler",
    "uncapped_equal_share",
]
