import numpy as np
from scipy import stats

from netfl.radio import drop_uniform_disc

ALPHA_KS = 1e-3  # reject only on strong evidence (fixed seed, so deterministic)


def test_points_uniform_over_disc_area():
    rng = np.random.default_rng(11)
    radius = 250.0
    pts = drop_uniform_disc(rng, 20_000, radius)
    r = np.hypot(pts[:, 0], pts[:, 1])
    assert np.all(r <= radius)
    # radial CDF of area-uniform points: P(R ≤ x) = x² / R²
    assert stats.kstest(r, lambda x: (x / radius) ** 2).pvalue > ALPHA_KS
    # angle uniform on (-π, π]
    theta = np.arctan2(pts[:, 1], pts[:, 0])
    assert stats.kstest(theta, stats.uniform(-np.pi, 2 * np.pi).cdf).pvalue > ALPHA_KS


def test_seeded():
    a = drop_uniform_disc(np.random.default_rng(1), 5, 100.0)
    b = drop_uniform_disc(np.random.default_rng(1), 5, 100.0)
    np.testing.assert_array_equal(a, b)
