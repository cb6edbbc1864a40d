"""Mobility building blocks (issue 23, item 3): trajectories, Doppler coherence, the
spatially consistent shadowing field, and the A3 handover rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats
from scipy.signal import lfilter

from channel_models.mobility import (
    ConstantVelocity,
    GaussMarkov,
    RandomWaypoint,
    ShadowField,
    Static,
    a3_handovers,
    coherence_time_s,
)


def test_static_and_constant_velocity_positions():
    t = np.array([0.0, 1.0, 2.5])
    assert np.allclose(Static((3.0, 4.0)).positions(t), [[3, 4]] * 3)
    cv = ConstantVelocity((10.0, 0.0), (2.0, -1.0))
    assert np.allclose(cv.positions(t), [[10, 0], [12, -1], [15, -2.5]])
    assert cv.speed_mps() == pytest.approx(math.sqrt(5))


@pytest.mark.parametrize(
    "make",
    [
        lambda: ConstantVelocity((0, 0), (200.0, 0.0)),  # 720 km/h
        lambda: RandomWaypoint((0, 0), None, -1.0, 2.0, 0.0, np.random.default_rng(0)),
        lambda: RandomWaypoint((0, 0), None, 3.0, 2.0, 0.0, np.random.default_rng(0)),
        lambda: GaussMarkov((0, 0), 150.0, 0.0, 0.5, np.random.default_rng(0)),
        lambda: GaussMarkov((0, 0), 10.0, 0.0, 1.5, np.random.default_rng(0)),
    ],
)
def test_absurd_mobility_is_refused(make):
    with pytest.raises(ValueError):
        make()


def test_random_waypoint_moves_between_waypoints_at_its_leg_speeds():
    def square(n, rng):
        return rng.uniform(-100.0, 100.0, size=(n, 2))

    rw = RandomWaypoint((0.0, 0.0), square, 1.0, 5.0, 2.0, np.random.default_rng(4))
    t = np.linspace(0.0, 600.0, 60_001)
    xy = rw.positions(t)
    assert np.abs(xy).max() <= 100.0 + 1e-9
    speed = np.hypot(*np.diff(xy, axis=0).T) / np.diff(t)
    assert speed.max() <= 5.0 + 1e-6  # never faster than v_max
    assert (speed < 1e-9).mean() > 0.01  # pauses at the waypoints
    # a position is a function of time: asked again (or out of order), the same
    again = RandomWaypoint((0.0, 0.0), square, 1.0, 5.0, 2.0, np.random.default_rng(4))
    assert np.allclose(again.positions(t[::-1])[::-1], xy)


def test_gauss_markov_with_full_memory_is_a_straight_line():
    gm = GaussMarkov((0.0, 0.0), 10.0, 90.0, 1.0, np.random.default_rng(1), step_s=0.5)
    xy = gm.positions(np.array([0.0, 1.0, 10.0]))
    assert np.allclose(xy, [[0, 0], [0, 10], [0, 100]], atol=1e-9)
    # with memory < 1 it wanders, at a mean speed near the mean
    gm2 = GaussMarkov((0.0, 0.0), 10.0, 0.0, 0.7, np.random.default_rng(2), step_s=1.0)
    xy2 = gm2.positions(np.arange(0.0, 2000.0, 1.0))
    steps = np.hypot(*np.diff(xy2, axis=0).T)
    assert steps.mean() == pytest.approx(10.0, rel=0.05) and steps.std() > 0.1


def test_coherence_time_is_clarkes():
    # 30 km/h at 3.5 GHz: f_D = 97.3 Hz, T_c = 0.423 / f_D = 4.35 ms
    v = 30 / 3.6
    assert coherence_time_s(v, 3.5e9) == pytest.approx(0.423 / (v * 3.5e9 / 299_792_458.0))
    assert coherence_time_s(v, 3.5e9) == pytest.approx(4.35e-3, rel=1e-2)
    assert coherence_time_s(0.0, 3.5e9) == math.inf


def test_shadow_field_has_normal_marginals_and_exponential_correlation():
    d_corr = 37.0  # TR 38.901 UMa LOS
    # marginals: points far apart in one field are independent N(0, 1) draws
    grid = np.stack(np.meshgrid(np.arange(40), np.arange(40)), -1).reshape(-1, 2) * 400.0
    z = ShadowField(d_corr, seed=3).values(grid)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    # correlation against distance, over many fields (seeds): fit exp(-d/d_c)
    rng = np.random.default_rng(0)
    dists = np.array([0.0, 10.0, 25.0, 50.0, 75.0, 100.0, 150.0])
    corr = np.zeros(len(dists))
    fields = 300
    for seed in range(fields):
        f = ShadowField(d_corr, seed=100 + seed, num_waves=256)
        base = rng.uniform(-1e4, 1e4, size=(8, 2))
        ang = rng.uniform(0, 2 * np.pi, size=8)
        for k, d in enumerate(dists):
            other = base + d * np.stack([np.cos(ang), np.sin(ang)], 1)
            corr[k] += (f.values(base) * f.values(other)).mean()
    corr /= fields
    (fit,), _ = optimize.curve_fit(lambda d, dc: np.exp(-d / dc), dists, corr, p0=[30.0])
    assert fit == pytest.approx(d_corr, rel=0.15)
    assert corr[0] == pytest.approx(1.0, abs=0.1)


def test_a3_sees_the_layer3_filtered_rsrp():
    """TS 38.331 §5.5.3.2, k = 4 (a = 1/2): the neighbour steps from −100 to −90 dBm
    against a serving −95 dBm, hysteresis 3 dB, no TTT: filtered it reads −100, −95,
    −92.5, −91.25 — above −92 only at the fourth sample (unfiltered: the second). The
    filter carries over calls: split in two, the same instant."""
    t = np.arange(30) * 0.04
    rsrp = np.column_stack([np.full(30, -95.0), [-100.0] + [-90.0] * 29])
    assert a3_handovers(t, rsrp, 0, 3.0, 0.0) == [(t[1], 0, 1)]
    # fc4 is a = 1/2 per 200 ms: every 40 ms sample keeps (1/2)^(0.04/0.2) of the past;
    # the filtered neighbour −100 + 10·(1 − w^n) passes −95 + 3 at the first n with
    # w^n < 0.2
    w = 0.5 ** (0.04 / 0.2)
    n = math.ceil(math.log(0.2) / math.log(w))
    assert a3_handovers(t, rsrp, 0, 3.0, 0.0, filter_k=4) == [(t[n], 0, 1)]
    # at 100 ms per period the same filter is twice as fast: (1/2)^(0.04/0.1)
    n2 = math.ceil(math.log(0.2) / math.log(0.5 ** (0.04 / 0.1)))
    assert a3_handovers(t, rsrp, 0, 3.0, 0.0, filter_k=4, filter_period_s=0.1) == [(t[n2], 0, 1)]
    # piece by piece (the filter, its last time and the TTT carried over): the same
    state: dict = {}
    assert a3_handovers(t[:5], rsrp[:5], 0, 3.0, 0.0, state, filter_k=4) == []
    assert a3_handovers(t[5:], rsrp[5:], 0, 3.0, 0.0, state, filter_k=4) == [(t[n], 0, 1)]
    with pytest.raises(ValueError):
        a3_handovers(t, rsrp, 0, filter_k=20)


def test_a3_hands_over_when_the_rule_says():
    """Two omni sites 500 m apart, log-distance path loss 35 + 35·log10(d), a UE at 20 m/s
    along the line between them: the neighbour gets ahead by the hysteresis H where
    d0/d1 = 10^(H/35), and the UE hands over TTT later."""
    hyst, ttt, v, x0 = 3.0, 0.16, 20.0, 100.0
    ue = ConstantVelocity((x0, 0.0), (v, 0.0))
    dt = 1e-3
    t = np.arange(0.0, 20.0, dt)
    xy = ue.positions(t)
    sites = np.array([[0.0, 0.0], [500.0, 0.0]])
    d = np.hypot(*(xy[:, None, :] - sites[None, :, :]).transpose(2, 0, 1))
    rsrp = 46.0 - (35.0 + 35.0 * np.log10(d))
    events = a3_handovers(t, rsrp, serving=0, hysteresis_db=hyst, ttt_s=ttt)
    q = 10 ** (hyst / 35.0)
    x_enter = 500.0 * q / (1.0 + q)
    expected = (x_enter - x0) / v + ttt
    assert len(events) == 1
    when, src, dst = events[0]
    assert (src, dst) == (0, 1)
    assert abs(when - expected) <= 2 * dt
    # before the time-to-trigger has run out, no handover
    short = a3_handovers(t[t < expected - 0.05], rsrp[t < expected - 0.05], 0, hyst, ttt)
    assert short == []
    with pytest.raises(ValueError):
        a3_handovers(t, rsrp, 0, hysteresis_db=40.0)
    with pytest.raises(ValueError):
        a3_handovers(t, rsrp, 0, ttt_s=-1.0)


@pytest.mark.parametrize("sites", [7, 19])
def test_fold_maps_any_point_into_the_wrap_around_deployment(sites):
    """Folding is the torus of the wrap-around cluster: every point, however far (up
    to 10,000 ISDs), lands in a site's hexagon; a point inside stays where it is;
    and translating a point by any combination of wrap vectors does not change its fold
    (TR 36.814 A.2.1.1's images, however many rings away)."""
    from channel_models.site_layouts import HexLayout

    dep = HexLayout(isd_m=500.0, rings={7: 1, 19: 2}[sites], sectors=3)
    rng = np.random.default_rng(1)
    far = rng.uniform(-5e6, 5e6, size=(2000, 2))
    folded = dep.fold(far)
    assert dep.contains(folded).all()
    inside = dep.drop_uniform(2000, rng)
    assert np.allclose(dep.fold(inside), inside, atol=1e-6)
    w = dep.wrap_vectors()
    k = rng.integers(-1000, 1000, size=(2000, 2))
    shifted = inside + k[:, :1] * w[0] + k[:, 1:] * w[1]
    assert np.allclose(dep.fold(shifted), inside, atol=1e-4)


def test_a_folded_trajectory_keeps_its_speed_and_stays_inside():
    from channel_models.mobility import Folded
    from channel_models.site_layouts import HexLayout

    dep = HexLayout(isd_m=200.0, rings=1, sectors=1)
    path = ConstantVelocity((0.0, 0.0), (500 / 3.6 * 0.6, 500 / 3.6 * 0.8))
    torus = Folded(path, dep.fold)
    t = np.linspace(0.0, 3600.0, 5001)
    xy = torus.positions(t)
    assert dep.contains(xy).all()
    assert torus.speed_mps(10.0) == pytest.approx(500 / 3.6)
    # it moves as the path does (to within one fold per step): the steps' lengths hold
    step = np.hypot(*np.diff(xy, axis=0).T)
    folded_steps = step > 400.0  # (a jump to the opposite edge)
    assert np.allclose(step[~folded_steps], 500 / 3.6 * np.diff(t)[~folded_steps])
    assert folded_steps.sum() >= 1


def _a3_reference(t, rsrp, serving, hyst, ttt, state, filter_k):
    """The A3 rule sample by sample (TS 38.331 §5.5.4.4, the L3 filter of §5.5.3.2 with
    X = 200 ms): the rule :func:`a3_handovers` evaluates between handovers at once."""
    out, keep = [], 1.0 - 0.5 ** (filter_k / 4.0)
    entered, target = state.get("entered"), state.get("target", -1)
    filtered, last = state.get("filtered"), state.get("t")
    for k in range(len(t)):
        if filtered is None:
            filtered = rsrp[k]
        else:
            w = keep ** ((t[k] - last) / 0.2)
            filtered = w * filtered + (1.0 - w) * rsrp[k]
        last = t[k]
        row = filtered.copy()
        own = row[serving]
        row[serving] = -np.inf
        best = int(np.argmax(row))
        if row[best] > own + hyst:
            if entered is None or best != target:
                entered, target = t[k], best
            if t[k] - entered >= ttt - 1e-12:
                out.append((t[k], serving, target))
                serving, entered, target = target, None, -1
        else:
            entered, target = None, -1
    state.update(entered=entered, target=target, filtered=filtered, t=last)
    return out


@pytest.mark.parametrize("filter_k", [0, 4, 11])
@pytest.mark.parametrize("ttt", [0.0, 0.16, 0.64])
def test_a3_rule_between_handovers_at_once_is_the_rule_sample_by_sample(filter_k, ttt):
    """Mean-reverting walks of 7 cells' RSRP (600 samples 40 ms apart), cut into
    calls of random lengths (the state carried across): the same handovers at the same
    instants as the rule applied sample by sample, and the same state at the end."""
    rng = np.random.default_rng(filter_k * 10 + int(ttt * 100))
    t = np.arange(1, 601) * 0.04
    rsrp = -90.0 + lfilter([1.0], [1.0, -0.97], rng.normal(0.0, 2.0, (600, 7)), axis=0)
    cuts = np.sort(rng.choice(np.arange(1, 600), 12, replace=False))
    got, want, s_got, s_want = [], [], {}, {}
    serving_got = serving_want = 2
    for a, b in zip([0, *cuts], [*cuts, 600], strict=True):
        ev = a3_handovers(t[a:b], rsrp[a:b], serving_got, 3.0, ttt, s_got, filter_k)
        ref = _a3_reference(t[a:b], rsrp[a:b], serving_want, 3.0, ttt, s_want, filter_k)
        got += ev
        want += ref
        serving_got = ev[-1][2] if ev else serving_got
        serving_want = ref[-1][2] if ref else serving_want
    assert len(want) >= 4
    assert [e[1:] for e in got] == [e[1:] for e in want]
    np.testing.assert_allclose([e[0] for e in got], [e[0] for e in want], rtol=0, atol=1e-12)
    assert (s_got["entered"], s_got["target"]) == (s_want["entered"], s_want["target"])
    np.testing.assert_allclose(s_got["filtered"], s_want["filtered"], rtol=1e-12)
