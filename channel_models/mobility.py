"""User mobility (issue 23, item 3, first part): trajectories, Doppler coherence time,
spatially consistent shadowing and the A3 handover rule. Pure numpy; the simulator's
runtime (positions advancing during a run, handovers of transfers in flight) builds on
it next.

Trajectories give a position at any time, vectorised over times, and need no event to
advance (a device that does not transfer costs nothing):

- :class:`Static` — one position;
- :class:`ConstantVelocity` — ``start + v·t`` (a straight road);
- :class:`RandomWaypoint` — legs between waypoints drawn uniformly in a region, each at
  a speed drawn uniformly from ``[v_min, v_max]``, with a pause at every waypoint (legs
  drawn lazily from the device's own generator, so a position is a function of time);
- :class:`GaussMarkov` — Camp, Boleng, Davies (2002): every ``step_s`` the speed and
  heading follow s_n = α·s_{n−1} + (1 − α)·s̄ + √(1 − α²)·σ_s·w, same for the heading;
  positions are linear in between;
- :class:`Folded` — any of them on a wrap-around deployment's torus.

:func:`coherence_time_s` is Clarke's T_c = 0.423 / f_D with f_D = v·f_c / c (the
fading block length a moving device implies, unless a scenario sets one).

:class:`ShadowField` is a stationary Gaussian field over the plane with the exponential
correlation exp(−d / d_corr) of TR 38.901 §7.6.3.1 (d_corr: Table 7.5-6, e.g. UMa
37 m LOS / 50 m NLOS, UMi 10 m / 13 m): a sum of random cosines whose wave vectors are
drawn from the kernel's spectral density (a 2-D Cauchy law with scale 1/d_corr) —
random Fourier features. Each BS has its own field (its own seed), so a moving UE's
shadowing changes smoothly and two UEs close together see nearly the same.

:func:`a3_handovers` applies the A3 event (TS 38.331 §5.5.4.4) to RSRP series: a
neighbour's RSRP above the serving cell's by more than ``hysteresis_db`` (offset
included) without a break for ``ttt_s`` hands the UE over to it at that instant.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "Static",
    "ConstantVelocity",
    "RandomWaypoint",
    "GaussMarkov",
    "Folded",
    "coherence_time_s",
    "ShadowField",
    "a3_handovers",
    "MAX_SPEED_KMH",
]

SPEED_OF_LIGHT = 299_792_458.0
#: faster than this is not a UE (a high-speed train runs at 350–500 km/h)
MAX_SPEED_KMH = 500.0


def _check_speed(speed_mps: float, what: str = "speed") -> None:
    kmh = speed_mps * 3.6
    if not (math.isfinite(kmh) and 0.0 <= kmh <= MAX_SPEED_KMH):
        raise ValueError(f"{what}: {kmh:g} km/h (valid: 0 to {MAX_SPEED_KMH:g})")


@dataclass(frozen=True)
class Static:
    """A device that does not move."""

    position_m: tuple[float, float]

    def positions(self, t_s: np.ndarray) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t_s, dtype=float))
        return np.broadcast_to(np.asarray(self.position_m, dtype=float), (t.size, 2)).copy()

    def speed_mps(self, t_s: float = 0.0) -> float:
        return 0.0


@dataclass(frozen=True)
class ConstantVelocity:
    """``start_m + velocity_mps·t``: a straight line at constant speed."""

    start_m: tuple[float, float]
    velocity_mps: tuple[float, float]

    def __post_init__(self) -> None:
        _check_speed(float(np.hypot(*self.velocity_mps)))

    def positions(self, t_s: np.ndarray) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t_s, dtype=float))
        return np.asarray(self.start_m, dtype=float) + np.outer(t, self.velocity_mps)

    def speed_mps(self, t_s: float = 0.0) -> float:
        return float(np.hypot(*self.velocity_mps))


@dataclass
class RandomWaypoint:
    """Random waypoint: legs to uniform points of ``sample(n, rng)``, each at a speed
    uniform in ``[v_min_mps, v_max_mps]``, then ``pause_s`` at the waypoint."""

    start_m: tuple[float, float]
    sample: object  # callable (n, rng) -> (n, 2) points of the region
    v_min_mps: float
    v_max_mps: float
    pause_s: float
    rng: np.random.Generator
    _times: list = field(default_factory=list)  # leg start times
    _points: list = field(default_factory=list)  # leg start points
    _speeds: list = field(default_factory=list)
    _arrays: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_speed(self.v_min_mps, "v_min")
        _check_speed(self.v_max_mps, "v_max")
        if not 0.0 < self.v_min_mps <= self.v_max_mps:
            raise ValueError(
                f"speeds: need 0 < v_min ≤ v_max (got {self.v_min_mps}, {self.v_max_mps})"
            )
        if self.pause_s < 0:
            raise ValueError(f"pause_s: {self.pause_s} must be ≥ 0")
        self._times, self._points, self._speeds = [0.0], [np.asarray(self.start_m, float)], []
        self._arrays = None  # (the three as arrays, kept between legs: :meth:`positions`)

    def _extend(self, t_end: float) -> None:
        while self._times[-1] <= t_end:
            nxt = np.asarray(self.sample(1, self.rng), dtype=float).reshape(2)
            speed = float(self.rng.uniform(self.v_min_mps, self.v_max_mps))
            here = self._points[-1]
            travel = float(np.hypot(*(nxt - here))) / speed
            self._speeds.append(speed)
            # a leg: travel, then pause; the next leg starts at the end of the pause
            self._times.append(self._times[-1] + travel + self.pause_s)
            self._points.append(nxt)

    def positions(self, t_s: np.ndarray) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t_s, dtype=float))
        self._extend(float(t.max(initial=0.0)))
        if self._arrays is None or len(self._arrays[0]) != len(self._times):
            self._arrays = (
                np.asarray(self._times),
                np.asarray(self._points),
                np.asarray(self._speeds),
            )  # (kept until the next leg: a path is asked about thousands of times)
        starts, points, speeds = self._arrays
        leg = np.clip(np.searchsorted(starts, t, side="right") - 1, 0, len(speeds) - 1)
        a, b = points[leg], points[leg + 1]
        travel = np.hypot(*(b - a).T) / speeds[leg]
        frac = np.clip((t - starts[leg]) / np.where(travel > 0, travel, 1.0), 0.0, 1.0)
        return a + frac[:, None] * (b - a)

    def speed_mps(self, t_s: float = 0.0) -> float:
        self._extend(t_s)
        leg = max(int(np.searchsorted(self._times, t_s, side="right")) - 1, 0)
        return float(self._speeds[min(leg, len(self._speeds) - 1)])


@dataclass
class GaussMarkov:
    """Gauss–Markov mobility (Camp et al. 2002) with memory ``alpha`` ∈ [0, 1], mean
    speed and heading, their spreads, updated every ``step_s`` from ``rng``."""

    start_m: tuple[float, float]
    mean_speed_mps: float
    mean_heading_deg: float
    alpha: float
    rng: np.random.Generator
    step_s: float = 1.0
    speed_std_mps: float = 1.0
    heading_std_deg: float = 20.0
    _points: list = field(default_factory=list)
    _speed: float = 0.0
    _heading: float = 0.0

    def __post_init__(self) -> None:
        _check_speed(self.mean_speed_mps, "mean_speed")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha: {self.alpha} (valid: 0 to 1)")
        if not self.step_s > 0:
            raise ValueError(f"step_s: {self.step_s} must be > 0")
        self._points = [np.asarray(self.start_m, dtype=float)]
        self._speed, self._heading = self.mean_speed_mps, math.radians(self.mean_heading_deg)

    def _extend(self, t_end: float) -> None:
        a, q = self.alpha, math.sqrt(max(1.0 - self.alpha**2, 0.0))
        while (len(self._points) - 1) * self.step_s <= t_end:
            w1, w2 = self.rng.standard_normal(2)
            self._speed = (
                a * self._speed + (1 - a) * self.mean_speed_mps + q * self.speed_std_mps * w1
            )
            self._speed = min(max(self._speed, 0.0), MAX_SPEED_KMH / 3.6)
            mean_h = math.radians(self.mean_heading_deg)
            self._heading = (
                a * self._heading + (1 - a) * mean_h + q * math.radians(self.heading_std_deg) * w2
            )
            step = self._speed * self.step_s
            self._points.append(
                self._points[-1]
                + step * np.array([math.cos(self._heading), math.sin(self._heading)])
            )

    def positions(self, t_s: np.ndarray) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t_s, dtype=float))
        self._extend(float(t.max(initial=0.0)))
        pts = np.asarray(self._points)
        k = np.clip(np.floor(t / self.step_s).astype(int), 0, len(pts) - 2)
        frac = (t - k * self.step_s) / self.step_s
        return pts[k] + frac[:, None] * (pts[k + 1] - pts[k])

    def speed_mps(self, t_s: float = 0.0) -> float:
        self._extend(t_s)
        k = min(int(t_s // self.step_s), len(self._points) - 2)
        return float(np.hypot(*(self._points[k + 1] - self._points[k]))) / self.step_s


@dataclass(frozen=True)
class Folded:
    """A trajectory on a torus: ``path``'s positions passed through ``fold`` (a
    wrap-around deployment's :meth:`~channel_models.site_layouts.HexLayout.fold`), so a
    device that drives out of one edge comes back in at the opposite one, at any speed
    and for any duration; its speed is the path's."""

    path: object
    fold: object

    def positions(self, t_s: np.ndarray) -> np.ndarray:
        return self.fold(self.path.positions(t_s))

    def speed_mps(self, t_s: float = 0.0) -> float:
        return self.path.speed_mps(t_s)


