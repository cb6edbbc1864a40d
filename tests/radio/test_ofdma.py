"""The event-driven OFDMA carrier against analytic instants and a per-slot reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from channel_models.fading import NoFading, RayleighBlockFading
from channel_models.link_budget import shannon_efficiency
from netfl.radio.block_grid import HORIZON_BLOCKS
from netfl.radio.ofdma import OfdmaCarrier

RB_HZ = 180e3
BLOCK_S = 1e-3
SLOT_S = 0.5e-3  # reference slot: half a fading block (numerology 1)
REL = 1e-9


def run_carrier(num_rbs, flows, sessions=(), scheduler="round_robin", fading=None, efficiency=None):
    """flows: (start_s, size_bits, mean_snr, seed, cap); sessions: (start_s, end_s, demand).

    Returns delivery times (by flow index), the carrier, and the flow objects."""
    env = simpy.Environment()
    carrier = OfdmaCarrier(
        env,
        "ul",
        num_rbs,
        RB_HZ,
        fading or RayleighBlockFading(BLOCK_S),
        efficiency or shannon_efficiency,
        scheduler,
    )
    ends: dict[int, float] = {}
    objs: dict[int, object] = {}

    def flow(i, start, size, snr, seed, cap):
        yield env.timeout(start)
        f = carrier.send(size, snr, np.random.default_rng(seed), cap_rbs=cap)
        objs[i] = f
        yield f.done
        ends[i] = env.now

    def session(start, end, demand):
        yield env.timeout(start)
        h = carrier.add_session(demand)
        yield env.timeout(end - start)
        carrier.remove_session(h)

    for s in sessions:
        env.process(session(*s))
    for i, f in enumerate(flows):
        env.process(flow(i, *f))
    env.run()
    return ends, carrier, objs


# -- a second, brute-force implementation: step every slot ---------------------------------


def ref_equal_share(n_rbs, demands):
    """Plain water-filling: repeatedly give everyone an equal share, capped at their demand."""
    share = [0.0] * len(demands)
    active = list(range(len(demands)))
    left = float(n_rbs)
    while active and left > 1e-12:
        each = left / len(active)
        capped = [i for i in active if demands[i] - share[i] <= each]
        if not capped:
            for i in active:
                share[i] += each
            break
        for i in capped:
            left -= demands[i] - share[i]
            share[i] = demands[i]
        active = [i for i in active if i not in capped]
    return share


def ref_fcfs(n_rbs, demands):
    left, out = float(n_rbs), []
    for d in demands:
        out.append(min(d, left))
        left -= out[-1]
    return out


def reference(num_rbs, flows, sessions, scheduler):
    """Step slot by slot; within a slot, shares change only when a flow completes."""
    fading = RayleighBlockFading(BLOCK_S)
    gains = {}
    for i, (start, _size, _snr, seed, _cap) in enumerate(flows):
        k0 = int(math.floor(start / BLOCK_S))
        gains[i] = (k0, fading.sample(np.random.default_rng(seed), 200_000))
    remaining = {i: f[1] for i, f in enumerate(flows)}
    ends = {}
    step = 0
    while len(ends) < len(flows):
        t, t_end = step * SLOT_S, (step + 1) * SLOT_S
        block = int(math.floor((t + 1e-12) / BLOCK_S))
        while True:  # sub-steps: a completion inside the slot frees RBs for the rest of it
            ents = [("s", s[0], s[2]) for s in sessions if s[0] <= t + 1e-12 < s[1] - 1e-12]
            ents += [
                ("f", f[0], f[4], i)
                for i, f in enumerate(flows)
                if f[0] <= t + 1e-12 and i not in ends
            ]
            ents.sort(key=lambda e: e[1])
            shares = (ref_fcfs if scheduler == "fcfs" else ref_equal_share)(
                num_rbs, [e[2] for e in ents]
            )
            rates = {}
            for e, share in zip(ents, shares, strict=True):
                if e[0] == "f" and share > 0:
                    k0, g = gains[e[3]]
                    rates[e[3]] = share * RB_HZ * math.log2(1 + flows[e[3]][2] * g[block - k0])
            dt = min([remaining[i] / r for i, r in rates.items()] + [t_end - t])
            for i, r in rates.items():
                remaining[i] -= r * dt
                if remaining[i] <= 1e-9 * flows[i][1]:
                    ends[i] = t + dt
            t += dt
            if t >= t_end - 1e-15 or len(ends) == len(flows):
                break
        step += 1
    return ends


flow_st = st.tuples(
    st.integers(0, 20).map(lambda k: k * SLOT_S),  # start on a slot boundary
    st.floats(5e4, 2e6),  # bits
    st.floats(0.5, 1000.0),  # mean SNR (linear)
    st.integers(0, 10_000),  # fading seed
    st.sampled_from([math.inf, 3.0, 10.0]),  # RB cap
)
session_st = st.tuples(
    st.integers(0, 20), st.integers(1, 40), st.sampled_from([1.0, 2.0, 5.0])
).map(lambda s: (s[0] * SLOT_S, (s[0] + s[1]) * SLOT_S, s[2]))


@settings(max_examples=150, deadline=None)
@given(
    flows=st.lists(flow_st, min_size=1, max_size=5),
    sessions=st.lists(session_st, max_size=6),
    scheduler=st.sampled_from(["round_robin", "fcfs"]),
)
def test_engine_matches_per_slot_reference_within_one_slot(flows, sessions, scheduler):
    num_rbs = 12
    got, _, _ = run_carrier(num_rbs, flows, sessions, scheduler)
    want = reference(num_rbs, flows, sessions, scheduler)
    for i in range(len(flows)):
        # the issue asks for one slot; with arrivals on slot boundaries both are exact
        assert abs(got[i] - want[i]) <= 1e-6 * SLOT_S + 1e-9 * got[i], (i, got[i], want[i])


def test_equal_transfers_end_together_at_the_analytic_instant():
    """k flows of S bits on N RBs, no fading, SNR 3 (2 bit/s/Hz): all end at k·S/(N·B·2)."""
    k, size, n = 4, 3.6e6, 50
    got, _, _ = run_carrier(
        n, [(0.0, size, 3.0, i, math.inf) for i in range(k)], fading=NoFading(BLOCK_S)
    )
    expected = k * size / (n * RB_HZ * 2.0)
    assert all(t == pytest.approx(expected, rel=REL) for t in got.values())


def test_session_holding_rbs_slows_a_transfer_exactly():
    """A session holding 2 of 10 RBs for the first 0.1 s (equal share: min(2, 10/2))."""
    size = 10 * RB_HZ * 2.0 * 1.0  # 1 s alone on 10 RBs at 2 bit/s/Hz
    got, _, _ = run_carrier(
        10, [(0.0, size, 3.0, 0, math.inf)], [(0.0, 0.1, 2.0)], fading=NoFading(BLOCK_S)
    )
    # 0–0.1 s on 8 RBs, then 10 RBs: 1 s + 0.1·(2/10) = 1.02 s
    assert got[0] == pytest.approx(1.02, rel=REL)


def test_no_rb_double_booked_and_rb_time_conserved():
    flows = [
        (0.0, 2e6, 20.0, 1, math.inf),
        (0.002, 1e6, 5.0, 2, 4.0),
        (0.004, 3e6, 50.0, 3, math.inf),
    ]
    sessions = [(0.0, 0.05, 3.0), (0.001, 0.2, 5.0), (0.01, 0.03, 2.0)]
    for scheduler in ("round_robin", "fcfs"):
        ends, carrier, objs = run_carrier(12, flows, sessions, scheduler)
        occ = np.array(carrier.occupancy)
        assert np.all(occ[:, 1] + occ[:, 2] <= 12 + 1e-9)
        # ∫ flow RBs dt from the occupancy log equals the flows' own RB-seconds
        t, flow_rbs = occ[:, 0], occ[:, 2]
        integral = float(np.sum(flow_rbs[:-1] * np.diff(t)))
        assert integral == pytest.approx(sum(f.rb_seconds for f in objs.values()), rel=1e-9)
        assert all(f.remaining_bits == 0.0 for f in objs.values())


@settings(max_examples=30, deadline=None)
@given(
    flows=st.lists(flow_st, min_size=1, max_size=4),
    base=st.lists(session_st, max_size=4),
    extra=st.lists(session_st, min_size=1, max_size=4),
    scheduler=st.sampled_from(["round_robin", "fcfs"]),
)
def test_more_cue_load_never_speeds_a_transfer_up(flows, base, extra, scheduler):
    light, _, _ = run_carrier(12, flows, base, scheduler)
    heavy, _, _ = run_carrier(12, flows, base + extra, scheduler)
    for i in light:
        assert heavy[i] >= light[i] - 1e-9


def test_fading_blocks_create_no_events():
    """A long transfer over thousands of fading blocks wakes up once per horizon at most."""
    env = simpy.Environment()
    carrier = OfdmaCarrier(env, "ul", 2, RB_HZ, RayleighBlockFading(BLOCK_S), shannon_efficiency)
    f = carrier.send(5e6, 10.0, np.random.default_rng(0))
    steps = 0
    while not f.done.processed:
        env.step()
        steps += 1
    blocks = env.now / BLOCK_S
    assert blocks > 2000
    # one wake-up per drawn horizon at most, never one per block
    assert steps <= blocks / HORIZON_BLOCKS + 5


def test_mean_snr_over_the_transfer():
    """No fading: the time-average SNR is SNR̄ exactly; Rayleigh: close to SNR̄·E|h|² = SNR̄."""
    _, carrier, objs = run_carrier(4, [(0.0007, 3e6, 50.0, 0, math.inf)], fading=NoFading(BLOCK_S))
    f = objs[0]
    assert carrier.mean_snr(f, f.done.env.now - f.start_s) == pytest.approx(50.0, rel=1e-9)
    _, carrier, objs = run_carrier(1, [(0.0003, 2e8, 50.0, 1, math.inf)])
    f = objs[0]
    airtime = f.done.env.now - f.start_s
    assert airtime > 5 * HORIZON_BLOCKS * BLOCK_S  # spans several horizons
    assert carrier.mean_snr(f, airtime) == pytest.approx(50.0, rel=0.05)


def test_changes_of_one_instant_are_allocated_together(monkeypatch):
    """Flows and a session starting at the same instant: one re-allocation and one
    completion search for all of them, and the same delivery instants as the
    analytic equal share (k flows + a session of d RBs on N RBs, no fading)."""
    calls = {"allocate": 0, "search": 0}
    allocate, search = OfdmaCarrier._allocate, OfdmaCarrier._min_finish_time

    def counted_allocate(self):
        calls["allocate"] += 1
        return allocate(self)

    def counted_search(self):
        calls["search"] += 1
        return search(self)

    monkeypatch.setattr(OfdmaCarrier, "_allocate", counted_allocate)
    monkeypatch.setattr(OfdmaCarrier, "_min_finish_time", counted_search)
    k, size, n, d = 8, 1.8e6, 50, 2.0
    env = simpy.Environment()
    carrier = OfdmaCarrier(env, "dl", n, RB_HZ, NoFading(BLOCK_S), shannon_efficiency)
    carrier.add_session(d)
    start_calls = dict(calls)
    ends = []

    def flow(seed):
        yield env.timeout(0.25)
        f = carrier.send(size, 3.0, np.random.default_rng(seed))
        yield f.done
        ends.append(env.now)

    def session():
        yield env.timeout(0.25)
        carrier.add_session(d)

    for i in range(k):
        env.process(flow(i))
    env.process(session())
    env.run(until=0.25 + 1e-9)
    assert calls["allocate"] - start_calls["allocate"] == 1
    assert calls["search"] - start_calls["search"] == 1
    env.run()
    # each of the k flows gets (N - 2d)/k RBs at 2 bit/s/Hz until they all end together
    expected = 0.25 + size / ((n - 2 * d) / k * RB_HZ * 2.0)
    assert ends == pytest.approx([expected] * k, rel=REL)


def test_proportional_fair_average_of_a_new_flow_starts_at_its_arrival():
    """A flow joining mid-transfer enters with R̄ = 1 bit/s (top priority), not
    decayed over the blocks before it arrived; the others' averages are brought up
    to its arrival first."""
    env = simpy.Environment()
    carrier = OfdmaCarrier(
        env,
        "ul",
        10,
        RB_HZ,
        RayleighBlockFading(BLOCK_S),
        shannon_efficiency,
        "proportional_fair",
    )
    seen = {}

    def run():
        carrier.send(5e6, 10.0, np.random.default_rng(0))
        yield env.timeout(0.0505)  # 50 blocks in, mid-block
        carrier.send(5e6, 10.0, np.random.default_rng(1))
        yield env.timeout(0.0)  # after this instant's allocation
        seen["avg"] = carrier.grid.scalar("pf_avg")[:2].copy()
        seen["block"] = carrier.scheduler._block

    env.process(run())
    env.run(until=0.051)
    assert seen["avg"][1] == 1.0
    assert seen["avg"][0] > 1e5  # the first flow's served rate, averaged over 50 blocks
    assert seen["block"] == 50


def test_three_level_completion_search_finds_the_direct_search_instants(monkeypatch):
    """Large grids use a coarse pass every 64th block, a middle one every 8th and a fine
    search in the brackets that can hold the minimum: forced onto a small run, it gives
    exactly the direct search's instants."""
    from netfl.radio import completion_search

    flows = [
        (0.0005 * i, float(size), snr, i, cap)
        for i, (size, snr, cap) in enumerate(
            [(4e6, 30.0, math.inf), (1e5, 3.0, 2.0), (9e6, 300.0, math.inf), (2e6, 1.0, 5.0)] * 3
        )
    ]
    sessions = [(0.0, 0.3, 2.0), (0.01, 0.05, 4.0)]
    direct, _, _ = run_carrier(12, flows, sessions)
    monkeypatch.setattr(completion_search, "_DIRECT_SEARCH_LIMIT", 0)
    two_level, _, _ = run_carrier(12, flows, sessions)
    assert two_level == direct
    assert max(direct.values()) > 3 * HORIZON_BLOCKS * BLOCK_S  # beyond several horizons


