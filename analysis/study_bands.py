"""What the studies draw alike: a mean ± std band over seeds, by round or on a common
time grid (each seed's rounds end at other times)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd


def band(ax, x: np.ndarray, values: np.ndarray, color: str, label: str) -> None:
    """Mean ± std over the rows of ``values`` (seeds × points) against ``x``; NaN (a
    seed with no value yet) left out."""
    with warnings.catch_warnings():  # (a point no seed has: no value)
        warnings.simplefilter("ignore", RuntimeWarning)
        mean, std = np.nanmean(values, axis=0), np.nanstd(values, axis=0)
    ax.plot(x, mean, color=color, label=label)
    ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.2, lw=0)


def band_by_round(ax, curves: Sequence[pd.DataFrame], color: str, label: str) -> None:
    """Test accuracy against the round (1-based), mean ± std over ``curves`` (each a
    run's ``rounds``, all of the same length)."""
    acc = np.array([r["accuracy"].to_numpy() for r in curves])
    band(ax, np.arange(1, acc.shape[1] + 1), acc, color, label)


def band_on_time(ax, curves: Sequence[pd.DataFrame], color: str, label: str) -> None:
    """Test accuracy against simulated time on 200 points up to the earliest end,
    mean ± std over ``curves`` (before a seed's first round: no value)."""
    grid = np.linspace(0.0, min(float(r["sim_time_s"].iloc[-1]) for r in curves), 200)
    acc = np.array([np.interp(grid, r["sim_time_s"], r["accuracy"], left=np.nan) for r in curves])
    band(ax, grid, acc, color, label)
