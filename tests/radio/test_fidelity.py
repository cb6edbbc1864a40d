"""Radio fidelity: per-allocation uplink power control, energy by state, TDD, multicast.

Every expected value is computed by hand from the formulas (no fading, Shannon),
and compared with exact SimPy delivery instants.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import simpy

from channel_models.profile_catalog import get_channel_profile
from netfl.core.records import Recorder
from netfl.radio.fixed_rate_radio import FixedRateRadio
from netfl.radio.ofdma_radio import OfdmaRadio
from netfl.radio.radio_energy import BsPowerModel
from tests.conftest import make_node

SIZE_BITS = 4e6
REL = 1e-9

# A FedDif-sized carrier without fading, with open-loop power control.
PC = {"model": "open_loop", "p0_dbm": -70.0, "alpha": 1.0}


def profile(**overrides):
    base = {"fading": {"model": "none", "coherence_time_s": 1e-3}}
    return get_channel_profile("feddif").with_overrides(**{**base, **overrides})


def make_radio(prof, scheduler="round_robin", bs=None, bs_power=None, seed=None):
    """An OfdmaRadio whose k-th transfer fades from generator k (of ``(seed, k)``)."""
    env = simpy.Environment()
    rec = Recorder()
    rng = (
        (lambda k: np.random.default_rng(k))
        if seed is None
        else (lambda k: np.random.default_rng((seed, k)))
    )
    radio = OfdmaRadio(env, rec, prof, scheduler, rng, bs=bs, bs_power=bs_power)
    return env, rec, radio


def ues_on_circle(n: int, radius_m: float):
    ues = []
    for i in range(n):
        ue = make_node(f"ue{i}", index=i)
        a = 2 * math.pi * i / n
        ue.position_m = np.array([radius_m * math.cos(a), radius_m * math.sin(a)])
        ues.append(ue)
    return ues


def hand_uplink_rate_bps(prof, loss_db: float, num_rbs: float) -> float:
    """TS 38.213 §7.1.1 by hand: P = min(Pcmax, P0 + 10log10(2^mu M) + alpha PL) over M RBs."""
    p_dbm = min(
        prof.ue_tx_power_dbm,
        PC["p0_dbm"] + 10 * math.log10(2**prof.numerology * num_rbs) + PC["alpha"] * loss_db,
    )
    noise_rb_w = 10 ** ((-174 + prof.noise_figure_bs_db) / 10) / 1e3 * prof.rb_bandwidth_hz
    snr = 10 ** ((p_dbm - loss_db) / 10) / 1e3 / num_rbs / noise_rb_w
    return num_rbs * prof.rb_bandwidth_hz * math.log2(1 + snr)


def test_shared_uplink_with_power_control_beats_ten_single_uploads():
    """10 equal-SNR PUEs under round robin: each holds N/10 RBs at 10x the per-RB power
    a lone PUE spreads over N RBs, so they finish sooner than 10 single uploads in a row."""
    prof = profile(uplink_power_control=PC)
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    env, rec, radio = make_radio(prof)
    (single,) = ues_on_circle(1, 150.0)
    radio.transfer(single, bs, SIZE_BITS, "up")
    env.run()
    t_single = rec.transfers[0].duration_s
    loss_db = radio.link_loss_db(single, bs)
    assert t_single == pytest.approx(SIZE_BITS / hand_uplink_rate_bps(prof, loss_db, 106), rel=REL)

    env, rec, radio = make_radio(prof)
    ues = ues_on_circle(10, 150.0)
    for ue in ues:
        radio.transfer(ue, bs, SIZE_BITS, "up")
    env.run()
    want = SIZE_BITS / hand_uplink_rate_bps(prof, loss_db, 10.6)
    ends = [r.end_s for r in rec.transfers]
    assert ends == pytest.approx([want] * 10, rel=REL)
    assert want < 10 * t_single
    # without power control (FedDif full-carrier formula) sharing gains nothing
    env, rec, radio = make_radio(profile())
    for ue in ues:
        radio.transfer(ue, bs, SIZE_BITS, "up")
    env.run()
    env1, rec1, radio1 = make_radio(profile())
    radio1.transfer(ues[0], bs, SIZE_BITS, "up")
    env1.run()
    assert rec.transfers[-1].end_s == pytest.approx(10 * rec1.transfers[0].duration_s, rel=REL)


def test_power_limit_follows_the_share_as_others_leave():
    """A long upload's per-RB SNR is recomputed when a short one ends (shares change)."""
    prof = profile(uplink_power_control=PC)
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    env, rec, radio = make_radio(prof)
    a, b = ues_on_circle(2, 150.0)
    radio.transfer(a, bs, 4 * SIZE_BITS, "long")
    radio.transfer(b, bs, SIZE_BITS, "short")
    env.run()
    loss_db = radio.link_loss_db(a, bs)
    r_half = hand_uplink_rate_bps(prof, loss_db, 53)
    r_full = hand_uplink_rate_bps(prof, loss_db, 106)
    t1 = SIZE_BITS / r_half
    t2 = t1 + (4 * SIZE_BITS - SIZE_BITS) / r_full
    ends = {r.kind: r.end_s for r in rec.transfers}
    assert ends["short"] == pytest.approx(t1, rel=REL)
    assert ends["long"] == pytest.approx(t2, rel=REL)


