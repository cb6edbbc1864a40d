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


def test_annulus_is_uniform_over_its_area():
    from netfl.radio.geometry import drop_uniform_annulus

    inner, outer = 50.0, 200.0
    pts = drop_uniform_annulus(np.random.default_rng(5), 20_000, inner, outer)
    r = np.hypot(pts[:, 0], pts[:, 1])
    assert r.min() >= inner and r.max() <= outer
    # P(R ≤ x) = (x² − r_i²) / (r_o² − r_i²)
    cdf = lambda x: (x**2 - inner**2) / (outer**2 - inner**2)  # noqa: E731
    assert stats.kstest(r, cdf).pvalue > ALPHA_KS
    # a disc's law when the inner radius is 0, from the same variates
    disc = drop_uniform_disc(np.random.default_rng(5), 100, outer)
    np.testing.assert_allclose(
        drop_uniform_annulus(np.random.default_rng(5), 100, 0.0, outer), disc, rtol=1e-12
    )


def test_line_ring_and_grid_positions_by_hand():
    from netfl.radio.geometry import grid_positions, line_positions, ring_positions

    line = line_positions(4, (30.0, 0.0), (300.0, 0.0))
    np.testing.assert_allclose(line, [[30, 0], [120, 0], [210, 0], [300, 0]])
    np.testing.assert_allclose(line_positions(1, (5.0, 6.0), (9.0, 9.0)), [[5, 6]])
    ring = ring_positions(4, 100.0, phase_deg=90.0)
    np.testing.assert_allclose(ring, [[0, 100], [-100, 0], [0, -100], [100, 0]], atol=1e-12)
    grid = grid_positions(6, 10.0)  # 3 columns, 2 rows, centred
    np.testing.assert_allclose(grid, [[-10, -5], [0, -5], [10, -5], [-10, 5], [0, 5], [10, 5]])
    np.testing.assert_allclose(grid_positions(3, 10.0, columns=1), [[0, -10], [0, 0], [0, 10]])
    # a partly filled last row: the full rows' box is centred
    np.testing.assert_allclose(grid_positions(5, 2.0).mean(axis=0)[0], -0.4)