def _check_contenders(cum, bits, bmax, rows, target, j, w, kept):
    """Against a search of every row: each row's kept bound covers the bits of every
    column up to its completion, and the rows that end first are among ``kept``."""
    col = j + (cum[rows, j + 1 : w + 1] >= target[rows, None]).argmax(axis=1)
    col = np.minimum(col, w - 1)
    for r, c in zip(rows, col, strict=True):
        assert bits[r, j : c + 1].max() <= bmax[r]
    per = bits[rows, col]
    frac = np.where(per > 0, (target[rows] - cum[rows, col]) / np.where(per > 0, per, 1), 0)
    finish = col + np.clip(frac, 0.0, 1.0)
    assert set(rows[finish == finish.min()].tolist()) <= set(kept.tolist())


@pytest.mark.parametrize("table", ["shannon", "cqi"])
def test_completion_search_keeps_every_flow_that_may_end_first(monkeypatch, table):
    """Large grids search only the flows whose bound (their position now plus what
    remains at the most bits a column carries) is not past one flow's exact completion:
    at every search the flows that end first (by a search of every flow) are among those
    kept, most flows are not read, and the instants are the direct search's."""
    from channel_models.link_budget import cqi_efficiency
    from netfl.radio import completion_search

    efficiency = cqi_efficiency if table == "cqi" else None
    rng = np.random.default_rng(7)
    flows = [
        (
            float(rng.uniform(0.0, 0.1)),
            float(rng.uniform(1e4, 3e5)),
            float(10 ** rng.uniform(0.0, 2.5)),
            i,
            float(rng.choice([math.inf, 2.0, 6.0])),
        )
        for i in range(80)
    ]
    sessions = [(0.0, 0.3, 2.0), (0.05, 0.4, 4.0)]
    direct, _, _ = run_carrier(25, flows, sessions, efficiency=efficiency)
    searched = completion_search.contenders
    kept_part = []

    def checked(cum, bits, bmax, rows, need, target, x, j, w):
        kept = searched(cum, bits, bmax, rows, need, target, x, j, w)
        _check_contenders(cum, bits, bmax, rows, target, j, w, kept)
        kept_part.append((len(kept), len(rows)))
        return kept

    monkeypatch.setattr(completion_search, "contenders", checked)
    monkeypatch.setattr(completion_search, "_DIRECT_SEARCH_LIMIT", 0)
    bounded, _, _ = run_carrier(25, flows, sessions, efficiency=efficiency)
    assert bounded == direct
    kept, searched_rows = np.array(kept_part).sum(axis=0)
    assert len(kept_part) > 100 and kept < 0.5 * searched_rows