def coherence_time_s(speed_mps: float, carrier_hz: float) -> float:
    """Clarke's coherence time 0.423 / f_D, f_D = v·f_c/c (inf when standing still)."""
    f_d = speed_mps * carrier_hz / SPEED_OF_LIGHT
    return math.inf if f_d == 0 else 0.423 / f_d


@dataclass(frozen=True)
class ShadowField:
    """A zero-mean, unit-variance Gaussian field over the plane with correlation
    exp(−d/``d_corr_m``) (TR 38.901 §7.6.3.1), as ``num_waves`` random cosines
    √(2/M)·Σ cos(ω_m·x + φ_m), ω_m from the exponential kernel's spectral density (a
    bivariate Cauchy law of scale 1/d_corr), φ_m uniform; ``seed`` fixes the field."""

    d_corr_m: float
    seed: int
    num_waves: int = 1024

    def __post_init__(self) -> None:
        if not self.d_corr_m > 0:
            raise ValueError(f"d_corr_m: {self.d_corr_m} must be > 0")

    def _waves(self) -> tuple[np.ndarray, np.ndarray]:
        return _waves(self.d_corr_m, self.seed, self.num_waves)

    def values(self, xy: np.ndarray) -> np.ndarray:
        """The field at points ``xy`` (N, 2): N(0, 1) marginals, spatially correlated."""
        omega, phase = self._waves()
        xy = np.asarray(xy, dtype=float).reshape(-1, 2)
        return math.sqrt(2.0 / self.num_waves) * np.cos(xy @ omega.T + phase).sum(axis=1)


