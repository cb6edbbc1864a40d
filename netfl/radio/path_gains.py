"""A moving UE's BS antenna gains along its path (issue 23, item 3): the sums over its
links' departure rays are evaluated exactly at anchor points only and interpolated
between them (:func:`ray_gains_db_along`); where the anchors lie (:func:`path_anchors`).
Used by :meth:`~netfl.radio.site_geometry.SiteGeometry.coupling_along`."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from channel_models.bs_antenna import sector_gain_db, site_gains_db
from channel_models.departure_rays import LinkRays

__all__ = [
    "ANCHOR_AZIMUTH_DEG",
    "ANCHOR_LOG_DISTANCE",
    "ANCHOR_ZENITH_DEG",
    "greedy_anchors",
    "path_anchors",
    "path_steps",
    "ray_gains_db_along",
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


def ray_gains_db_along(
    site_offsets_m: np.ndarray,
    los: np.ndarray,
    rays: Mapping[tuple[int, bool], LinkRays],
    boresights_deg: np.ndarray | None,
    dz_m: float,
    h_ut_m: float,
    scenario: str,
    carrier_hz: float,
    bs_height_m: float,
    array_rows: int,
    tilt_zenith_deg: float,
    segment: int | None = None,
) -> np.ndarray:
    """``(points, sites · K)`` antenna gains [dB] of each site's K sectors towards a UE
    at the points of a path (``site_offsets_m``: (points, sites, 2) from each site; the
    link's LOS state ``los`` (points, sites)), summed over the link's departure rays in
    the state at each point (``rays(site, state)``; :func:`site_gains_db`, split) plus its
    direct path's share. The ray sum — smooth in the direction the UE is seen from — is
    evaluated at the anchors of :func:`greedy_anchors` (each ``segment`` of points on its
    own: its first and last point and the points between where the angles or distance
    moved by a threshold) and interpolated linearly in dB between them; the LOS path's
    sharp pattern is evaluated at every point. ``boresights_deg`` (sites, K), None: omni
    (K = 1)."""
    n_pts, n_sites = los.shape
    omni = boresights_deg is None
    bores = np.full((n_sites, 1), np.nan) if omni else np.asarray(boresights_deg)
    k_sec = bores.shape[1]
    same = omni or bool((bores == bores[:1]).all())
    idx = np.arange(n_pts)
    steps = path_steps(site_offsets_m, np.full(n_sites, dz_m)) if n_pts > 1 else None
    seg = segment or n_pts
    anchors = [
        np.concatenate(
            [
                a + greedy_anchors(steps[a : min(a + seg, n_pts) - 1, s])
                for a in range(0, n_pts, seg)
            ]
        )
        if steps is not None
        else np.arange(n_pts)
        for s in range(n_sites)
    ]
    out = np.empty((n_pts, n_sites * k_sec))
    for state in (True, False):
        sites = ((los if state else ~los).any(axis=0)).nonzero()[0]
        if not len(sites):
            continue
        links = [rays[int(s), state] for s in sites]
        counts = np.array([len(anchors[s]) for s in sites])
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        at = np.concatenate([anchors[s] for s in sites])
        off = site_offsets_m[at, np.repeat(sites, counts), :]
        stacked = LinkRays.stack(links).take(np.repeat(np.arange(len(sites)), counts))
        groups = [np.arange(len(off))] if same else np.split(np.arange(len(off)), starts[1:])
        ray_sum = np.empty((len(off), k_sec))
        for g, first in zip(groups, sites[:1] if same else sites, strict=True):
            ray_sum[g], _ = site_gains_db(
                off[g],
                np.full(len(g), dz_m),
                None if omni else bores[first],
                np.full(len(g), state),
                scenario,
                carrier_hz,
                np.full(len(g), h_ut_m),
                bs_height_m,
                array_rows,
                0.8,
                tilt_zenith_deg,
                stacked.take(g),
                split=True,
            )
        ray_db = np.log10(np.maximum(ray_sum, 1e-300))
        # every (point, site) in this state at once: its anchors before and after
        rows, i = (los[:, sites] == state).nonzero()
        key = np.searchsorted(
            at + (n_pts + 1) * np.repeat(np.arange(len(sites)), counts),
            rows + (n_pts + 1) * i,
            side="right",
        )
        j = np.clip(key - 1 - starts[i], 0, np.maximum(counts[i] - 2, 0))
        nxt = np.minimum(j + 1, counts[i] - 1)
        a_j, a_nxt = at[starts[i] + j], at[starts[i] + nxt]
        w = ((idx[rows] - a_j) / np.maximum(a_nxt - a_j, 1))[:, None]
        gain = 10.0 ** ((1.0 - w) * ray_db[starts[i] + j] + w * ray_db[starts[i] + nxt])
        for n, s in enumerate(sites):  # (the direct path: LOS links only)
            if links[n].direct[0] > 0:
                sel = (i == n).nonzero()[0]
                direct_db = sector_gain_db(
                    site_offsets_m[rows[sel], s, None, :],
                    np.full((len(sel), 1), dz_m),
                    None if omni else bores[s][None, :],
                    None,
                    scenario,
                    carrier_hz,
                    np.full((len(sel), 1), h_ut_m),
                    bs_height_m,
                    array_rows,
                    tilt_zenith_deg=tilt_zenith_deg,
                )
                gain[sel] = gain[sel] + links[n].direct[0] * 10.0 ** (direct_db / 10.0)
        cells = sites[i][:, None] * k_sec + np.arange(k_sec)
        out[rows[:, None], cells] = 10.0 * np.log10(gain)
    return out