@pytest.mark.parametrize("table", ["shannon", "cqi"])
def test_completion_search_bound_holds_through_power_control_and_rescaling(monkeypatch, table):
    """80 flows, most of them power-controlled (their per-RB SNR re-rated at every change
    of their share), their SNRs rescaled 0.01–300× at random instants (interference
    elsewhere): at every search each flow's kept bound covers the bits of every column
    up to its completion, the flows that end first are kept, and the instants are the
    direct search's."""
    from channel_models.link_budget import cqi_efficiency
    from netfl.radio import completion_search

    efficiency = cqi_efficiency if table == "cqi" else shannon_efficiency

    def run():
        env = simpy.Environment()
        carrier = OfdmaCarrier(
            env, "ul", 25, RB_HZ, RayleighBlockFading(BLOCK_S), efficiency, "round_robin"
        )
        rng = np.random.default_rng(3)
        ends = {}

        def flow(i):
            yield env.timeout(float(rng.uniform(0.0, 0.1)))
            snr = float(10 ** rng.uniform(0.0, 2.5))
            total = float(snr * rng.uniform(0.5, 8.0)) if rng.random() < 0.6 else math.inf
            f = carrier.send(
                float(rng.uniform(1e4, 3e5)), snr, np.random.default_rng(i), snr_total=total
            )
            yield f.done
            ends[i] = env.now

        def interference():
            r = np.random.default_rng(99)
            for _ in range(60):
                yield env.timeout(float(r.uniform(0.001, 0.01)))
                pick = [f for f in carrier.flows if r.random() < 0.3]
                if pick:
                    carrier.rescale_snr(pick, r.uniform(0.01, 300.0, len(pick)))

        for i in range(80):
            env.process(flow(i))
        env.process(interference())
        env.run()
        return ends

    direct = run()
    searched = completion_search.contenders
    calls = []

    def checked(cum, bits, bmax, rows, need, target, x, j, w):
        kept = searched(cum, bits, bmax, rows, need, target, x, j, w)
        _check_contenders(cum, bits, bmax, rows, target, j, w, kept)
        calls.append(len(rows))
        return kept

    monkeypatch.setattr(completion_search, "contenders", checked)
    monkeypatch.setattr(completion_search, "_DIRECT_SEARCH_LIMIT", 0)
    assert run() == direct
    assert len(calls) > 100 and max(calls) >= 10


