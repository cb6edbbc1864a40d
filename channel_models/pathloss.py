"""Large-scale path loss laws (vectorised numpy).

All functions return path *loss* in dB (positive numbers; the channel power
gain is ``10 ** (-loss_db / 10)``). Distances are in metres, frequencies in Hz.

Models
------
- :class:`LogDistance` — β_dB = β0 − 10·κ·log10(d/d0) (FedDif eq. (8)); the
  loss is −β_dB. FedDif's reference values: β0 = −30 dB at d0 = 1 m, κ = 3.75.
- :class:`FreeSpace` — Friis: 20·log10(4π·d·f/c).
- the TR 38.901 laws (UMa, UMi street canyon, RMa) in :mod:`channel_models.tr38901`.

A law is a :class:`PathLoss` subclass with a ``name``; the registry of laws by name
(``cell.link.pathloss.model``, a channel profile's ``pathloss``) is
:mod:`channel_models.pathloss_laws`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "SPEED_OF_LIGHT_M_S",
    "distance_3d_m",
    "PathLoss",
    "LogDistance",
    "FreeSpace",
    "los_distance_m",
    "outdoor_distance_m",
]

SPEED_OF_LIGHT_M_S = 299_792_458.0


def distance_3d_m(distance_2d_m: ArrayLike, height_tx_m: float, height_rx_m: float) -> np.ndarray:
    """3D distance from the ground distance and antenna heights: sqrt(d² + Δh²) [m]."""
    d = np.asarray(distance_2d_m, dtype=float)
    return np.sqrt(d**2 + (height_tx_m - height_rx_m) ** 2)


def outdoor_distance_m(distance_2d_m: ArrayLike, inside_m: ArrayLike) -> np.ndarray:
    """d_2D-out = d_2D − d_2D-in of an indoor UE's link (TR 38.901 §7.4.3; at least 1 mm):
    the distance its LOS probability (Table 7.4.2-1) is evaluated at."""
    return np.maximum(np.asarray(distance_2d_m, dtype=float) - np.asarray(inside_m), 1e-3)


def los_distance_m(distance_2d_m: ArrayLike, inside_m: ArrayLike | None = None) -> np.ndarray:
    """The distance a link's LOS probability is taken at: d_2D-out
    (:func:`outdoor_distance_m`) where ``inside_m`` > 0 (an indoor UE's link), else the
    2D distance floored at the laws' 10 m."""
    d = np.maximum(np.asarray(distance_2d_m, dtype=float), 10.0)
    if inside_m is None:
        return d
    inside = np.asarray(inside_m, dtype=float)
    return np.where(inside > 0, outdoor_distance_m(distance_2d_m, inside), d)


class PathLoss(ABC):
    """A path loss law: ``loss_db(distance_2d_m, rng)`` for antennas at fixed heights.

    A subclass sets ``name`` and implements :meth:`mean_loss_db`; its constructor's
    keyword arguments are its parameters. Registered
    (:func:`channel_models.pathloss_laws.register_pathloss`), a scenario names it:

    >>> from channel_models.pathloss_laws import build_pathloss
    >>> law = build_pathloss({"model": "free_space"}, carrier_hz=2.4e9)
    >>> round(float(law.mean_loss_db(100.0)), 2)  # Friis at 100 m, 2.4 GHz
    80.05

    Parameters
    ----------
    height_tx_m, height_rx_m : float
        Antenna heights [m] (BS and UT for cellular links; both UT for D2D).
    shadowing_std_db : float
        Standard deviation of log-normal shadowing [dB]; 0 disables it.
    """

    #: its name in the registry (``pathloss: {model: NAME}``)
    name: ClassVar[str]
    #: what it is, for people (``netfl describe``, ``netfl list``)
    description: ClassVar[str] = ""
    #: its constructor takes the carrier frequency ``carrier_hz`` [Hz]
    uses_carrier_hz: ClassVar[bool] = False
    #: its shadowing is the standard's own (σ_SF per link state), switched by a
    #: ``shadowing: bool`` parameter rather than set by ``shadowing_std_db``
    standard_shadowing: ClassVar[bool] = False
    #: physical ranges of its own numeric parameters (besides
    #: :data:`channel_models.value_ranges.PATHLOSS_BOUNDS`)
    parameter_bounds: ClassVar[dict[str, tuple[float, float]]] = {}

    #: the TR 38.901 scenario whose departure-ray and antenna statistics its links follow
    #: (``"uma"``, ``"umi"``; None: a law of no such scenario)
    scenario: str | None = None
    #: the LOS-state and shadowing decorrelation distances [m] of spatially consistent
    #: fields along a moving UE's path (TR 38.901 Table 7.6.3.1-2; UMa's for laws of no
    #: scenario)
    decorrelation_m: tuple[float, float] = (50.0, 50.0)

    def __init__(
        self, height_tx_m: float = 0.0, height_rx_m: float = 0.0, shadowing_std_db: float = 0.0
    ):
        self.height_tx_m = float(height_tx_m)
        self.height_rx_m = float(height_rx_m)
        self.shadowing_std_db = float(shadowing_std_db)

    @abstractmethod
    def mean_loss_db(self, distance_2d_m: ArrayLike) -> np.ndarray:
        """Loss without shadowing [dB]."""

    @property
    def draws_los(self) -> bool:
        """Whether each link's LOS state is drawn (a U(0, 1) variate per link)."""
        return False

    @property
    def random(self) -> bool:
        """Whether :meth:`loss_db` draws from its ``rng`` (shadowing, LOS states)."""
        return self.draws_los or self.shadowing_std_db > 0

    def loss_db(
        self, distance_2d_m: ArrayLike, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """Loss with the LOS states and log-normal shadowing drawn from ``rng`` [dB].

        Per link: a U(0, 1) variate for the LOS state (if drawn), then a N(0, 1)
        variate for shadowing (if any); none without ``rng``. See :meth:`loss_db_given`.
        """
        d = np.asarray(distance_2d_m, dtype=float)
        los_u = shadow_z = None
        if rng is not None:
            if self.draws_los:
                los_u = rng.random(d.shape)
            if self.shadowing_std_db > 0:
                shadow_z = rng.normal(0.0, 1.0, d.shape)
        return self.loss_db_given(d, los_u, shadow_z)

    def loss_db_given(
        self,
        distance_2d_m: ArrayLike,
        los_uniform: np.ndarray | None = None,
        shadow_normal: np.ndarray | None = None,
        o2i: np.ndarray | None = None,
        inside_m: ArrayLike | None = None,
    ) -> np.ndarray:
        """Loss for given standard variates per link: ``los_uniform`` ~ U(0, 1) picks
        the LOS state, ``shadow_normal`` ~ N(0, 1) scales to the shadowing [dB]
        (``o2i`` and ``inside_m``, indoor UEs' links and their d_2D-in: only the TR 38.901
        laws treat them apart)."""
        loss = self.mean_loss_db(distance_2d_m)
        if shadow_normal is not None and self.shadowing_std_db > 0:
            loss = loss + shadow_normal * self.shadowing_std_db
        return loss

    def at_heights(self, height_tx_m: float, height_rx_m: float) -> PathLoss:
        """The same law for antennas at other heights [m] (a copy; per-device heights)."""
        import copy

        law = copy.copy(self)
        law.height_tx_m, law.height_rx_m = float(height_tx_m), float(height_rx_m)
        return law

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(h_tx={self.height_tx_m:g} m, h_rx={self.height_rx_m:g} m, "
            f"shadowing={self.shadowing_std_db:g} dB)"
        )


class LogDistance(PathLoss):
    """Log-distance law of FedDif eq. (8): β_dB = β0 − 10·κ·log10(d/d0), d the 3D distance.

    FedDif's reference implementation adds a 23.5 m height term to every
    distance: ``height_tx_m - height_rx_m = 23.5``.

    Examples
    --------
    >>> LogDistance().mean_loss_db([1.0, 10.0]).tolist()  # β0 = −30 dB, κ = 3.75
    [30.0, 67.5]
    """

    name = "log_distance"
    description = "log-distance β0 + 10κ·log10(d/d0)"

    def __init__(self, beta0_db: float = -30.0, kappa: float = 3.75, d0_m: float = 1.0, **kw):
        super().__init__(**kw)
        self.beta0_db, self.kappa, self.d0_m = float(beta0_db), float(kappa), float(d0_m)

    def mean_loss_db(self, distance_2d_m: ArrayLike) -> np.ndarray:
        d = distance_3d_m(distance_2d_m, self.height_tx_m, self.height_rx_m)
        d = np.maximum(d, self.d0_m)
        return -(self.beta0_db - 10.0 * self.kappa * np.log10(d / self.d0_m))


class FreeSpace(PathLoss):
    """Free-space (Friis) loss 20·log10(4π·d·f/c) at the 3D distance."""

    name = "free_space"
    description = "free space (Friis)"
    uses_carrier_hz = True

    def __init__(self, carrier_hz: float, **kw):
        super().__init__(**kw)
        self.carrier_hz = float(carrier_hz)

    def mean_loss_db(self, distance_2d_m: ArrayLike) -> np.ndarray:
        d = np.maximum(distance_3d_m(distance_2d_m, self.height_tx_m, self.height_rx_m), 1.0)
        return 20.0 * np.log10(4.0 * np.pi * d * self.carrier_hz / SPEED_OF_LIGHT_M_S)
