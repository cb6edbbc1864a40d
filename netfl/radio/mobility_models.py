"""The registry of mobility models: how a device moves (``devices.mobility.model``).

A model turns a device's settings into a trajectory — an object with
``positions(t_s) → (n, 2)`` [m] and ``speed_mps(t_s)`` — known for all time when it is
drawn (docs/architecture.md: a position is a function of time), so moving costs no
event. The built-ins wrap :mod:`channel_models.mobility`:

- ``static`` — no movement;
- ``constant_velocity`` — a straight line at ``speed_kmh`` along ``heading_deg``;
- ``random_waypoint`` — legs to uniform points of the deployment's area, each at a speed
  uniform in ``[v_min_kmh, v_max_kmh]``, a pause of ``pause_s`` at every waypoint;
- ``gauss_markov`` — Camp, Boleng & Davies (2002): every ``step_s`` speed and heading
  follow s_n = α·s_{n−1} + (1 − α)·s̄ + √(1 − α²)·σ·w.

:func:`register_mobility` adds a model (a plugin: ``netfl.register_mobility``); its
options are ``devices.mobility.options``, validated by its pydantic ``Config``. The
built-ins read the section's own keys (:attr:`MobilityModel.keys`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

import numpy as np
from pydantic import BaseModel

from channel_models import mobility as mob
from channel_models.registry import register_class
from netfl.errors import RegistrationError

__all__ = ["MOBILITY_MODELS", "MobilityModel", "Trajectory", "register_mobility"]

#: a region sampler: ``(n, rng) → (n, 2)`` uniform points of the deployment's area [m]
RegionSampler = Callable[[int, np.random.Generator], np.ndarray]


class Trajectory(Protocol):
    """A device's path: where it is at any time, and how fast it goes."""

    def positions(self, t_s: np.ndarray) -> np.ndarray:
        """Positions ``(n, 2)`` [m] at the times ``t_s`` [s] (non-decreasing)."""
        ...

    def speed_mps(self, t_s: float = 0.0) -> float:
        """Speed [m/s] at ``t_s``."""
        ...


class MobilityModel(ABC):
    """A way of moving: :meth:`trajectory` from a device's start and its settings.

    ``settings`` is the ``devices.mobility`` section for a built-in (its :attr:`keys`)
    and the validated :attr:`Config` (``devices.mobility.options``) for a plugin's.

    >>> import math
    >>> from types import SimpleNamespace
    >>> walk = MOBILITY_MODELS["constant_velocity"].trajectory(
    ...     (0.0, 0.0), math.pi / 2, SimpleNamespace(speed_kmh=36.0), None, None)
    >>> walk.positions([0.0, 2.0]).round(6).tolist()  # 10 m/s due north
    [[0.0, 0.0], [0.0, 20.0]]
    """

    #: ``devices.mobility.model``
    name: ClassVar[str]
    description: ClassVar[str] = ""
    #: the section's keys it reads (built-ins; a plugin's reads ``options``)
    keys: ClassVar[frozenset[str]] = frozenset()
    #: its options (``devices.mobility.options``): a pydantic model, or None
    Config: ClassVar[type[BaseModel] | None] = None
    #: whether a device of this model moves (``static``: no trajectory at all)
    moves: ClassVar[bool] = True

    @classmethod
    @abstractmethod
    def trajectory(
        cls,
        start_m: tuple[float, float],
        heading_rad: float,
        settings: Any,
        rng: np.random.Generator,
        region: RegionSampler,
    ) -> Trajectory:
        """The device's path from ``start_m`` [m] (``heading_rad``: the section's
        ``heading_deg``, else drawn uniformly; ``rng``: the device's own ``mobility``
        stream; ``region``: uniform points of the deployment's area)."""


#: the mobility models by name
MOBILITY_MODELS: dict[str, type[MobilityModel]] = {}


def register_mobility(cls: type[MobilityModel]) -> type[MobilityModel]:
    """Add a :class:`MobilityModel` under its ``name`` (a class decorator);
    :class:`~netfl.errors.RegistrationError` for a malformed or taken name, an
    incomplete model, or a ``Config`` that is no pydantic model."""
    try:
        return register_class(MOBILITY_MODELS, cls, MobilityModel, "mobility model", BaseModel)
    except ValueError as err:
        raise RegistrationError(str(err)) from None


@register_mobility
class Static(MobilityModel):
    name = "static"
    description = "does not move"
    moves = False

    @classmethod
    def trajectory(cls, start_m, heading_rad, settings, rng, region) -> Trajectory:
        return mob.Static(start_m)


@register_mobility
class ConstantVelocity(MobilityModel):
    name = "constant_velocity"
    description = "a straight line at speed_kmh along heading_deg"
    keys = frozenset({"speed_kmh", "heading_deg", "record_every_s"})

    @classmethod
    def trajectory(cls, start_m, heading_rad, settings, rng, region) -> Trajectory:
        v = settings.speed_kmh / 3.6
        return mob.ConstantVelocity(start_m, (v * math.cos(heading_rad), v * math.sin(heading_rad)))


@register_mobility
class RandomWaypoint(MobilityModel):
    name = "random_waypoint"
    description = "legs to uniform waypoints at uniform speeds, with pauses"
    keys = frozenset({"v_min_kmh", "v_max_kmh", "pause_s", "record_every_s"})

    @classmethod
    def trajectory(cls, start_m, heading_rad, settings, rng, region) -> Trajectory:
        return mob.RandomWaypoint(
            start_m,
            region,
            settings.v_min_kmh / 3.6,
            settings.v_max_kmh / 3.6,
            settings.pause_s,
            rng,
        )


@register_mobility
class GaussMarkov(MobilityModel):
    name = "gauss_markov"
    description = "Gauss-Markov speed and heading (Camp, Boleng, Davies 2002)"
    keys = frozenset(
        {
            "speed_kmh",
            "heading_deg",
            "alpha",
            "step_s",
            "speed_std_kmh",
            "heading_std_deg",
            "record_every_s",
        }
    )

    @classmethod
    def trajectory(cls, start_m, heading_rad, settings, rng, region) -> Trajectory:
        s = settings
        return mob.GaussMarkov(
            start_m,
            s.speed_kmh / 3.6,
            math.degrees(heading_rad),
            s.alpha,
            rng,
            s.step_s,
            s.speed_std_kmh / 3.6,
            s.heading_std_deg,
        )
