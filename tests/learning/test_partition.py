"""Partitions use every sample once and meet their definitions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from netfl.learning import PARTITIONERS, PartitionError, partition

PARAMS = {
    "iid": {},
    "dirichlet": {"alpha": 0.5},
    "shards": {"shards_per_device": 2},
    "dominant_label": {"fraction": 0.5},
    "classes_per_device": {"classes": 2},
}


def balanced_labels(num_classes=10, per_class=100, seed=0):
    return np.random.default_rng(seed).permutation(np.repeat(np.arange(num_classes), per_class))


def assert_exact_cover(parts, n):
    allidx = np.concatenate(parts)
    assert len(allidx) == n
    assert np.array_equal(np.sort(allidx), np.arange(n))


@settings(max_examples=40, deadline=None)
@given(
    scheme=st.sampled_from(sorted(PARAMS)),
    num_devices=st.integers(5, 40),
    seed=st.integers(0, 2**31),
)
def test_every_sample_used_exactly_once(scheme, num_devices, seed):
    labels = balanced_labels(seed=seed % 7)
    try:
        parts = partition(
            scheme, labels, num_devices, np.random.default_rng(seed), **PARAMS[scheme]
        )
    except PartitionError:  # (dominant_label: labels that cannot give every device its share)
        assume(scheme != "dominant_label")
        raise
    assert len(parts) == num_devices
    assert_exact_cover(parts, len(labels))


def test_iid_sizes_differ_by_at_most_one():
    parts = partition("iid", balanced_labels(), 7, np.random.default_rng(0))
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1


def test_dirichlet_proportions_have_dirichlet_moments():
    """Per-class shares p_cd ~ Dir(α·1_N): mean 1/N, variance (1/N)(1-1/N)/(Nα+1)."""
    num_classes, per_class, n_dev, alpha = 300, 2000, 10, 0.5
    labels = np.repeat(np.arange(num_classes), per_class)
    parts = partition(
        "dirichlet", labels, n_dev, np.random.default_rng(5), alpha=alpha, min_samples=1
    )
    counts = np.array([np.bincount(labels[p], minlength=num_classes) for p in parts]).T
    shares = counts / per_class
    expected_var = (1 / n_dev) * (1 - 1 / n_dev) / (n_dev * alpha + 1)
    assert shares.mean() == pytest.approx(1 / n_dev, rel=1e-9)
    assert shares.var() == pytest.approx(expected_var, rel=0.1)


def test_dirichlet_small_alpha_is_more_skewed_than_large():
    labels = balanced_labels(per_class=500)

    def mean_max_share(alpha):
        parts = partition("dirichlet", labels, 10, np.random.default_rng(1), alpha=alpha)
        return np.mean([np.bincount(labels[p], minlength=10).max() / len(p) for p in parts])

    assert mean_max_share(0.1) > 0.5 > mean_max_share(100.0)


def test_dominant_label_fraction_exact_when_divisible():
    labels = balanced_labels(per_class=90)  # 900 samples, 10 devices of 90
    parts = partition("dominant_label", labels, 10, np.random.default_rng(2), fraction=0.8)
    for p in parts:
        counts = np.bincount(labels[p], minlength=10)
        assert len(p) == 90
        assert counts.max() == 72  # 80 % from one label
        assert set(np.delete(counts, counts.argmax())) == {2}  # 20 % spread evenly


def test_dominant_label_fraction_close_otherwise():
    labels = balanced_labels(per_class=200)  # 2000 samples, 20 devices of 100
    parts = partition("dominant_label", labels, 20, np.random.default_rng(2), fraction=0.8)
    for p in parts:
        counts = np.bincount(labels[p], minlength=10)
        assert counts.max() / len(p) == pytest.approx(0.8, abs=0.03)
        assert len(p) == 100
        assert np.delete(counts, counts.argmax()).max() <= 5  # the rest stays spread out


def test_dominant_label_refuses_a_fraction_its_labels_cannot_give():
    """5 devices over 10 balanced labels of 100: 80 % of 200 samples each is 160 of a
    label that has 100 — refused, not silently ~50 %; 20 devices of 50 can have it."""
    labels = balanced_labels(per_class=100)
    with pytest.raises(PartitionError, match="needs 160 of label .* and it has 100"):
        partition("dominant_label", labels, 5, np.random.default_rng(0), fraction=0.8)
    parts = partition("dominant_label", labels, 20, np.random.default_rng(0), fraction=0.8)
    assert all(np.bincount(labels[p]).max() == 40 for p in parts)


def test_classes_per_device():
    labels = balanced_labels()
    parts = partition("classes_per_device", labels, 10, np.random.default_rng(3), classes=3)
    for p in parts:
        assert len(np.unique(labels[p])) == 3


def test_classes_per_device_must_cover_classes():
    with pytest.raises(PartitionError, match="cannot cover"):
        partition("classes_per_device", balanced_labels(), 2, np.random.default_rng(0), classes=2)


def test_shards_give_few_labels_per_device():
    labels = balanced_labels()
    parts = partition("shards", labels, 50, np.random.default_rng(4), shards_per_device=2)
    for p in parts:
        assert len(np.unique(labels[p])) <= 2 * 2  # a shard spans at most two labels
        assert len(p) == 20


def test_unknown_scheme_lists_valid():
    with pytest.raises(KeyError, match="dirichlet"):
        partition("zipf", balanced_labels(), 3, np.random.default_rng(0))


def test_registry_complete():
    assert set(PARTITIONERS) == set(PARAMS)


def test_infeasible_splits_are_refused_at_once():
    import time

    labels = np.arange(100) % 10
    for scheme, params in [
        ("dirichlet", {"alpha": 0.01}),
        ("iid", {}),
        ("dirichlet", {"min_samples": 30, "alpha": 1.0}),
    ]:
        t0 = time.perf_counter()
        devices = 5 if "min_samples" in params else 500
        with pytest.raises(PartitionError, match="cannot give"):
            partition(scheme, labels, devices, np.random.default_rng(0), **params)
        assert time.perf_counter() - t0 < 0.1


def test_dominant_label_refuses_a_device_its_label_ran_short_for():
    """15 devices over 10 labels of 100 at 0.7: the labels' first devices take their
    rest share of every label, and a late device's dominant label runs short (it got
    0.38) — refused, not silently."""
    labels = balanced_labels(per_class=100)
    with pytest.raises(PartitionError, match=r"device \d+ gets 0\.\d+ of its samples"):
        partition("dominant_label", labels, 15, np.random.default_rng(0), fraction=0.7)
