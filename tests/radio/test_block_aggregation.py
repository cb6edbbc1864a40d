"""Fading blocks G at a time on a carrier shared by many flows (issue 34, item 5): the
conditional mean efficiency φ_G against its definition and the law of total expectation,
and a carrier of many flows against the same flows rated block by block."""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from scipy import stats

from channel_models.block_aggregation import AggregatedEfficiency, mean_gain_samples
from channel_models.fading import RayleighBlockFading
from channel_models.link_budget import shannon_efficiency
from channel_models.profile_catalog import get_channel_profile
from netfl.radio.columns import MAX_AGGREGATE
from netfl.radio.ofdma import OfdmaCarrier

QUANTILES = (np.arange(100_000) + 0.5) / 100_000


def _efficiencies():
    for name in ("nr_fr1_uma", "lte_20mhz"):
        profile = get_channel_profile(name)
        for direction in ("uplink", "downlink"):
            yield f"{name}-{direction}", profile.efficiency_for(direction)


@pytest.mark.parametrize("blocks", [2, 8, 64, MAX_AGGREGATE])
def test_a_columns_mean_bits_are_its_blocks_mean_bits(blocks):
    """E over ḡ ~ Gamma(G, 1/G) of φ_G(SNR·ḡ) = E over h ~ Exp(1) of η(SNR·h) (the law of
    total expectation), for the NR and LTE link abstractions at -5 to 25 dB: within 1e-4."""
    fading = RayleighBlockFading()
    mean_gain = stats.gamma(blocks, scale=1.0 / blocks).ppf(QUANTILES)
    for label, eta in _efficiencies():
        phi = AggregatedEfficiency(eta, blocks)
        for snr_db in (-5.0, 5.0, 15.0, 25.0):
            snr = 10 ** (snr_db / 10)
            want = eta(snr * fading.ppf(QUANTILES)).mean()
            got = phi(snr * mean_gain).mean()
            assert got == pytest.approx(want, rel=1e-4), (label, snr_db)


def test_phi_is_the_blocks_mean_efficiency_given_their_mean_gain():
    """φ_G(s) = E[η(G·s·U)], U ~ Beta(1, G - 1): the closed form against that integral
    by quadrature, and against G simulated Exp(1) blocks binned by their mean gain."""
    eta = get_channel_profile("nr_fr1_uma").efficiency_for("uplink")
    g = 8
    phi = AggregatedEfficiency(eta, g)
    u = stats.beta(1, g - 1).ppf((np.arange(20_000) + 0.5) / 20_000)
    for s_db in (-8.0, 0.0, 6.0, 12.0, 20.0):
        s = 10 ** (s_db / 10)
        assert phi(np.array([s]))[0] == pytest.approx(eta(g * s * u).mean(), rel=2e-3, abs=1e-4)
    rng = np.random.default_rng(3)
    snr = 10 ** (8.0 / 10)
    h = rng.exponential(1.0, (200_000, g))
    mean_gain = h.mean(axis=1)
    blocks_mean = eta(snr * h).mean(axis=1)
    edges = np.quantile(mean_gain, np.linspace(0, 1, 11))
    which = np.clip(np.searchsorted(edges, mean_gain, side="right") - 1, 0, 9)
    for b in range(10):
        sel = which == b
        assert phi(snr * mean_gain[sel]).mean() == pytest.approx(blocks_mean[sel].mean(), rel=0.01)


def test_mean_gains_are_gamma_distributed():
    """A column's mean gain of G Exp(1) blocks: Gamma(G, 1/G) (KS test)."""
    rng = np.random.default_rng(5)
    x = mean_gain_samples(rng, 16, 20_000)
    assert stats.kstest(x, stats.gamma(16, scale=1 / 16).cdf).pvalue > 0.01
    direct = np.random.default_rng(6).exponential(1.0, (20_000, 16)).mean(axis=1)
    assert stats.ks_2samp(x, direct).pvalue > 0.01


