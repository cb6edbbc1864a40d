"""Cell geometry: device layouts around the base station at the origin.

Random drops (uniform over a disc or an annulus, by area) and deterministic
layouts (a line, a ring, a square grid). Every function returns an ``(N, 2)``
array of ``x, y`` positions [m].
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "drop_uniform_disc",
    "drop_uniform_annulus",
    "line_positions",
    "ring_positions",
    "grid_positions",
    "distance_m",
]


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


def drop_uniform_annulus(
    rng: np.random.Generator, num_points: int, inner_m: float, outer_m: float
) -> np.ndarray:
    """Drop points uniformly over the area of the annulus ``inner_m ≤ r ≤ outer_m``:
    ``r = sqrt(r_i² + U·(r_o² − r_i²))``, so P(r ≤ x) = (x² − r_i²)/(r_o² − r_i²).
    With ``inner_m = 0`` it is :func:`drop_uniform_disc`'s law, from the same variates."""
    u = rng.random(num_points)
    r = np.sqrt(inner_m**2 + u * (outer_m**2 - inner_m**2))
    theta = rng.uniform(0.0, 2.0 * np.pi, num_points)
    return np.column_stack([r * np.cos(theta), r * np.sin(theta)])


def line_positions(num_points: int, start_m: tuple[float, float], end_m: tuple[float, float]):
    """``num_points`` evenly spaced from ``start_m`` to ``end_m`` (both ends included;
    one point sits at the start)."""
    t = np.linspace(0.0, 1.0, num_points) if num_points > 1 else np.zeros(1)
    a, b = np.asarray(start_m, dtype=float), np.asarray(end_m, dtype=float)
    return a[None, :] + t[:, None] * (b - a)[None, :]


def ring_positions(num_points: int, radius_m: float, phase_deg: float = 0.0) -> np.ndarray:
    """``num_points`` evenly spaced in angle on a circle of ``radius_m``, the first at
    ``phase_deg`` from the x axis."""
    theta = math.radians(phase_deg) + 2.0 * np.pi * np.arange(num_points) / num_points
    return np.column_stack([radius_m * np.cos(theta), radius_m * np.sin(theta)])


def grid_positions(num_points: int, spacing_m: float, columns: int | None = None) -> np.ndarray:
    """A square grid of pitch ``spacing_m`` centred on the origin, filled row by row
    (``columns`` per row; default ⌈√N⌉); the bounding box of the filled grid is centred."""
    cols = columns or max(1, math.ceil(math.sqrt(num_points)))
    rows = math.ceil(num_points / cols)
    i = np.arange(num_points)
    x = (i % cols - (min(num_points, cols) - 1) / 2.0) * spacing_m
    y = (i // cols - (rows - 1) / 2.0) * spacing_m
    return np.column_stack([x, y])


def distance_m(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distance between positions of shape (..., 2) [m]."""
    return np.linalg.norm(np.asarray(a, dtype=float) - np.asarray(b, dtype=float), axis=-1)
