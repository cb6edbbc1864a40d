"""Where a moving UE's antenna gains are evaluated exactly along its path (issue 23,
item 3): the anchor points of :meth:`~netfl.radio.site_geometry.SiteGeometry.coupling_along`,
between which its gains summed over the link's rays are interpolated linearly."""

from __future__ import annotations

import numpy as np

__all__ = [
    "ANCHOR_AZIMUTH_DEG",
    "ANCHOR_LOG_DISTANCE",
    "ANCHOR_ZENITH_DEG",
    "greedy_anchors",
    "path_anchors",
    "path_steps",
]

#: largest change of the azimuth and of the zenith [deg] from any site between two points
#: where a moving UE's antenna gains are evaluated over its rays (:func:`path_anchors`)
ANCHOR_AZIMUTH_DEG = 1.0
ANCHOR_ZENITH_DEG = 0.25
#: ... and of the log of the distance (the rays' spreads and offsets follow it)
ANCHOR_LOG_DISTANCE = 0.01


def path_anchors(site_offsets_m: np.ndarray, dz_m: np.ndarray) -> np.ndarray:
    """Indices of the points of a path (``site_offsets_m``: (points, sites, 2) from each
    site, ``dz_m``: (sites,) UE − BS height) at which the BS antenna gains are evaluated
    exactly: the first, the last, and each point where the azimuth or zenith the UE is
    seen under from some site, or the log of its distance, has moved by more than
    :data:`ANCHOR_AZIMUTH_DEG` / :data:`ANCHOR_ZENITH_DEG` / :data:`ANCHOR_LOG_DISTANCE`
    since the previous anchor (summed over the steps, so a
    path that turns back counts its way). Between anchors the gains — sums of smooth
    antenna patterns over the link's rays, at smoothly varying angles — are interpolated
    linearly: a few hundredths of a dB from the exact sum, at a fraction of its cost."""
    n = len(site_offsets_m)
    if n <= 2:
        return np.arange(n)
    return greedy_anchors(path_steps(site_offsets_m, dz_m).max(axis=1))


def path_steps(site_offsets_m: np.ndarray, dz_m: np.ndarray) -> np.ndarray:
    """``(points − 1, sites)``: each step's change of the azimuth, zenith and log
    distance from each site in units of its anchor threshold (the largest of the three)."""
    az = np.unwrap(np.arctan2(site_offsets_m[..., 1], site_offsets_m[..., 0]), axis=0)
    d2 = np.maximum(np.hypot(site_offsets_m[..., 0], site_offsets_m[..., 1]), 1.0)
    zen = np.arctan2(d2, dz_m[None, :])
    return np.maximum.reduce(
        [
            np.abs(np.diff(np.degrees(az), axis=0)) / ANCHOR_AZIMUTH_DEG,
            np.abs(np.diff(np.degrees(zen), axis=0)) / ANCHOR_ZENITH_DEG,
            np.abs(np.diff(np.log(d2), axis=0)) / ANCHOR_LOG_DISTANCE,
        ]
    )


def greedy_anchors(step: np.ndarray) -> np.ndarray:
    """The anchors of a path of ``len(step) + 1`` points whose steps change its gains by
    ``step`` (in threshold units): a new anchor once the change since the last passes 1."""
    n = len(step) + 1
    if n <= 2:
        return np.arange(n)
    anchors, acc = [0], 0.0
    for k, s in enumerate(step.tolist(), start=1):
        acc += s
        if acc > 1.0:
            if anchors[-1] != k - 1:
                anchors.append(k - 1)
            acc = s
            if acc > 1.0:
                anchors.append(k)
                acc = 0.0
    if anchors[-1] != n - 1:
        anchors.append(n - 1)
    return np.array(anchors)