def test_queued_transfer_pays_airtime_tx_and_waiting_power():
    """FCFS: the second upload waits for the first; it pays tx power only while it holds RBs."""
    prof = profile()
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    env, rec, radio = make_radio(prof, "fcfs")
    a, b = ues_on_circle(2, 120.0)
    radio.transfer(a, bs, SIZE_BITS, "first")
    radio.transfer(b, bs, SIZE_BITS, "second")
    env.run()
    first, second = sorted(rec.transfers, key=lambda r: r.end_s)
    assert first.airtime_s == pytest.approx(first.duration_s, rel=REL)
    wait = first.end_s
    assert second.airtime_s == pytest.approx(second.duration_s - wait, rel=1e-9)
    c = b.compute
    assert second.tx_energy_j == pytest.approx(
        second.airtime_s * c.tx_power_w + wait * c.radio_wait_power_w, rel=1e-9
    )
    assert b.energy.wait_s == pytest.approx(wait, rel=1e-9)
    assert b.energy.tx_j == pytest.approx(second.airtime_s * c.tx_power_w, rel=1e-9)


def test_rrc_tail_is_cut_by_the_next_transfer_and_charged_once():
    env, rec = simpy.Environment(), Recorder()
    radio = FixedRateRadio(env, rec)
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    ue = make_node("ue0")
    tail_s, p_tail = ue.compute.rrc_tail_s, ue.compute.rrc_tail_power_w
    assert tail_s > 3.0

    def proc():
        yield radio.transfer(ue, bs, 5e6, "a")  # 1 s on 4g_lte's 5 Mbit/s uplink
        yield env.timeout(3.0)  # shorter than the tail: 3 s of tail
        yield radio.transfer(ue, bs, 5e6, "b")
        yield env.timeout(2 * tail_s)  # longer: a full tail

    env.process(proc())
    env.run()
    radio.settle()
    radio.settle()  # idempotent
    assert ue.energy.tail_s == pytest.approx(3.0 + tail_s, rel=1e-12)
    assert ue.energy.tail_j == pytest.approx((3.0 + tail_s) * p_tail, rel=1e-12)


def test_bs_energy_depends_on_load_not_on_the_number_of_flows():
    """One downlink flow of 4S or four of S on round robin: same busy time, full load, same J."""
    prof = profile()
    model = BsPowerModel(p0_w=130.0, delta_p=4.7, max_tx_power_w=20.0, num_trx=1)
    energies, times = [], []
    for n_flows in (1, 4):
        bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
        env, rec, radio = make_radio(prof, bs=bs, bs_power=model)
        ues = ues_on_circle(4, 120.0)
        for ue in ues[:n_flows]:
            radio.transfer(bs, ue, 4 * SIZE_BITS / n_flows, "down")
        env.run()
        radio.settle()
        energies.append(bs.energy.bs_radio_j)
        times.append(env.now)
    assert times[0] == pytest.approx(times[1], rel=REL)
    assert energies[0] == pytest.approx(energies[1], rel=1e-9)
    assert energies[0] == pytest.approx(model.input_power_w(1.0) * times[0], rel=1e-9)
    # an uplink-only interval is charged at zero downlink load
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    env, rec, radio = make_radio(prof, bs=bs, bs_power=model)
    (ue,) = ues_on_circle(1, 120.0)
    radio.transfer(ue, bs, SIZE_BITS, "up")
    env.run()
    radio.settle()
    assert bs.energy.bs_radio_j == pytest.approx(model.input_power_w(0.0) * env.now, rel=1e-9)


def test_tdd_uplink_capacity_is_the_slot_fraction_of_fdd():
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    (ue,) = ues_on_circle(1, 100.0)
    durations = {}
    for duplex in ("fdd", "tdd"):
        prof = profile(duplex=duplex, tdd_pattern="DDDSU", special_slot_symbols=(10, 2, 2))
        env, rec, radio = make_radio(prof)
        radio.transfer(ue, bs, SIZE_BITS, "up")
        radio.transfer(bs, ue, SIZE_BITS, "down")
        env.run()
        durations[duplex] = {r.kind: r.duration_s for r in rec.transfers}
    ul_fraction = (14 + 2) / (5 * 14)
    dl_fraction = (3 * 14 + 10) / (5 * 14)
    assert durations["tdd"]["up"] == pytest.approx(durations["fdd"]["up"] / ul_fraction, rel=REL)
    assert durations["tdd"]["down"] == pytest.approx(
        durations["fdd"]["down"] / dl_fraction, rel=REL
    )