@functools.lru_cache(maxsize=4096)
def _waves(d_corr_m: float, seed: int, num_waves: int) -> tuple[np.ndarray, np.ndarray]:
    """The field's wave vectors and phases (drawn once per field)."""
    rng = np.random.default_rng(seed)
    # bivariate Cauchy = Gaussian / sqrt(chi²_1): the 2-D Fourier transform of e^{-r/d}
    g = rng.standard_normal((num_waves, 2))
    chi = np.abs(rng.standard_normal(num_waves))
    omega = g / chi[:, None] / d_corr_m
    phase = rng.uniform(0.0, 2.0 * np.pi, num_waves)
    return omega, phase


#: X of TS 38.331 §5.5.3.2: the sample period the L3 filter coefficient assumes, one
#: intra-frequency L1 measurement period (TS 38.133, FR1, SSB-based, no DRX) [s]
L1_MEASUREMENT_PERIOD_S = 0.2


def _l3_filter(
    t: np.ndarray,
    rsrp: np.ndarray,
    keep: float,
    period_s: float,
    filtered: np.ndarray | None,
    last: float | None,
) -> np.ndarray:
    """``(samples, cells)`` F_n = w_n·F_{n−1} + (1 − w_n)·M_n, w_n = ``keep``^(Δt_n /
    ``period_s``), from ``filtered`` at time ``last`` (None: F_0 = M_0). Samples evenly
    spaced (to 1e-9 of their step) are filtered as one linear recursion
    (:func:`_recursion`), others one by one."""
    if filtered is None:
        prev, t_prev = rsrp[0], t[0]
    else:
        prev, t_prev = np.asarray(filtered, dtype=float), float(last)
    dt = np.diff(t, prepend=t_prev)
    w = keep ** (dt / period_s)
    if filtered is None:
        w[0] = 0.0  # (F_0 = M_0)
    if not w.any():  # (no filter)
        return rsrp.copy()
    first = w[0] * prev + (1.0 - w[0]) * rsrp[0]
    if len(t) > 1 and np.ptp(dt[1:]) <= 1e-9 * abs(dt[1]):
        return np.concatenate([first[None, :], _recursion(float(w[1:].mean()), first, rsrp[1:])])
    out = np.empty_like(rsrp)
    out[0] = prev = first
    for k in range(1, len(t)):
        prev = w[k] * prev + (1.0 - w[k]) * rsrp[k]
        out[k] = prev
    return out


#: samples a block of :func:`_recursion` takes at once
_BLOCK = 64


