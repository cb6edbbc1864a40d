"""The path-loss laws of 3GPP TR 38.901 §7.4: UMa, UMi street canyon and RMa.

LOS and NLOS losses of Table 7.4.1-1, the LOS probability of Table 7.4.2-1, shadow
fading σ_SF per link state (Table 7.4.1-1; O2I links: Table 7.4.3-2), and the
decorrelation distances of the LOS state and shadowing (Table 7.6.3.1-2). The
tables' coefficients are data, with their source: ``channel_models/data/tr38901.json``
(:func:`tr38901_table`); RMa's closed-form laws keep their constants in the formula.
Distances in metres, frequencies in Hz, losses in dB.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from channel_models.pathloss import (
    SPEED_OF_LIGHT_M_S,
    PathLoss,
    distance_3d_m,
    los_distance_m,
)

__all__ = ["RMa", "UMa", "UMi", "tr38901_table"]


@cache
def tr38901_table() -> dict[str, Any]:
    """The TR 38.901 coefficients (``data/tr38901.json``: ``source``, ``tables`` — what
    each entry holds and its table number — and ``scenarios``)."""
    text = resources.files("channel_models").joinpath("data/tr38901.json").read_text()
    return json.loads(text)


def _scenario(name: str) -> dict[str, Any]:
    return tr38901_table()["scenarios"][name]


class _TR38901(PathLoss):
    """Shared machinery of the TR 38.901 scenarios: LOS/NLOS selection and breakpoint."""

    uses_carrier_hz = True
    standard_shadowing = True

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

    @classmethod
    def of(cls, scenario: str) -> _Coefficients:
        """The scenario's row of the data file."""
        row = _scenario(scenario)
        return cls(**row["pathloss"], los_decay_m=row["los_probability"]["los_decay_m"])


def _shadows(scenario: str) -> tuple[float, float, float]:
    """σ_SF of LOS, NLOS and O2I links [dB]."""
    row = _scenario(scenario)
    return row["shadow_db"]["los"], row["shadow_db"]["nlos"], row["o2i_shadow_db"]


def _decorrelation(scenario: str) -> tuple[float, float]:
    """The LOS state's and shadowing's decorrelation distances [m]."""
    d = _scenario(scenario)["decorrelation_m"]
    return d["los_state"], d["shadowing"]


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

    name = scenario = "uma"
    description = "3GPP TR 38.901 UMa (LOS/NLOS per link)"
    coefficients = _Coefficients.of("uma")
    los_shadow_db, nlos_shadow_db, o2i_shadow_db = _shadows("uma")
    default_height_tx_m = _scenario("uma")["default_height_tx_m"]
    decorrelation_m = _decorrelation("uma")


class UMi(_TR38901Scenario):
    """3GPP TR 38.901 Table 7.4.1-1, UMi street canyon (h_BS = 10 m)."""

    name = scenario = "umi"
    description = "3GPP TR 38.901 UMi street canyon (LOS/NLOS per link)"
    coefficients = _Coefficients.of("umi")
    los_shadow_db, nlos_shadow_db, o2i_shadow_db = _shadows("umi")
    default_height_tx_m = _scenario("umi")["default_height_tx_m"]
    decorrelation_m = _decorrelation("umi")


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

    name = "rma"
    description = "3GPP TR 38.901 RMa (LOS/NLOS per link)"
    # (LOS: PL1's σ_SF; PL2's in _los_shadow_std_db)
    los_shadow_db, nlos_shadow_db, o2i_shadow_db = _shadows("rma")
    default_height_tx_m = _scenario("rma")["default_height_tx_m"]
    decorrelation_m = _decorrelation("rma")

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
        p = _scenario("rma")["los_probability"]
        free, decay = p["los_free_m"], p["los_decay_m"]
        return np.where(d <= free, 1.0, np.exp(-(d - free) / decay))

    def _los_shadow_std_db(self, distance_2d_m: np.ndarray) -> np.ndarray:
        beyond = _scenario("rma")["shadow_db"]["los_beyond_breakpoint"]
        return np.where(distance_2d_m <= self.breakpoint_m(), self.los_shadow_db, beyond)
