"""The scheduler of an OFDMA carrier as a strategy, and the registry of schedulers.

A carrier (:class:`~netfl.radio.ofdma.OfdmaCarrier`) *has* one :class:`Scheduler`.
Whenever something starts or ends it asks :meth:`Scheduler.allocate` for every active
flow's share of the resource blocks, given the :class:`Demands` of that instant;
between two such events the shares hold, so the carrier drains bits exactly and finds
the next completion by search. A scheduler whose decision changes with the channel
itself (proportional fair re-decides every fading block) says when it next decides
(:meth:`Scheduler.next_decision_s`); the carrier wakes then. Per-flow state of its own
(proportional fair's served-rate averages) lives on the carrier's grid, in rows it
declares (:attr:`Scheduler.flow_state`) that move with their flows.

:data:`SCHEDULERS` maps ``cell.link.scheduler`` names to classes;
:func:`register_scheduler` adds one (a plugin: ``netfl.register_scheduler``). The
scenario schema's choices are the registry's names; ``cell.link.scheduler_options``
is validated by the class's pydantic :attr:`Scheduler.Config`.

What the carrier uses of a scheduler is :data:`SCHEDULER_INTERFACE` (tested).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from channel_models.registry import register_class
from netfl.errors import RegistrationError

if TYPE_CHECKING:
    from netfl.radio.block_grid import BlockGrid

__all__ = [
    "SCHEDULERS",
    "SCHEDULER_INTERFACE",
    "Demands",
    "Scheduler",
    "SchedulerConfig",
    "allocation_problem",
    "build_scheduler",
    "register_scheduler",
]

#: what a carrier uses of its scheduler (class attributes and methods)
SCHEDULER_INTERFACE = (
    "name",
    "per_block",
    "whole_rb_groups",
    "flow_state",
    "attach",
    "flow_arriving",
    "allocate",
    "next_decision_s",
)


class SchedulerConfig(BaseModel):
    """A scheduler's options (``cell.link.scheduler_options``): none by default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True, slots=True)
class Demands:
    """What competes for a carrier's RBs at one instant.

    Attributes
    ----------
    capacity : float
        The carrier's RBs.
    demand_counts : Mapping[float, int]
        Background sessions grouped by demand [RBs] → how many.
    sessions : Mapping[int, float]
        Background sessions by arrival number → demand [RBs] (arrival order).
    caps, arrivals : ndarray, shape (n,)
        The active flows' caps [RBs] and arrival numbers, in the carrier's row order.
    any_capped : bool
        Some flow has a finite cap.
    rb_groups : ndarray or None
        RBs of each resource-block group where whole groups are handed out (only for a
        scheduler with ``whole_rb_groups``); None: fractional RBs.
    now_s : float
        The instant [s].

    Examples
    --------
    Round robin gives three uncapped flows and one session of 4 RBs equal shares of 25
    RBs (the session is under its share, so the flows split what it leaves):

    >>> import numpy as np
    >>> from netfl.radio.schedulers import Demands, RoundRobin
    >>> demands = Demands(25.0, {4.0: 1}, {1: 4.0}, np.full(3, np.inf),
    ...                   np.array([2.0, 3.0, 4.0]), False, None, 0.0)
    >>> shares, sessions = RoundRobin().allocate(demands)
    >>> shares.tolist(), sessions
    ([7.0, 7.0, 7.0], 4.0)
    """

    capacity: float
    demand_counts: Mapping[float, int]
    sessions: Mapping[int, float]
    caps: np.ndarray
    arrivals: np.ndarray
    any_capped: bool
    rb_groups: np.ndarray | None
    now_s: float

    @property
    def num_flows(self) -> int:
        return int(self.caps.size)