def _many_flows(
    aggregate: int,
    num: int = 600,
    scheduler: str = "round_robin",
    seed: int = 0,
    size_bits: float = 2e5,
    efficiency=shannon_efficiency,
):
    """``num`` flows of ``size_bits`` (0.2 Mbit) at 0-20 dB started together on 50 RBs of
    1 ms Rayleigh blocks (Shannon efficiency); their delivery times and the column
    widths seen."""
    env = simpy.Environment()
    carrier = OfdmaCarrier(
        env,
        "dl",
        50,
        180e3,
        RayleighBlockFading(1e-3),
        efficiency,
        scheduler,
        aggregate_above_flows=aggregate,
    )
    snr_db = np.random.default_rng(seed).uniform(0.0, 20.0, num)
    ends = np.zeros(num)
    widths = set()

    def flow(i):
        f = carrier.send(size_bits, 10 ** (snr_db[i] / 10), np.random.default_rng([seed, i]))
        yield f.done
        ends[i] = env.now
        assert f.remaining_bits <= 1e-6 * f.size_bits

    def watch():
        while True:
            widths.add(round(carrier.block_s, 9))
            yield env.timeout(0.05)

    for i in range(num):
        env.process(flow(i))
    env.process(watch())
    env.run(until=600.0)
    return ends, widths, snr_db


def test_many_flows_end_when_their_blocks_rated_one_by_one_say():
    """600 flows on one carrier, columns of G blocks (aggregation from 64 flows) against
    every block rated on its own: the columns were wider than a block; every flow is
    delivered; each flow's delivery within 3 % (its own fading: ~1 % over its thousands
    of blocks), their mean within 0.3 %, and the spread of the deliveries (the flows'
    SNRs and fading) within 10 %."""
    blockwise, w1, snr_db = _many_flows(aggregate=0)
    columns, w2, _ = _many_flows(aggregate=64)
    assert w1 == {0.001} and max(w2) >= 0.008  # (G of 8 or more while all 600 share)
    assert (blockwise > 0).all() and (columns > 0).all()
    rel = columns / blockwise - 1.0
    assert np.abs(rel).max() < 0.03
    assert columns.mean() == pytest.approx(blockwise.mean(), rel=3e-3)
    assert columns.std() == pytest.approx(blockwise.std(), rel=0.10)
    # the flows that end first are the strong ones, in both
    assert stats.spearmanr(columns, -snr_db).statistic > 0.9


def test_the_widest_columns_keep_long_flows_deliveries():
    """200 flows of 16 Mbit on the NR downlink table (~150 s, 150,000 blocks each): the
    columns reach the widest (:data:`MAX_AGGREGATE` blocks) and each delivery stays within
    1 % of block-by-block rating, their mean within 0.1 %, their spread within 5 %."""
    eta = get_channel_profile("nr_fr1_uma").efficiency_for("downlink")
    kw = {"num": 200, "size_bits": 1.6e7, "efficiency": eta}
    blockwise, _, _ = _many_flows(aggregate=0, **kw)
    columns, widths, _ = _many_flows(aggregate=64, **kw)
    assert max(widths) == pytest.approx(MAX_AGGREGATE * 1e-3)
    assert (blockwise > 0).all() and (columns > 0).all()
    assert np.abs(columns / blockwise - 1.0).max() < 0.01
    assert columns.mean() == pytest.approx(blockwise.mean(), rel=1e-3)
    assert columns.std() == pytest.approx(blockwise.std(), rel=0.05)


def test_no_columns_for_few_flows_proportional_fair_or_a_multicast():
    """Below the flow count, under proportional fair (it decides per block), and while a
    multicast flow is on the carrier, a column is one fading block."""
    _, widths, _ = _many_flows(aggregate=1000)
    assert widths == {0.001}
    _, widths, _ = _many_flows(aggregate=64, num=200, scheduler="proportional_fair")
    assert widths == {0.001}
    env = simpy.Environment()
    carrier = OfdmaCarrier(
        env, "dl", 50, 180e3, RayleighBlockFading(1e-3), shannon_efficiency,
        aggregate_above_flows=16,
    )  # fmt: skip
    for i in range(200):
        carrier.send(2e6, 10.0, np.random.default_rng(i))  # (~13 s together)
    env.run(until=0.5)
    assert carrier.block_s > 0.001  # (aggregated: 200 flows lasting seconds)
    multicast = carrier.send(
        1e5, 10.0, np.random.default_rng(999), multicast_snrs=np.array([10.0, 5.0])
    )
    assert carrier.block_s == 0.001  # (back to one block a column at its arrival)
    env.run(until=multicast.done)
    env.run(until=env.now + 0.5)
    assert carrier.block_s > 0.001  # (and G again once it left, at the next horizon)
