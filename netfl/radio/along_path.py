"""Along-path shadowing of moving devices (issue 53): the update ns-3's
``ThreeGppPropagationLossModel`` applies to a moving UE's shadowing (TR 38.901 §7.4.4
and §7.6.3.1) — per link, at each measurement instant,

    s(d + Δd) = R·s(d) + √(1 − R²)·N(0, σ²),   R = exp(−Δd / d_corr),

Δd the distance moved since the previous instant — starting from the spatially
consistent field's value where the path starts. netfl draws it per site in the units of
a standard normal for both of a site's fields: the shadowing (σ applied by the path-loss
law; d_corr the scenario's shadow-fading decorrelation distance) and the LOS state's
normal (its uniform Φ(·), d_corr the LOS decorrelation distance), so a path's marginal
statistics, its autocorrelation exp(−Δd/d_corr) along a straight leg and its LOS
changes are those of the spatially consistent fields
(:meth:`SiteGeometry.all_site_fields`), at the cost of a few operations per instant
instead of a sum of 512 waves per site. What it gives up: two devices near each other,
or one device back where it was, see independent values (``network.mobility.shadowing:
spatially_consistent`` keeps the fields for studies that need that; docs/networks.md).

A path's instants are taken in aligned segments of ``segment`` instants; each
segment's innovations come from a generator keyed by the link seed, the device's name
and the segment, and each segment's last state is kept, so the values are a function of
the path alone, however the path is cut into calls (a call that skips ahead first runs
the segments in between; each costs a few microseconds). On a wrap-around network a
device that drives off an edge comes back in at the opposite one: the step across the
fold is the network's width, so its chains start afresh there (R ≈ 0), as the fields
would give at the new place.

A moving device's link budget at a position (``CellRadio.link_variates``: the fields
there) and its measurements along its path agree at its drop only under this model; the
network takes a moving device's links from its measurements
(``MultiCellRadio.link_terms``), and refuses what would need the other (over-the-air
aggregation with moving devices)."""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np
from scipy.special import ndtr

__all__ = ["SHADOWINGS", "AlongPathFields"]

#: moving devices' shadowing models (``network.mobility.shadowing``)
SHADOWINGS = ("along_path", "spatially_consistent")
#: the last states kept per device, in segments (a call for an earlier segment than
#: these runs the chain again from the path's start: the same values, more time — the
#: handover control never asks for instants the clock has passed)
KEEP_SEGMENTS = 64


class AlongPathFields:
    """AR(1) chains of the LOS-state and shadowing normals of every site along moving
    devices' paths.

    Parameters
    ----------
    origin_normals
        ``(xy (2,)) -> (sites, 2)`` the spatially consistent fields' normals (LOS state,
        shadowing) at a point: each path's start.
    decorrelation_m
        ``(d_LOS, d_SF)`` [m] (TR 38.901 Table 7.6.3.1-2).
    seed, segment
        The links' keyed-hash seed; the instants per segment.
    """

    def __init__(
        self,
        origin_normals: Callable[[np.ndarray], np.ndarray],
        decorrelation_m: tuple[float, float],
        seed: int,
        segment: int,
    ):
        self.origin_normals = origin_normals
        self.d_corr = np.asarray(decorrelation_m, dtype=float)  # (field,)
        self.seed = int(seed) % (2**32)
        self.segment = int(segment)
        # device → {segment: (its last point, the normals there (sites, 2))}
        self._tails: dict[str, dict[int, tuple[np.ndarray, np.ndarray]]] = {}

    def forget(self) -> None:
        """New paths: every chain starts afresh."""
        self._tails.clear()

    def fields(
        self,
        name: str,
        k0: int,
        xy: np.ndarray,
        positions: Callable[[np.ndarray], np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(uniforms, normals)`` — the LOS state's uniform and the shadowing's normal,
        ``(points, sites)`` each — of device ``name`` at the instants k0, k0 + 1, … (its
        positions ``xy``: whole segments from a segment's start); ``positions(ks)`` gives
        its positions at other instants (to run skipped segments)."""
        S = self.segment
        if k0 % S or len(xy) % S:
            raise ValueError(f"along-path shadowing runs whole segments of {S} instants")
        s0 = k0 // S
        tails = self._tails.setdefault(name, {})
        if s0 > 0 and s0 - 1 not in tails:  # (skipped segments: run them first)
            start = max((s + 1 for s in tails if s < s0), default=0)
            ks = np.arange(start * S, s0 * S)
            self._run(name, start, positions(ks))
        v = self._run(name, s0, np.asarray(xy, dtype=float))
        return ndtr(v[:, :, 0]), v[:, :, 1]

    def _run(self, name: str, s_first: int, xy: np.ndarray) -> np.ndarray:
        """The normals ``(points, sites, 2)`` of the segments from ``s_first`` at ``xy``,
        their last states kept."""
        S = self.segment
        tails = self._tails[name]
        m = len(xy) // S
        if s_first == 0:  # (the path's start: the fields' values there, R = 1 at k = 0)
            prev_xy, prev_v = xy[0], self.origin_normals(xy[0])
        else:
            prev_xy, prev_v = tails[s_first - 1]
        pts = xy.reshape(m, S, 2)
        before = np.concatenate([prev_xy[None, :], xy[:-1]]).reshape(m, S, 2)
        step = np.hypot(*(pts - before).transpose(2, 0, 1))  # (m, S) Δd
        dist = np.cumsum(step, axis=1)  # (m, S) from each segment's previous point
        sites = prev_v.shape[0]
        noise = np.stack(
            [
                np.random.default_rng([self.seed, zlib.crc32(name.encode()), s, 0xA3]).normal(
                    size=(S, sites, 2)
                )
                for s in range(s_first, s_first + m)
            ]
        )  # (m, S, sites, 2)
        out = np.empty((m, S, sites, 2))
        for f, d in enumerate(self.d_corr):
            # v_i = P_i·v_prev + Σ_{j≤i} exp(−(D_i − D_j)/d)·√(1 − R_j²)·ε_j
            lag = dist[:, :, None] - dist[:, None, :]  # (m, S, S): D_i − D_j
            w = np.where(lag >= 0, np.exp(-np.maximum(lag, 0.0) / d), 0.0)
            w = np.tril(w)
            a = np.sqrt(-np.expm1(-2.0 * step / d))  # (m, S): √(1 − R_j²)
            local = np.einsum("mij,mjs->mis", w, a[:, :, None] * noise[:, :, :, f])
            decay = np.exp(-dist / d)  # (m, S): P_i
            v = prev_v[:, f]
            for j in range(m):  # (each segment from the one before's last state)
                out[j, :, :, f] = decay[j][:, None] * v[None, :] + local[j]
                v = out[j, -1, :, f]
        for j in range(m):
            tails[s_first + j] = (pts[j, -1].copy(), out[j, -1].copy())
        for s in [s for s in tails if s < s_first + m - KEEP_SEGMENTS]:  # (bounded memory)
            del tails[s]
        return out.reshape(m * S, sites, 2)
