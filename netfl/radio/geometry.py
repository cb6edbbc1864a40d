"""Cell geometry: a disc of radius R with the base station at the centre."""

from __future__ import annotations

import numpy as np

__all__ = ["drop_uniform_disc", "distance_m"]


def drop_uniform_disc(rng: np.random.Generator, num_points: int, radius_m: float) -> np.ndarray:
    """Drop points uniformly over the *area* of a disc centred at the origin.

    The radius is drawn as ``R * sqrt(U)`` so that P(r ≤ x) = x² / R², i.e.
    uniform density per unit area (not per unit radius).

    Returns
    -------
    ndarray, shape (num_points, 2)
        x, y positions [m].
    """
    r = radius_m * np.sqrt(rng.random(num_points))
    theta = rng.uniform(0.0, 2.0 * np.pi, num_points)
    return np.column_stack([r * np.cos(theta), r * np.sin(theta)])


def distance_m(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distance between positions of shape (..., 2) [m]."""
    return np.linalg.norm(np.asarray(a, dtype=float) - np.asarray(b, dtype=float), axis=-1)
