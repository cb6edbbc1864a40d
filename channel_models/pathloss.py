"""Large-scale path loss laws (vectorised numpy).

All functions return path *loss* in dB (positive numbers; the channel power
gain is ``10 ** (-loss_db / 10)``). Distances are in metres, frequencies in Hz.

Models
------
- :class:`LogDistance` — β_dB = β0 − 10·κ·log10(d/d0) (FedDif eq. (8)); the
  loss is −β_dB. FedDif's reference values: β0 = −30 dB at d0 = 1 m, κ = 3.75.
- :class:`FreeSpace` — Friis: 20·log10(4π·d·f/c).
- :class:`RMa` — TR 38.901 Table 7.4.1-1 rural macro (own LOS/NLOS laws).
- :class:`UMa`, :class:`UMi` — 3GPP TR 38.901 V17 Table 7.4.1-1 (urban macro,
  urban micro street canyon), LOS and NLOS, with the LOS probability of
  Table 7.4.2-1 and the shadow-fading standard deviations of Table 7.4.1-1.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "SPEED_OF_LIGHT_M_S",
    "distance_3d_m",
    "PathLoss",
    "LogDistance",
    "FreeSpace",
    "UMa",
    "UMi",
    "RMa",
    "PATHLOSS_MODELS",
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

    Parameters
    ----------
    height_tx_m, height_rx_m : float
        Antenna heights [m] (BS and UT for cellular links; both UT for D2D).
    shadowing_std_db : float
        Standard deviation of log-normal shadowing [dB]; 0 disables it.
    """

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
    """

    def __init__(self, beta0_db: float = -30.0, kappa: float = 3.75, d0_m: float = 1.0, **kw):
        super().__init__(**kw)
        self.beta0_db, self.kappa, self.d0_m = float(beta0_db), float(kappa), float(d0_m)

    def mean_loss_db(self, distance_2d_m: ArrayLike) -> np.ndarray:
        d = distance_3d_m(distance_2d_m, self.height_tx_m, self.height_rx_m)
        d = np.maximum(d, self.d0_m)
        return -(self.beta0_db - 10.0 * self.kappa * np.log10(d / self.d0_m))


class FreeSpace(PathLoss):
    """Free-space (Friis) loss 20·log10(4π·d·f/c) at the 3D distance."""

    def __init__(self, carrier_hz: float, **kw):
        super().__init__(**kw)
        self.carrier_hz = float(carrier_hz)

    def mean_loss_db(self, distance_2d_m: ArrayLike) -> np.ndarray:
        d = np.maximum(distance_3d_m(distance_2d_m, self.height_tx_m, self.height_rx_m), 1.0)
        return 20.0 * np.log10(4.0 * np.pi * d * self.carrier_hz / SPEED_OF_LIGHT_M_S)


class _TR38901(PathLoss):
    """Shared machinery of the TR 38.901 scenarios: LOS/NLOS selection and breakpoint."""

    los_shadow_db: float
    nlos_shadow_db: float
    #: σ_SF of an O2I (indoor UE's) link (Table 7.5-6's O2I column: 7 dB in UMa, UMi)
    o2i_shadow_db: float = 7.0
    #: the scenario's BS antenna height (Table 7.4.1-1 applicability range)
    default_height_tx_m: float

    def __init__(
        self,
        carrier_hz: float,
        los: bool | None = None,
        height_tx_m: float | None = None,
        height_rx_m: float = 1.5,
        shadowing: bool = False,
    ):
        if height_tx_m is None:
            height_tx_m = self.default_height_tx_m
        self.carrier_hz = float(carrier_hz)
        self.los = los
        self.shadowing = shadowing
        std = 0.0
        if shadowing:
            std = self.los_shadow_db if los else self.nlos_shadow_db
        super().__init__(height_tx_m, height_rx_m, std)

    @property
    def draws_los(self) -> bool:
        return self.los is None

    @property
    def fc_ghz(self) -> float:
        return self.carrier_hz / 1e9

    def breakpoint_m(self) -> float:
        """d'_BP = 4·h'_BS·h'_UT·f_c/c with effective heights h' = h − h_E, h_E = 1 m (Note 1)."""
        return (
            4.0
            * (self.height_tx_m - 1.0)
            * (self.height_rx_m - 1.0)
            * self.carrier_hz
            / SPEED_OF_LIGHT_M_S
        )

    @abstractmethod
    def los_loss_db(self, distance_2d_m: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def nlos_loss_db(self, distance_2d_m: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def los_probability(self, distance_2d_m: ArrayLike) -> np.ndarray: ...

    def _los_shadow_std_db(self, distance_2d_m: np.ndarray) -> np.ndarray | float:
        """σ_SF of LOS links at these distances [dB]."""
        return self.los_shadow_db

    def mean_loss_db(self, distance_2d_m: ArrayLike) -> np.ndarray:
        """LOS or NLOS loss; with ``los=None`` the LOS-probability-weighted loss in dB."""
        d = np.maximum(np.asarray(distance_2d_m, dtype=float), 10.0)
        if self.los is True:
            return self.los_loss_db(d)
        if self.los is False:
            return self.nlos_loss_db(d)
        p = self.los_probability(d)
        return p * self.los_loss_db(d) + (1.0 - p) * self.nlos_loss_db(d)

    def loss_db_given(
        self,
        distance_2d_m: ArrayLike,
        los_uniform: np.ndarray | None = None,
        shadow_normal: np.ndarray | None = None,
        o2i: np.ndarray | None = None,
        inside_m: ArrayLike | None = None,
    ) -> np.ndarray:
        """With ``los=None`` each link is LOS where ``los_uniform`` < the Table 7.4.2-1
        probability (required), taken at d_2D-out = d_2D − ``inside_m`` (an indoor UE's
        d_2D-in, Table 7.4.2-1's note; the path loss itself at the whole distance,
        (7.4-2)); shadowing with the state's σ_SF, or ``o2i_shadow_db`` on the links
        ``o2i`` marks (an indoor UE's)."""
        d = np.maximum(np.asarray(distance_2d_m, dtype=float), 10.0)
        if self.los is not None:
            return super().loss_db_given(d, None, shadow_normal)
        if los_uniform is None:
            raise ValueError("a TR 38.901 model with los=None draws LOS states: pass rng")
        is_los = los_uniform < self.los_probability(los_distance_m(distance_2d_m, inside_m))
        loss = np.where(is_los, self.los_loss_db(d), self.nlos_loss_db(d))
        if self.shadowing and shadow_normal is not None:
            std = np.where(is_los, self._los_shadow_std_db(d), self.nlos_shadow_db)
            if o2i is not None:
                std = np.where(o2i, self.o2i_shadow_db, std)
            loss = loss + shadow_normal * std
        return loss


@dataclass(frozen=True)
class _Coefficients:
    """One scenario's row of TR 38.901 Table 7.4.1-1 (and its Table 7.4.2-1 LOS decay).

    LOS:  PL1 = a + b·log10(d3D) + 20·log10(fc), d2D ≤ d'BP;
          PL2 = a + 40·log10(d3D) + 20·log10(fc) − c·log10(d'BP² + (hBS − hUT)²).
    NLOS: PL' = na + nb·log10(d3D) + nf·log10(fc) − nh·(hUT − 1.5); PL = max(PL_LOS, PL').
    P_LOS = 18/d2D + exp(−d2D/los_decay_m)·(1 − 18/d2D) beyond 18 m.
    """

    a: float
    b: float
    c: float
    na: float
    nb: float
    nf: float
    nh: float
    los_decay_m: float


class _TR38901Scenario(_TR38901):
    coefficients: _Coefficients

    def los_loss_db(self, distance_2d_m: np.ndarray) -> np.ndarray:
        k = self.coefficients
        d3 = distance_3d_m(distance_2d_m, self.height_tx_m, self.height_rx_m)
        d_bp = self.breakpoint_m()
        freq_term = 20.0 * np.log10(self.fc_ghz)
        pl1 = k.a + k.b * np.log10(d3) + freq_term
        pl2 = (
            k.a
            + 40.0 * np.log10(d3)
            + freq_term
            - k.c * np.log10(d_bp**2 + (self.height_tx_m - self.height_rx_m) ** 2)
        )
        return np.where(distance_2d_m <= d_bp, pl1, pl2)

    def nlos_loss_db(self, distance_2d_m: np.ndarray) -> np.ndarray:
        k = self.coefficients
        d3 = distance_3d_m(distance_2d_m, self.height_tx_m, self.height_rx_m)
        pl_nlos = (
            k.na
            + k.nb * np.log10(d3)
            + k.nf * np.log10(self.fc_ghz)
            - k.nh * (self.height_rx_m - 1.5)
        )
        return np.maximum(self.los_loss_db(distance_2d_m), pl_nlos)

    def los_probability(self, distance_2d_m: ArrayLike) -> np.ndarray:
        """Table 7.4.2-1 (UMa with h_UT ≤ 13 m, so C'(h_UT) = 0)."""
        d = np.asarray(distance_2d_m, dtype=float)
        with np.errstate(divide="ignore"):
            p = 18.0 / d + np.exp(-d / self.coefficients.los_decay_m) * (1.0 - 18.0 / d)
        return np.where(d <= 18.0, 1.0, p)


class UMa(_TR38901Scenario):
    """3GPP TR 38.901 Table 7.4.1-1, UMa (h_BS = 25 m, 1.5 m ≤ h_UT ≤ 22.5 m)."""

    def los_probability(self, distance_2d_m: ArrayLike) -> np.ndarray:
        """Table 7.4.2-1, UMa: the d2D term × (1 + C'(h_UT)·5/4·(d2D/100)³·exp(−d2D/150))
        beyond 18 m, C'(h_UT) = ((h_UT − 13)/10)^1.5 above 13 m (0 below)."""
        p = super().los_probability(distance_2d_m)
        if self.height_rx_m <= 13.0:
            return p
        d = np.asarray(distance_2d_m, dtype=float)
        c = ((self.height_rx_m - 13.0) / 10.0) ** 1.5
        return np.where(
            d <= 18.0, 1.0, p * (1.0 + c * 1.25 * (d / 100.0) ** 3 * np.exp(-d / 150.0))
        )

    coefficients = _Coefficients(
        a=28.0, b=22.0, c=9.0, na=13.54, nb=39.08, nf=20.0, nh=0.6, los_decay_m=63.0
    )
    los_shadow_db = 4.0
    nlos_shadow_db = 6.0
    default_height_tx_m = 25.0
    scenario = "uma"
    decorrelation_m = (50.0, 50.0)


class UMi(_TR38901Scenario):
    """3GPP TR 38.901 Table 7.4.1-1, UMi street canyon (h_BS = 10 m)."""

    coefficients = _Coefficients(
        a=32.4, b=21.0, c=9.5, na=22.4, nb=35.3, nf=21.3, nh=0.3, los_decay_m=36.0
    )
    los_shadow_db = 4.0
    nlos_shadow_db = 7.82
    default_height_tx_m = 10.0
    scenario = "umi"
    decorrelation_m = (12.0, 13.0)


class RMa(_TR38901):
    """3GPP TR 38.901 Table 7.4.1-1, rural macro (h_BS = 35 m, h_UT = 1.5 m).

    Average building height ``building_height_m`` h = 5 m and street width
    ``street_width_m`` W = 20 m (the table's defaults). LOS:
    PL1 = 20·log10(40π·d3D·fc/3) + min(0.03·h^1.72, 10)·log10(d3D)
    − min(0.044·h^1.72, 14.77) + 0.002·log10(h)·d3D up to the breakpoint
    d_BP = 2π·h_BS·h_UT·fc/c, PL2 = PL1(d_BP) + 40·log10(d3D/d_BP) beyond
    (σ_SF 4 dB / 6 dB). NLOS: max(PL_LOS, PL'_NLOS) with the table's
    PL'_NLOS (σ_SF 8 dB). LOS probability (Table 7.4.2-1): 1 up to 10 m,
    exp(−(d2D − 10)/1000) beyond.
    """

    los_shadow_db = 4.0  # PL1; PL2 has 6 dB (see _los_shadow_db)
    nlos_shadow_db = 8.0
    default_height_tx_m = 35.0

    def __init__(
        self,
        carrier_hz: float,
        los: bool | None = None,
        height_tx_m: float | None = None,
        height_rx_m: float = 1.5,
        shadowing: bool = False,
        building_height_m: float = 5.0,
        street_width_m: float = 20.0,
    ):
        super().__init__(carrier_hz, los, height_tx_m, height_rx_m, shadowing)
        self.building_height_m = float(building_height_m)
        self.street_width_m = float(street_width_m)

    def breakpoint_m(self) -> float:
        """d_BP = 2π·h_BS·h_UT·fc/c (Table 7.4.1-1 note 5; actual antenna heights)."""
        return (
            2.0 * np.pi * self.height_tx_m * self.height_rx_m * self.carrier_hz / SPEED_OF_LIGHT_M_S
        )

    def _pl1(self, d3: np.ndarray) -> np.ndarray:
        h = self.building_height_m
        return (
            20.0 * np.log10(40.0 * np.pi * d3 * self.fc_ghz / 3.0)
            + min(0.03 * h**1.72, 10.0) * np.log10(d3)
            - min(0.044 * h**1.72, 14.77)
            + 0.002 * np.log10(h) * d3
        )

    def los_loss_db(self, distance_2d_m: np.ndarray) -> np.ndarray:
        d3 = distance_3d_m(distance_2d_m, self.height_tx_m, self.height_rx_m)
        d_bp = self.breakpoint_m()
        d3_bp = float(distance_3d_m(d_bp, self.height_tx_m, self.height_rx_m))
        pl2 = self._pl1(np.asarray(d3_bp)) + 40.0 * np.log10(d3 / d3_bp)
        return np.where(distance_2d_m <= d_bp, self._pl1(d3), pl2)

    def nlos_loss_db(self, distance_2d_m: np.ndarray) -> np.ndarray:
        d3 = distance_3d_m(distance_2d_m, self.height_tx_m, self.height_rx_m)
        h, w = self.building_height_m, self.street_width_m
        h_bs, h_ut = self.height_tx_m, self.height_rx_m
        pl = (
            161.04
            - 7.1 * np.log10(w)
            + 7.5 * np.log10(h)
            - (24.37 - 3.7 * (h / h_bs) ** 2) * np.log10(h_bs)
            + (43.42 - 3.1 * np.log10(h_bs)) * (np.log10(d3) - 3.0)
            + 20.0 * np.log10(self.fc_ghz)
            - (3.2 * np.log10(11.75 * h_ut) ** 2 - 4.97)
        )
        return np.maximum(self.los_loss_db(distance_2d_m), pl)

    def los_probability(self, distance_2d_m: ArrayLike) -> np.ndarray:
        d = np.asarray(distance_2d_m, dtype=float)
        return np.where(d <= 10.0, 1.0, np.exp(-(d - 10.0) / 1000.0))

    def _los_shadow_std_db(self, distance_2d_m: np.ndarray) -> np.ndarray:
        return np.where(distance_2d_m <= self.breakpoint_m(), 4.0, 6.0)


PATHLOSS_MODELS: dict[str, type[PathLoss]] = {
    "log_distance": LogDistance,
    "free_space": FreeSpace,
    "uma": UMa,
    "umi": UMi,
    "rma": RMa,
}