def _pf_vs_rr(num_flows, sessions=()):
    flows = [(0.0, 2e7, 10.0, seed, math.inf) for seed in range(num_flows)]
    rr, _, rr_objs = run_carrier(20, flows, sessions, "round_robin")
    pf, carrier, pf_objs = run_carrier(20, flows, sessions, "proportional_fair")
    return rr, pf, rr_objs, pf_objs, carrier


def test_proportional_fair_exploits_multiuser_diversity_fairly():
    """Equal mean SNRs under Rayleigh fading: PF rides the peaks, so every transfer
    ends sooner than under round robin, and RB time stays evenly spread."""
    rr, pf, _, pf_objs, carrier = _pf_vs_rr(4)
    assert max(pf.values()) < 0.85 * max(rr.values())
    rb_s = np.array([f.rb_seconds for f in pf_objs.values()])
    assert rb_s.max() / rb_s.min() < 1.15
    occ = np.array(carrier.occupancy)
    assert np.all(occ[:, 1] + occ[:, 2] <= 20 + 1e-9)


def test_proportional_fair_leaves_cue_sessions_their_round_robin_share():
    sessions = [(0.0, 10.0, 2.0), (0.0, 10.0, 2.0), (0.001, 10.0, 1.0)]
    _, _, _, _, pf_carrier = _pf_vs_rr(3, sessions)
    _, rr_carrier, _ = run_carrier(
        20, [(0.0, 2e7, 10.0, s, math.inf) for s in range(3)], sessions, "round_robin"
    )
    # while all flows are active, sessions hold 5 RBs under both schedulers
    for occ in (pf_carrier.occupancy, rr_carrier.occupancy):
        held = [s for t, s, f in occ if 0.001 <= t < 0.5]
        assert held and all(h == pytest.approx(5.0) for h in held)


