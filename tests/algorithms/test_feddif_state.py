"""FedDif data-state math and winner selection on hand-computed inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from channel_models.link_budget import min_snr_for_outage
from netfl.algorithms.feddif_state import (
    candidate_dol,
    chain_weights,
    diffusion_efficiency,
    dol,
    dsi,
    edge_weights,
    fit_bandwidth,
    iid_distance,
    select_winners,
    valuation,
    valuation_matrix,
)


def test_dsi_and_dol_by_hand():
    d1 = dsi([0, 0, 0, 1], 3)  # (3/4, 1/4, 0)
    d2 = dsi([2, 2], 3)  # (0, 0, 1)
    assert d1 == pytest.approx([0.75, 0.25, 0.0]) and d2 == pytest.approx([0, 0, 1])
    psi = dol(np.stack([d1, d2]), [4, 2])  # (3, 1, 2)/6
    assert psi == pytest.approx([0.5, 1 / 6, 1 / 3])
    assert candidate_dol(d1, 4, d2, 2) == pytest.approx(psi)


def test_iid_distance_l2_is_c1_and_zero_at_uniform():
    psi = np.array([0.5, 1 / 6, 1 / 3])
    want = math.sqrt((0.5 - 1 / 3) ** 2 + (1 / 6 - 1 / 3) ** 2)
    assert iid_distance(psi) == pytest.approx(want)
    for metric in ("l2", "kld", "jsd", "emd"):
        assert iid_distance(np.full(4, 0.25), metric) == pytest.approx(0.0, abs=1e-12)
        assert iid_distance(np.array([1.0, 0, 0, 0]), metric) > 0
    assert iid_distance(np.array([1.0, 0, 0, 0]), "kld") == pytest.approx(math.log(4))
    with pytest.raises(KeyError, match="valid: emd, jsd, kld, l2"):
        iid_distance(psi, "cosine")


def test_valuation_rewards_complementary_data():
    psi = dsi([0] * 10, 2)  # all label 0
    good = candidate_dol(psi, 10, dsi([1] * 10, 2), 10)
    bad = candidate_dol(psi, 10, dsi([0] * 10, 2), 10)
    assert valuation(psi, good) == pytest.approx(iid_distance(psi))  # reaches uniform
    assert valuation(psi, bad) == pytest.approx(0.0)


def test_edge_weights_apply_every_constraint():
    s_bits = 40e6
    v = np.array([[0.2, -0.1, 0.3, 0.3]])
    gamma = np.array([[2.0, 2.0, 0.5, 2.0]])
    snr_ok = min_snr_for_outage(1.0, 0.05) * 1.01
    snr = np.array([[snr_ok, snr_ok, snr_ok, snr_ok * 0.5]])
    in_chain = np.zeros((1, 4), bool)
    c = edge_weights(v, gamma, snr, in_chain, s_bits)
    assert c[0, 0] == pytest.approx(0.2 / (s_bits / 2.0))  # (20)-(21)
    assert c[0, 1] == 0  # (16b) negative valuation
    assert c[0, 2] == 0  # (16e) below gamma_min
    assert c[0, 3] == 0  # outage above 5 %
    in_chain[0, 0] = True
    assert edge_weights(v, gamma, snr, in_chain, s_bits)[0, 0] == 0  # (16c)


def brute_force_matching(w: np.ndarray) -> float:
    """Best total positive weight over every one-to-one assignment (second implementation)."""
    m, n = w.shape
    best = 0.0
    if m <= n:
        options = ((range(m), cols) for cols in itertools.permutations(range(n), m))
    else:
        options = ((rows, range(n)) for rows in itertools.permutations(range(m), n))
    for rows, cols in options:
        best = max(best, sum(max(w[r, c], 0.0) for r, c in zip(rows, cols, strict=True)))
    return best


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 5),
    st.integers(0, 2**31 - 1),
)
def test_winner_selection_is_a_maximum_weight_matching(m, n, seed):
    rng = np.random.default_rng(seed)
    w = np.where(rng.random((m, n)) < 0.3, 0.0, rng.random((m, n)))
    pairs = select_winners(w)
    assert len({i for _, i in pairs}) == len(pairs)  # (16d) one model per PUE
    assert len({mm for mm, _ in pairs}) == len(pairs)  # a model goes to one PUE
    assert all(w[mm, i] > 0 for mm, i in pairs)
    assert sum(w[mm, i] for mm, i in pairs) == pytest.approx(brute_force_matching(w))


def test_no_schedulable_pair_means_no_winner():
    assert select_winners(np.zeros((3, 3))) == []
    assert select_winners(np.zeros((0, 3))) == []


def test_diffusion_efficiency_and_chain_weights():
    assert diffusion_efficiency([0.2, 0.1], [1e6, 2e6]) == pytest.approx((0.2e-6 + 0.05e-6) / 2)
    assert chain_weights([100, 300]) == pytest.approx([0.25, 0.75])


@pytest.mark.parametrize("metric", ["l2", "kld", "jsd", "emd"])
def test_iid_distance_of_a_stack_equals_one_by_one(metric):
    rng = np.random.default_rng(3)
    psis = rng.dirichlet(np.full(5, 0.4), size=(4, 3))
    stacked = iid_distance(psis, metric)
    assert stacked.shape == (4, 3)
    for idx in itertools.product(range(4), range(3)):
        assert stacked[idx] == pytest.approx(iid_distance(psis[idx], metric), rel=1e-12)


def test_emd_is_scipy_wasserstein_on_the_label_grid():
    from scipy.stats import wasserstein_distance

    rng = np.random.default_rng(8)
    labels = np.arange(7)
    for psi in rng.dirichlet(np.full(7, 0.3), size=20):
        want = wasserstein_distance(labels, labels, psi, np.full(7, 1 / 7))
        assert iid_distance(psi, "emd") == pytest.approx(want, abs=1e-12)


def test_valuation_matrix_is_eq17_for_every_pair():
    rng = np.random.default_rng(1)
    dols = rng.dirichlet(np.ones(4), size=3)
    dsis = rng.dirichlet(np.ones(4), size=5)
    cs, ns = rng.integers(10, 100, 3), rng.integers(10, 100, 5)
    v = valuation_matrix(dols, cs, dsis, ns, "jsd")
    for m, i in itertools.product(range(3), range(5)):
        cand = candidate_dol(dols[m], cs[m], dsis[i], ns[i])
        assert v[m, i] == pytest.approx(valuation(dols[m], cand, "jsd"), abs=1e-12)


def test_chain_over_every_pue_has_the_pooled_iid_distance():
    """Folding candidate DoLs along a chain through all PUEs gives the pooled data's DoL."""
    rng = np.random.default_rng(5)
    labels = [rng.integers(0, 6, size=int(rng.integers(5, 40))) for _ in range(7)]
    dsis = [dsi(y, 6) for y in labels]
    psi, size = dsis[0], len(labels[0])
    for y, d in zip(labels[1:], dsis[1:], strict=True):
        psi, size = candidate_dol(psi, size, d, len(y)), size + len(y)
    pooled = dsi(np.concatenate(labels), 6)
    assert psi == pytest.approx(pooled)
    assert iid_distance(psi) == pytest.approx(iid_distance(pooled))
    assert dol(np.stack(dsis), [len(y) for y in labels]) == pytest.approx(pooled)