class Scheduler(ABC):
    """How a carrier shares its RBs between events (one instance per carrier).

    Subclass, set :attr:`name` and :attr:`description`, implement :meth:`allocate`
    and decorate with :func:`register_scheduler`.
    """

    #: the name ``cell.link.scheduler`` gives
    name: ClassVar[str]
    #: one line for ``netfl list``
    description: ClassVar[str] = ""
    #: its options (``cell.link.scheduler_options``)
    Config: ClassVar[type[SchedulerConfig]] = SchedulerConfig
    #: it re-decides at every fading block (the carrier then never rates several
    #: blocks as one column: :mod:`netfl.radio.columns`)
    per_block: ClassVar[bool] = False
    #: it hands a profile's downlink out in whole resource-block groups
    #: (``downlink_allocation: rbg_round_robin``, TS 38.214's RBG sizes)
    whole_rb_groups: ClassVar[bool] = False
    #: per-flow state it keeps on the carrier's grid: row name → value of a new flow
    flow_state: ClassVar[Mapping[str, float]] = {}
    #: ``cell.link`` keys that set one of its options (a spelling kept for scenarios):
    #: key → :attr:`Config` field
    link_keys: ClassVar[Mapping[str, str]] = {}

    def __init__(self, config: SchedulerConfig | None = None):
        self.config = config if config is not None else self.Config()
        self.grid: BlockGrid | None = None

    def attach(self, grid: BlockGrid) -> None:
        """The carrier's grid (its flows' rates per block, and this scheduler's rows)."""
        self.grid = grid

    def flow_arriving(self, now_s: float) -> None:
        """A flow is about to be added at ``now_s`` (its row not yet on the grid)."""
        return None

    @abstractmethod
    def allocate(self, demands: Demands) -> tuple[np.ndarray, float]:
        """The flows' shares [RBs], in row order, and the sessions' total [RBs]; the two
        together never exceed ``demands.capacity``."""

    def next_decision_s(self, now_s: float) -> float:
        """When the shares change next without a flow or session coming or going
        (absolute [s]; inf: never)."""
        return math.inf


#: the schedulers by name (``cell.link.scheduler``)
SCHEDULERS: dict[str, type[Scheduler]] = {}


def register_scheduler(cls: type[Scheduler]) -> type[Scheduler]:
    """Add a :class:`Scheduler` subclass to :data:`SCHEDULERS` under its ``name`` (a
    class decorator). Raises :class:`~netfl.errors.RegistrationError` for a name that is
    taken or malformed, or a class that is not a complete scheduler."""
    config = getattr(cls, "Config", None)
    if not (isinstance(config, type) and issubclass(config, SchedulerConfig)):
        raise RegistrationError(
            f"scheduler {vars(cls).get('name', cls)!r}: Config must subclass SchedulerConfig"
        )
    try:
        return register_class(SCHEDULERS, cls, Scheduler, "scheduler", SchedulerConfig)
    except ValueError as err:
        raise RegistrationError(str(err)) from None


def allocation_problem(shares: Any, sessions: float, caps: np.ndarray, capacity: float) -> str:
    """What is wrong with an answer of :meth:`Scheduler.allocate` ("" if nothing): a
    share per flow, finite, ≥ 0, within each flow's cap, and with the sessions' total
    within the carrier's ``capacity``."""
    n = caps.size
    shares = np.asarray(shares, dtype=float)
    tol = 1e-9 * capacity
    if shares.shape != (n,):
        return f"{n} shares expected, got shape {shares.shape}"
    if not (np.isfinite(shares).all() and math.isfinite(sessions)):
        return "a share is not finite"
    if (shares < 0).any() or sessions < 0:
        return "a negative share"
    if (shares > caps + tol).any():
        return "a flow's share above its cap (demands.caps)"
    if shares.sum() + sessions > capacity + tol:
        return f"{shares.sum() + sessions:g} RBs handed out of {capacity:g}"
    return ""


def build_scheduler(name: str, options: Mapping[str, Any] | None = None) -> Scheduler:
    """A new scheduler ``name`` with ``options`` (validated by its ``Config``: raises
    pydantic's ``ValidationError``; an unknown name raises ``KeyError`` naming the
    choices)."""
    if name not in SCHEDULERS:
        raise KeyError(f"unknown scheduler {name!r} (valid: {', '.join(SCHEDULERS)})")
    cls = SCHEDULERS[name]
    return cls(cls.Config(**dict(options or {})))
