"""Small-scale block fading: power gains |h|² constant over a coherence time.

Distribution objects in the Ciw style: ``sample(rng, size)``, analytic
``mean`` and ``variance``, a readable ``repr``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from channel_models.registry import register_class

__all__ = [
    "FADING_MODELS",
    "BlockFading",
    "NoFading",
    "RayleighBlockFading",
    "RicianBlockFading",
    "register_fading",
]


#: the shortest fading block (enforced wherever a fading law is built)
MIN_COHERENCE_TIME_S = 1e-4


class BlockFading(ABC):
    """Power gains |h|² i.i.d. across blocks of ``coherence_time_s`` seconds.

    >>> import numpy as np
    >>> law = RayleighBlockFading(coherence_time_s=1e-3)
    >>> law.mean, law.variance
    (1.0, 1.0)
    >>> float(np.round(law.ppf(np.array([0.5]))[0], 4))  # the median of Exp(1): ln 2
    0.6931

    Parameters
    ----------
    coherence_time_s : float
        Block length [s]; gains are constant within a block.
    """

    #: its name in the registry (``fading: {model: NAME}``)
    name: ClassVar[str]
    #: what it is, for people
    description: ClassVar[str] = ""

    def __init__(self, coherence_time_s: float = 1e-3):
        if not coherence_time_s >= MIN_COHERENCE_TIME_S:  # (NaN too)
            raise ValueError(
                f"coherence_time_s: {coherence_time_s!r} s is shorter than "
                f"{MIN_COHERENCE_TIME_S:g} s (a fading block costs array work; 500 km/h at "
                "6 GHz gives 0.15 ms)"
            )
        self.coherence_time_s = float(coherence_time_s)

    @abstractmethod
    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        """Draw power gains |h|² [dimensionless], shape ``size``."""

    @property
    @abstractmethod
    def mean(self) -> float: ...

    @abstractmethod
    def peak_gain(self, exceed_probability: float = 1e-9) -> float:
        """The gain exceeded with ``exceed_probability`` in a block (complementary quantile)."""

    @property
    @abstractmethod
    def variance(self) -> float: ...

    @abstractmethod
    def ppf(self, u: np.ndarray) -> np.ndarray:
        """Quantile function of |h|²: the gain x with P(|h|² ≤ x) = u."""

    def expectation(self, f, num_points: int = 64) -> np.ndarray:
        """E[f(|h|²)] by the midpoint rule in probability: mean of f at the
        quantiles (j + ½)/n. Deterministic and exact in the limit; unlike
        Gauss–Laguerre it stays accurate for step functions (CQI tables).
        ``f`` maps an array of gains (last axis) to values; the result drops that axis.
        """
        u = (np.arange(num_points) + 0.5) / num_points
        return np.mean(f(self.ppf(u)), axis=-1)


class NoFading(BlockFading):
    """|h|² = 1 always."""

    name = "none"
    description = "no fading: |h|² = 1"

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        return np.ones(size)

    mean = 1.0
    variance = 0.0

    def peak_gain(self, exceed_probability: float = 1e-9) -> float:
        return 1.0

    def ppf(self, u: np.ndarray) -> np.ndarray:
        return np.ones_like(np.asarray(u, dtype=float))

    def __repr__(self) -> str:
        return "NoFading()"


class RayleighBlockFading(BlockFading):
    """h ~ CN(0, 1) (FedDif eq. (7)), so |h|² ~ Exp(1): mean 1, variance 1."""

    name = "rayleigh"
    description = "Rayleigh block fading, |h|² ~ Exp(1) (FedDif eq. (7))"

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        return rng.exponential(1.0, size)

    mean = 1.0
    variance = 1.0

    def peak_gain(self, exceed_probability: float = 1e-9) -> float:
        """P(|h|² > x) = exp(−x) ⇒ x = −ln(p)."""
        return float(-np.log(exceed_probability))

    def ppf(self, u: np.ndarray) -> np.ndarray:
        """Exp(1): x = −ln(1 − u)."""
        return -np.log1p(-np.asarray(u, dtype=float))

    def __repr__(self) -> str:
        return f"RayleighBlockFading(coherence_time={self.coherence_time_s:g} s)"


class RicianBlockFading(BlockFading):
    """h = sqrt(K/(K+1)) + sqrt(1/(K+1))·CN(0, 1): unit mean power, Rician factor K.

    |h|² is a scaled non-central χ² with 2 degrees of freedom: mean 1,
    variance (2K + 1) / (K + 1)².
    """

    name = "rician"
    description = "Rician block fading of factor K (unit mean power)"

    def __init__(self, k_factor: float, coherence_time_s: float = 1e-3):
        super().__init__(coherence_time_s)
        if k_factor < 0:
            raise ValueError("k_factor must be non-negative")
        self.k_factor = float(k_factor)

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        k = self.k_factor
        los = np.sqrt(k / (k + 1.0))
        sigma = np.sqrt(1.0 / (2.0 * (k + 1.0)))
        re = los + sigma * rng.standard_normal(size)
        im = sigma * rng.standard_normal(size)
        return re**2 + im**2

    @property
    def mean(self) -> float:
        return 1.0

    @property
    def variance(self) -> float:
        k = self.k_factor
        return (2.0 * k + 1.0) / (k + 1.0) ** 2

    def peak_gain(self, exceed_probability: float = 1e-9) -> float:
        """2(K+1)·|h|² is non-central χ² with 2 degrees of freedom and non-centrality 2K."""
        from scipy.stats import ncx2

        k = self.k_factor
        if k == 0:
            return float(-np.log(exceed_probability))
        return float(ncx2.isf(exceed_probability, 2, 2 * k) / (2 * (k + 1)))

    def ppf(self, u: np.ndarray) -> np.ndarray:
        from scipy.stats import ncx2

        k = self.k_factor
        u = np.asarray(u, dtype=float)
        if k == 0:
            return -np.log1p(-u)
        return ncx2.ppf(u, 2, 2 * k) / (2 * (k + 1))

    def __repr__(self) -> str:
        return f"RicianBlockFading(K={self.k_factor:g}, coherence_time={self.coherence_time_s:g} s)"


#: the fading laws by name (a channel profile's ``fading.model``, ``cell.link.fading``)
FADING_MODELS: dict[str, type[BlockFading]] = {
    cls.name: cls for cls in (NoFading, RayleighBlockFading, RicianBlockFading)
}


def register_fading(cls: type[BlockFading]) -> type[BlockFading]:
    """Add a :class:`BlockFading` subclass under its ``name`` (a class decorator): its
    constructor's keyword arguments are its parameters (``coherence_time_s`` among
    them); ``ValueError`` for a malformed or taken name or an incomplete law."""
    return register_class(FADING_MODELS, cls, BlockFading, "fading law")