def test_fit_bandwidth_drops_least_dense_pairs_first():
    w = np.array([[3.0, 1.0], [2.0, 0.5]])
    b = np.array([[4.0, 1.0], [5.0, 2.0]])
    pairs = [(0, 1), (1, 0)]  # weights 1.0 and 2.0, bandwidths 1 and 5
    assert fit_bandwidth(pairs, w, b, 10.0) == pairs
    assert fit_bandwidth(pairs, w, b, 5.5) == [(1, 0)]  # drops the weight-1 pair
    assert fit_bandwidth(pairs, w, b, 0.5) == []
    kept = fit_bandwidth(pairs, w, b, 6.0)
    assert sum(b[p] for p in kept) <= 6.0


def test_fit_bandwidth_holds_in_every_pool():
    """Two cells (pools): models 0 and 1 are held in cell 0, model 2 in cell 1. Cell 0's
    4 Hz fit only the denser of its two pairs; cell 1's pair fits its own 3 Hz even though
    the three together exceed either pool."""
    w = np.array([[2.0, 0.0], [0.0, 1.0], [5.0, 0.0]])
    b = np.array([[3.0, 0.0], [0.0, 2.0], [3.0, 0.0]])
    pairs = [(0, 0), (1, 1), (2, 0)]
    pool = np.array([0, 0, 1])
    assert fit_bandwidth(pairs, w, b, [4.0, 3.0], pool) == [(0, 0), (2, 0)]
    assert fit_bandwidth(pairs, w, b, [5.0, 3.0], pool) == pairs
    assert fit_bandwidth(pairs, w, b, [5.0, 2.0], pool) == [(0, 0), (1, 1)]
    # one pool: the single-cell rule
    assert fit_bandwidth(pairs, w, b, [8.0], None) == fit_bandwidth(pairs, w, b, 8.0)
