import numpy as np
import pytest
from scipy import stats

from channel_models.fading import NoFading, RayleighBlockFading, RicianBlockFading

ALPHA_KS = 1e-3  # fixed seeds: a KS p-value below this would be strong evidence of a wrong law
REL_MOMENT_TOL = 0.02
N = 200_000


def test_rayleigh_power_gain_is_exp1():
    g = RayleighBlockFading(1e-3).sample(np.random.default_rng(0), N)
    assert stats.kstest(g, stats.expon(scale=1.0).cdf).pvalue > ALPHA_KS
    assert g.mean() == pytest.approx(1.0, rel=REL_MOMENT_TOL)
    assert g.var() == pytest.approx(1.0, rel=2 * REL_MOMENT_TOL)


def test_blocks_are_independent():
    """For i.i.d. Exp(1) blocks, min(g_k, g_k+1) ~ Exp(2) and consecutive ranks are uncorrelated."""
    g = RayleighBlockFading(1e-3).sample(np.random.default_rng(1), N)
    pair_min = np.minimum(g[0::2], g[1::2])
    assert stats.kstest(pair_min, stats.expon(scale=0.5).cdf).pvalue > ALPHA_KS
    assert stats.spearmanr(g[:-1], g[1:]).pvalue > ALPHA_KS


def test_chunked_draws_equal_one_draw():
    """The OFDMA carrier draws a flow's blocks in chunks: the sequence must not depend on them."""
    f = RayleighBlockFading(1e-3)
    one = f.sample(np.random.default_rng(5), 1000)
    rng = np.random.default_rng(5)
    chunks = np.concatenate([f.sample(rng, n) for n in (1, 63, 200, 736)])
    np.testing.assert_array_equal(one, chunks)


@pytest.mark.parametrize("k", [0.0, 1.0, 5.0])
def test_rician_moments(k):
    law = RicianBlockFading(k, 1e-3)
    g = law.sample(np.random.default_rng(3), N)
    assert g.mean() == pytest.approx(law.mean, rel=REL_MOMENT_TOL)
    assert g.var() == pytest.approx(law.variance, rel=3 * REL_MOMENT_TOL)
    if k == 0.0:
        assert stats.kstest(g, stats.expon().cdf).pvalue > ALPHA_KS


def test_reprs_and_no_fading():
    assert repr(RayleighBlockFading(5e-3)) == "RayleighBlockFading(coherence_time=0.005 s)"
    assert np.all(NoFading().sample(np.random.default_rng(0), 4) == 1.0)
    with pytest.raises(ValueError):
        RayleighBlockFading(0.0)


@pytest.mark.parametrize("law", [RayleighBlockFading(1e-3), RicianBlockFading(3.0, 1e-3)])
def test_peak_gain_is_the_complementary_quantile(law):
    g = law.sample(np.random.default_rng(11), N)
    x = law.peak_gain(1e-2)
    assert np.mean(g > x) == pytest.approx(1e-2, rel=0.1)