def test_proportional_fair_with_one_flow_equals_round_robin():
    flows = [(0.0, 5e6, 10.0, 3, math.inf)]
    rr, _, _ = run_carrier(10, flows, scheduler="round_robin")
    pf, _, _ = run_carrier(10, flows, scheduler="proportional_fair")
    assert pf[0] == pytest.approx(rr[0], rel=1e-12)


def test_undeliverable_transfer_is_a_clear_error_not_an_endless_run():
    from channel_models.link_budget import cqi_efficiency
    from netfl.errors import LinkBudgetError

    env = simpy.Environment()
    carrier = OfdmaCarrier(env, "uplink", 10, RB_HZ, NoFading(BLOCK_S), cqi_efficiency)
    with pytest.raises(LinkBudgetError, match="mean SNR -20.0 dB can never be delivered"):
        carrier.send(1e6, 0.01, np.random.default_rng(0))
    # with Rayleigh fading a rare peak carries it: allowed (slow, but it ends)
    faded = OfdmaCarrier(env, "uplink", 10, RB_HZ, RayleighBlockFading(BLOCK_S), cqi_efficiency)
    f = faded.send(1e4, 0.05, np.random.default_rng(0))
    env.run(until=f.done)
    assert f.remaining_bits == 0.0


@pytest.mark.parametrize("start_s", [16.6, 1e4, 3e6])
def test_tiny_messages_late_in_time_are_delivered(start_s):
    """A 32-bit control message at a high rate, late on the clock: its transfer time is
    a few ulps of the clock, and it must complete (no timer re-armed at "now" forever)."""
    sizes = [32.0, 320.0, 1e6]
    flows = [(start_s, size, 1e4, 7 + i, math.inf) for i, size in enumerate(sizes)]
    ends, carrier, _ = run_carrier(100, flows, fading=NoFading(BLOCK_S))
    assert len(ends) == 3 and not carrier.flows
    rate_bps = 100 * RB_HZ * shannon_efficiency(np.array([1e4]))[0] / 3  # three flows share
    assert ends[0] - start_s == pytest.approx(32.0 / rate_bps, rel=1e-3, abs=1e-9)