def _recursion(w: float, start: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``(n, cells)`` y_k = w·y_{k−1} + (1 − w)·x_k from y_{−1} = ``start``, a block of
    :data:`_BLOCK` samples at a time as one product: y = w^(k+1)·y_{−1} + (1 − w)·T·x,
    T[k, j] = w^(k−j) for j ≤ k (the same values as the recursion to rounding)."""
    powers, toeplitz = _block_matrices(w)
    out = np.empty_like(x)
    prev = start
    for a in range(0, len(x), _BLOCK):
        b = min(a + _BLOCK, len(x))
        out[a:b] = powers[: b - a, None] * prev + toeplitz[: b - a, : b - a] @ x[a:b]
        prev = out[b - 1]
    return out


@functools.lru_cache(maxsize=16)
def _block_matrices(w: float) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(_BLOCK)
    lag = k[:, None] - k[None, :]
    toeplitz = np.where(lag >= 0, (1.0 - w) * w ** np.maximum(lag, 0), 0.0)
    return w ** (k + 1.0), toeplitz


def a3_handovers(
    t_s: np.ndarray,
    rsrp_dbm: np.ndarray,
    serving: int,
    hysteresis_db: float = 3.0,
    ttt_s: float = 0.16,
    state: dict | None = None,
    filter_k: int = 0,
    filter_period_s: float = L1_MEASUREMENT_PERIOD_S,
) -> list[tuple[float, int, int]]:
    """Handovers along sampled RSRP series ``rsrp_dbm`` (times ``t_s`` × cells) by the
    A3 rule: once the best neighbour's RSRP exceeds the serving cell's by more than
    ``hysteresis_db`` at every sample for ``ttt_s``, the UE hands over to it (at the
    sample where the time-to-trigger runs out). Returns ``(time, from, to)`` per
    handover. ``hysteresis_db`` ∈ [0, 30] dB (TS 38.331's range), ``ttt_s`` ∈ [0, 5.12] s.

    The rule sees the layer-3 filtered RSRP (TS 38.331 §5.5.3.2): F_n = (1 − a)·F_{n−1}
    + a·M_n in dBm, a = 1/2^(k/4), ``filter_k`` = k (0: no filtering; the standard's
    default filterCoefficient is fc4), F_0 = M_0 — with a for samples ``filter_period_s``
    apart (the standard's X, one L1 measurement period, TS 38.133: 200 ms in FR1 without
    DRX); samples Δt apart take 1 − (1 − a)^(Δt/X), which keeps the filter's time
    characteristics at any input rate, as §5.5.3.2 requires. ``state`` (a dict, updated
    in place) carries the filter, its last sample time and a pending time-to-trigger from
    one call to the next, so a series may be evaluated piece by piece."""
    if not 0.0 <= hysteresis_db <= 30.0:
        raise ValueError(f"hysteresis_db: {hysteresis_db} (valid: 0 to 30 dB)")
    if not 0.0 <= ttt_s <= 5.12:
        raise ValueError(f"ttt_s: {ttt_s} (valid: 0 to 5.12 s)")
    if not 0 <= filter_k <= 19:
        raise ValueError(f"filter_k: {filter_k} (valid: 0 to 19)")
    t = np.asarray(t_s, dtype=float)
    rsrp = np.asarray(rsrp_dbm, dtype=float)
    out: list[tuple[float, int, int]] = []
    state = {} if state is None else state
    entered: float | None = state.get("entered")
    target = int(state.get("target", -1))
    if not len(t):
        return out
    keep = 1.0 - 0.5 ** (filter_k / 4.0)  # (1 − a) per period X
    filtered = _l3_filter(t, rsrp, keep, filter_period_s, state.get("filtered"), state.get("t"))
    # the A3 rule, instant by instant between handovers: where the best neighbour beats
    # the serving cell by the hysteresis (``hot``), runs of the same neighbour
    # (``entered`` at a run's first instant); a handover where a run has lasted the TTT
    k, n = 0, len(t)
    while k < n:
        f = filtered[k:]
        own = f[:, serving]
        others = f.copy()
        others[:, serving] = -np.inf
        best = others.argmax(axis=1)
        hot = others[np.arange(n - k), best] > own + hysteresis_db
        new_run = hot.copy()
        new_run[1:] &= ~hot[:-1] | (best[1:] != best[:-1])
        if hot[0] and entered is not None and best[0] == target:
            new_run[0] = False  # (a run the previous call began)
        starts = np.where(new_run, np.arange(n - k), -1)
        began = np.maximum.accumulate(starts)
        held = entered if entered is not None else 0.0
        since = np.where(began >= 0, t[k:][np.maximum(began, 0)], held)
        fire = hot & (t[k:] - since >= ttt_s - 1e-12)
        if not fire.any():
            entered = float(since[-1]) if hot[-1] else None
            target = int(best[-1]) if hot[-1] else -1
            break
        h = int(fire.argmax())
        out.append((float(t[k + h]), serving, int(best[h])))
        serving, entered, target = int(best[h]), None, -1
        k += h + 1
    else:
        entered, target = None, -1
    last = float(t[-1])
    filtered = filtered[-1].copy()  # (the last row alone, not a view of them all)
    state["entered"], state["target"], state["filtered"], state["t"] = (
        entered,
        target,
        filtered,
        last,
    )
    return out