def test_multicast_takes_the_weakest_receivers_unicast_time():
    prof = profile()
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    ues = ues_on_circle(3, 50.0)
    ues[2].position_m = np.array([0.0, 240.0])  # the weakest
    unicast = []
    for ue in ues:
        env, rec, radio = make_radio(prof)
        radio.transfer(bs, ue, SIZE_BITS, "down")
        env.run()
        unicast.append(rec.transfers[0].duration_s)
    env, rec, radio = make_radio(prof)
    proc = radio.broadcast(bs, ues, SIZE_BITS, "model_down", num_models=1)
    env.run()
    records = proc.value
    assert [r.dst for r in records] == ["ue0", "ue1", "ue2"]
    assert {r.multicast_group for r in records} == {1}
    assert records[0].duration_s == pytest.approx(max(unicast), rel=REL)
    assert sum(r.num_models for r in records) == 3
    # fixed rate: the smallest downlink rate
    env, rec = simpy.Environment(), Recorder()
    fixed = FixedRateRadio(env, rec)
    a, b = make_node("a"), make_node("b", link="3g")
    proc = fixed.broadcast(bs, [a, b], 6e6, "model_down")
    env.run()
    assert proc.value[0].duration_s == pytest.approx(6e6 / b.link.downlink_bps, rel=1e-12)


def test_multicast_under_fading_is_no_faster_than_its_weakest_block():
    """Per block the multicast SNR is the receivers' minimum: slower than each receiver alone
    on average over many seeds (Rayleigh), and exactly the per-block minimum rate."""
    prof = get_channel_profile("feddif")
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    ues = ues_on_circle(4, 150.0)
    multi, single = [], []
    for seed in range(20):
        env, rec, radio = make_radio(prof, seed=seed)
        radio.broadcast(bs, ues, SIZE_BITS, "m")
        radio.transfer(bs, ues[0], SIZE_BITS, "u")  # shares the carrier half the time
        env.run()
        d = {r.kind: r.duration_s for r in rec.transfers}
        multi.append(d["m"])
        single.append(d["u"])
    assert np.mean(multi) > np.mean(single)


@pytest.mark.parametrize("direction", ["uplink", "downlink"])
def test_ue_energy_follows_huang_2012_lte_power_model(direction):
    """A ``huang2012_lte`` UE idle before, transferring S bytes at R Mbit/s (the fixed
    ``4g_lte`` link: 5 up, 20 down), then idle for good: it spends what Huang et al.'s
    LTE model gives (MobiSys 2012, Tables 3-4) — promotion 260 ms at 1210.7 mW, then
    P = α·R + β (α_u 438.39, α_d 51.97 mW/Mbit/s, β 1288.04 mW) for S·8/R, then the
    11.576 s tail at 1060 mW — within 1 %; the transfer starts after the promotion."""
    env, rec = simpy.Environment(), Recorder()
    radio = FixedRateRadio(env, rec)
    bs = make_node("bs", "bs", link=None, compute="edge_server_cpu")
    ue = make_node("ue0", compute="huang2012_lte")
    size_bytes = 2.5e6
    up = direction == "uplink"
    rate_mbps = (ue.link.uplink_bps if up else ue.link.downlink_bps) / 1e6
    src, dst = (ue, bs) if up else (bs, ue)
    record = env.run(until=radio.transfer(src, dst, 8 * size_bytes, "probe"))
    env.run(until=env.now + 60.0)
    radio.settle()
    t = 8 * size_bytes / (rate_mbps * 1e6)
    alpha = 0.43839 if up else 0.05197
    want = 0.2601 * 1.2107 + (alpha * rate_mbps + 1.28804) * t + 11.576 * 1.060
    assert ue.energy.radio_j == pytest.approx(want, rel=0.01)
    assert record.start_s == pytest.approx(0.2601, rel=1e-12)  # (promoted first)
    assert record.end_s - record.start_s == pytest.approx(t, rel=1e-9)
    # a second transfer within the tail needs no promotion
    again = env.now
    ue2 = make_node("ue1", compute="huang2012_lte")
    first = env.run(until=radio.transfer(ue2, bs, 1e6, "a"))
    second = env.run(until=radio.transfer(ue2, bs, 1e6, "b"))
    assert first.start_s == pytest.approx(again + 0.2601) and second.start_s == first.end_s
    assert ue2.energy.promotion_s == pytest.approx(0.2601)