def test_processor_sharing_delivers_tiny_flows_late_in_time():
    from netfl.radio.sharing import ProcessorSharing

    env = simpy.Environment()
    medium = ProcessorSharing(env, 1e11)
    done = []

    def go():
        yield env.timeout(2e6)
        yield medium.send(32.0)
        done.append(env.now)

    env.process(go())
    env.run()
    assert done and done[0] == pytest.approx(2e6 + 3.2e-10, abs=1e-8)


def _two_flows_one_withdrawn(t_w):
    """Two equal flows (SNR 3: 2 bit/s/Hz) on 10 RBs; flow 0 is withdrawn at ``t_w``."""
    env = simpy.Environment()
    carrier = OfdmaCarrier(env, "ul", 10, RB_HZ, NoFading(BLOCK_S), shannon_efficiency)
    size = 10 * RB_HZ * 2.0  # 1 s alone on all 10 RBs
    a = carrier.send(size, 3.0, np.random.default_rng(0))
    b = carrier.send(size, 3.0, np.random.default_rng(1))
    left = {}

    def withdraw():
        yield env.timeout(t_w)
        left["a"] = carrier.withdraw(a)

    env.process(withdraw())
    env.run(until=b.done)
    return env, carrier, a, b, left["a"], size


def test_a_withdrawn_flow_keeps_its_bits_and_frees_its_rbs_at_once():
    """Half the RBs each until t_w: a has delivered t_w·5 RBs' worth and keeps the rest;
    b then runs alone on all 10 RBs, so it ends at t_w + (S − S·t_w/2)/(10 RB rate)."""
    t_w = 0.3
    env, carrier, a, b, left, size = _two_flows_one_withdrawn(t_w)
    assert left == pytest.approx(size * (1 - t_w / 2), rel=REL)
    assert a.remaining_bits == left and not a.done.triggered
    assert env.now == pytest.approx(t_w + (size - size * t_w / 2) / size, rel=REL)
    # its accounting up to the withdrawal: 5 RBs for t_w, on air all along
    assert a.rb_seconds == pytest.approx(5 * t_w, rel=REL)
    assert a.airtime_s == pytest.approx(t_w, rel=REL)
    assert a.snr_seconds == pytest.approx(3.0 * t_w, rel=REL)
    assert carrier.flows == [] and carrier.held() == (0.0, 0.0)


def test_relink_changes_a_flows_rate_from_now_on():
    """SNR 3 (2 bit/s/Hz) for 0.25 s, then SNR 15 (4 bit/s/Hz): the rest at twice the rate."""
    env = simpy.Environment()
    carrier = OfdmaCarrier(env, "dl", 10, RB_HZ, NoFading(BLOCK_S), shannon_efficiency)
    size = 10 * RB_HZ * 2.0
    f = carrier.send(size, 3.0, np.random.default_rng(0))

    def better():
        yield env.timeout(0.25)
        carrier.relink([f], [15.0], [math.inf], [1.0])

    env.process(better())
    env.run(until=f.done)
    assert env.now == pytest.approx(0.25 + 0.75 / 2, rel=REL)
    assert f.mean_snr == 15.0
    assert f.snr_seconds == pytest.approx(3.0 * 0.25 + 15.0 * 0.375, rel=REL)


def test_relink_moves_a_power_limited_flows_rb_cap():
    """Power control: a flow whose SNR with all power in one RB is 10× the lowest usable
    SNR holds at most 10 RBs; its UE comes 4× closer in gain: at most 40."""
    env = simpy.Environment()
    carrier = OfdmaCarrier(env, "ul", 100, RB_HZ, NoFading(BLOCK_S), _floor_efficiency)
    low = carrier.min_usable_snr
    f = carrier.send(1e9, 100.0, np.random.default_rng(0), snr_total=10 * low)
    assert f.cap == pytest.approx(10.0)
    env.run(until=0.001)
    assert carrier.held()[1] == pytest.approx(10.0)  # (the flow holds its cap)
    carrier.relink([f], [100.0], [40 * low], [1.0])
    env.run(until=0.002)
    assert f.cap == pytest.approx(40.0) and carrier.held()[1] == pytest.approx(40.0)


def _floor_efficiency(snr):
    """Shannon above an SNR floor of 0.1 (−10 dB), nothing below (a lowest CQI)."""
    snr = np.asarray(snr, dtype=float)
    return np.where(snr >= 0.1, np.log2(1.0 + snr), 0.0)


class _RampPath:
    """A link whose per-RB SNR steps up every 10 blocks (a UE driving towards its BS):
    psd_k = 2^(k // 10) · 3, and with power control all power in one RB 4× that (so
    the power limit binds: min(4·psd/M, psd) at M > 4 RBs)."""

    def __init__(self, pc: bool):
        self.pc = pc

    def psd(self, blocks):
        return 3.0 * 2.0 ** (np.asarray(blocks) // 10)

    def terms(self, blocks):
        psd = self.psd(blocks)
        return psd, (4.0 * psd if self.pc else np.full(psd.shape, np.inf))


@pytest.mark.parametrize("pc", [False, True])
def test_a_path_flow_is_rated_block_by_block_at_its_paths_snr(pc):
    """Without fading, a flow along a path delivers Σ_k share·B·SE(SNR_k)·block: its
    completion instant by hand, where the per-RB SNR of block k is the path's (power
    control: min(total_k/M, psd_k) at its share M of RBs); another flow joining halfway
    halves its share and the path is re-rated at the new share; no event per block; the
    SNR-time integral is the path's."""
    env = simpy.Environment()
    carrier = OfdmaCarrier(env, "ul", 10, RB_HZ, NoFading(BLOCK_S), shannon_efficiency)
    path = _RampPath(pc)
    size = 2.5e6
    f = carrier.send(size, 3.0, np.random.default_rng(0), path=path)

    def other():
        yield env.timeout(0.0155)
        carrier.send(1e12, 10.0, np.random.default_rng(1))

    env.process(other())
    events = 0
    while not f.done.triggered:
        env.step()
        events += 1
    assert events < 10  # (the blocks cost no events)

    def snr(k, share):
        p = 3.0 * 2.0 ** (k // 10)
        return min(4.0 * p / share, p) if pc else p

    # by hand: 10 RBs alone until 15.5 ms, then 5
    t, bits, acc = 0.0, 0.0, 0.0
    while True:
        k = int(math.floor(t / BLOCK_S + 1e-12))
        share = 10.0 if t < 0.0155 - 1e-12 else 5.0
        nxt = min((k + 1) * BLOCK_S, 0.0155 if t < 0.0155 - 1e-12 else math.inf)
        rate = share * RB_HZ * float(shannon_efficiency(np.array([snr(k, share)]))[0])
        if bits + rate * (nxt - t) >= size:
            end = t + (size - bits) / rate
            acc += snr(k, share) * (end - t)
            break
        bits += rate * (nxt - t)
        acc += snr(k, share) * (nxt - t)
        t = nxt
    assert env.now == pytest.approx(end, rel=REL)
    assert f.snr_seconds == pytest.approx(acc, rel=1e-9)
