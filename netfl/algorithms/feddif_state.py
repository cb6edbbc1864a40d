"""FedDif data-state math and winner selection: pure numpy/scipy, no SimPy.

S. Ahn et al., "Communication-Efficient Diffusion Strategy for Performance
Improvement of Federated Learning with Non-IID Data", arXiv 2207.07493.

- DSI d_i: PUE i's normalised label histogram (Sec. III-B).
- DoL (11): ψ^(m) = Σ_{i∈chain} |D_i|·d_i / Σ_{i∈chain} |D_i|.
- IID distance (13) computed as (C.1): ‖ψ − (1/C)·1‖₂; ``emd``, ``kld`` and
  ``jsd`` selectable (the authors' code offers them).
- Valuation (17): v = W(ψ_{k−1}) − W(ψ̃_i), ψ̃_i the DoL if PUE i trains next.
- Edge weight (20)-(21): c = v / B̃, B̃ = S / γ̃ — zero unless (16b) v ≥ 0,
  (16c) i not yet in the chain, (16e) γ̃ ≥ γ_min and P_out ≤ 5 % (A.1).
- Winner selection (Algorithm 1): maximum-weight bipartite matching of models
  to PUEs by Kuhn–Munkres (``scipy.optimize.linear_sum_assignment``), one
  model per PUE (16d); pairs of weight 0 are not scheduled.
- Diffusion efficiency (14): E = (1/M)·Σ_m δ_m / B_m.
- Aggregation (6): models weighted by their chains' data sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from channel_models.link_budget import outage_probability
from channel_models.registry import lookup

__all__ = [
    "Chain",
    "IID_DISTANCES",
    "dsi",
    "dol",
    "candidate_dol",
    "iid_distance",
    "valuation",
    "valuation_matrix",
    "fit_bandwidth",
    "edge_weights",
    "select_winners",
    "diffusion_efficiency",
    "chain_weights",
]


def dsi(labels: ArrayLike, num_classes: int) -> np.ndarray:
    """Data state information: the normalised label histogram, shape (C,)."""
    counts = np.bincount(np.asarray(labels, dtype=int), minlength=num_classes).astype(float)
    if counts.sum() == 0:
        raise ValueError("a PUE without samples has no DSI")
    return counts / counts.sum()


def dol(dsis: np.ndarray, sizes: ArrayLike) -> np.ndarray:
    """Degree of learning (11) of a chain: DSIs (k, C) mixed by data sizes (k,)."""
    w = np.asarray(sizes, dtype=float)
    return (w[:, None] * np.asarray(dsis, dtype=float)).sum(axis=0) / w.sum()


def candidate_dol(psi: np.ndarray, chain_size: float, d_i: np.ndarray, size_i: float) -> np.ndarray:
    """ψ̃_i: the DoL after PUE i (DSI ``d_i``, ``size_i`` samples) trains the model next."""
    return (chain_size * np.asarray(psi) + size_i * np.asarray(d_i)) / (chain_size + size_i)


def _uniform_gap(psi: np.ndarray) -> np.ndarray:
    return psi - 1.0 / psi.shape[-1]


def _l2(psi: np.ndarray) -> np.ndarray:
    return np.linalg.norm(_uniform_gap(psi), axis=-1)


def _kld(psi: np.ndarray) -> np.ndarray:
    c = psi.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(psi > 0, psi * np.log(psi * c), 0.0)
    return terms.sum(axis=-1)


def _jsd(psi: np.ndarray) -> np.ndarray:
    c = psi.shape[-1]
    from scipy.spatial.distance import jensenshannon

    return jensenshannon(psi, np.full(psi.shape, 1.0 / c), base=2, axis=-1) ** 2


def _emd(psi: np.ndarray) -> np.ndarray:
    """Wasserstein-1 on the label grid 0..C−1: Σ |CDF_ψ − CDF_uniform| (unit spacing).

    Equals ``scipy.stats.wasserstein_distance`` on the labels (tested); written
    as the CDF sum so that it works on stacks of DoLs at once.
    """
    return np.abs(np.cumsum(_uniform_gap(psi), axis=-1)[..., :-1]).sum(axis=-1)


#: IID distances W(ψ) to the uniform label distribution; ``l2`` is FedDif (C.1).
#: Each maps DoLs (..., C) to distances (...).
IID_DISTANCES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "l2": _l2,
    "kld": _kld,
    "jsd": _jsd,
    "emd": _emd,
}


def iid_distance(psi: ArrayLike, metric: str = "l2") -> float | np.ndarray:
    """W(ψ): distance of a DoL to the uniform distribution (13)/(C.1).

    ``psi`` of shape (C,) gives a float; a stack (..., C) gives an array (...).
    """
    psi = np.asarray(psi, dtype=float)
    out = lookup(IID_DISTANCES, metric, "IID distance")(psi)
    return float(out) if psi.ndim == 1 else np.asarray(out, dtype=float)


def valuation(psi: ArrayLike, psi_candidate: ArrayLike, metric: str = "l2") -> float | np.ndarray:
    """v = W(ψ_{k−1}) − W(ψ̃_i) (17): how much closer to IID the model gets (broadcasts)."""
    return iid_distance(psi, metric) - iid_distance(psi_candidate, metric)


def valuation_matrix(
    dols: np.ndarray,
    chain_sizes: ArrayLike,
    dsis: np.ndarray,
    sizes: ArrayLike,
    metric: str = "l2",
) -> np.ndarray:
    """v(m, i) (17) for every model m (DoLs (M, C), chain sizes (M,)) and PUE i
    (DSIs (N, C), sizes (N,)): W(ψ_m) − W(ψ̃_{m,i}), ψ̃ the candidate DoL (11)."""
    dols = np.asarray(dols, dtype=float)
    dsis = np.asarray(dsis, dtype=float)
    cs = np.asarray(chain_sizes, dtype=float)[:, None, None]
    n = np.asarray(sizes, dtype=float)[None, :, None]
    candidates = (cs * dols[:, None, :] + n * dsis[None, :, :]) / (cs + n)
    return iid_distance(dols, metric)[:, None] - iid_distance(candidates, metric)


def edge_weights(
    values: np.ndarray,
    efficiency_bps_per_hz: np.ndarray,
    mean_snr: np.ndarray,
    in_chain: np.ndarray,
    model_bits: float,
    min_efficiency_bps_per_hz: float = 1.0,
    max_outage: float = 0.05,
) -> np.ndarray:
    """c(m, i) = v / B̃ with B̃ = S / γ̃ (20)-(21), or 0 where a constraint fails.

    All arrays are (M models, N PUEs): valuations ``values``, expected spectral
    efficiency γ̃ of the link from model m's holder to PUE i, its mean SNR, and
    whether i is already in model m's chain. Constraints: (16b) v ≥ 0, (16c),
    (16e) γ̃ ≥ γ_min, and the outage rule P_out(γ_min, SNR̄) ≤ ``max_outage`` (A.1).
    """
    v = np.asarray(values, dtype=float)
    gamma = np.asarray(efficiency_bps_per_hz, dtype=float)
    ok = (
        (v >= 0)
        & ~np.asarray(in_chain, dtype=bool)
        & (gamma >= min_efficiency_bps_per_hz)
        & (outage_probability(min_efficiency_bps_per_hz, mean_snr) <= max_outage)
    )
    bandwidth = model_bits / np.where(gamma > 0, gamma, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(ok, v / bandwidth, 0.0)
    return np.where(np.isfinite(c), c, 0.0)


def select_winners(weights: np.ndarray) -> list[tuple[int, int]]:
    """Maximum-weight matching of models (rows) to PUEs (columns) (Algorithm 1).

    Kuhn–Munkres via ``linear_sum_assignment(maximize=True)``; each PUE gets at
    most one model (16d); pairs with weight ≤ 0 are dropped (nothing to gain,
    or a constraint failed). Returns ``(model, pue)`` pairs sorted by model.
    """
    w = np.asarray(weights, dtype=float)
    if w.size == 0:
        return []
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(w, maximize=True)
    return [(int(m), int(i)) for m, i in zip(rows, cols, strict=True) if w[m, i] > 0]


def fit_bandwidth(
    pairs: list[tuple[int, int]],
    weights: np.ndarray,
    bandwidths_hz: np.ndarray,
    available_hz: float | ArrayLike,
    pool_of_model: ArrayLike | None = None,
) -> list[tuple[int, int]]:
    """(16f): keep matched pairs whose total bandwidth fits what CUEs leave.

    ``bandwidths_hz[m, i]`` is B̃ = S/γ̃ (21) of the pair. While the total
    exceeds ``available_hz`` the pair with the smallest weight c = v/B̃ — the
    least IID-distance gain per Hz — is dropped (the greedy rule for a
    knapsack by value density; the joint problem is NP-hard). With several
    pools (the cells of a network: a D2D pair uses its sender's cell's uplink),
    ``available_hz`` holds each pool's bandwidth and ``pool_of_model[m]`` the pool of
    model m's holder; the rule holds in every pool.
    """
    available = np.atleast_1d(np.asarray(available_hz, dtype=float))
    pool = (
        np.zeros(weights.shape[0], dtype=int)
        if pool_of_model is None
        else np.asarray(pool_of_model, dtype=int)
    )
    kept = sorted(pairs, key=lambda p: weights[p], reverse=True)
    total = np.zeros(len(available))
    for p in kept:
        total[pool[p[0]]] += float(bandwidths_hz[p])
    for k in range(len(available)):
        mine = [p for p in kept if pool[p[0]] == k]
        while mine and total[k] > available[k] * (1 + 1e-12):
            dropped = mine.pop()
            total[k] -= float(bandwidths_hz[dropped])
            kept.remove(dropped)
    return sorted(kept)


def diffusion_efficiency(distance_drops: ArrayLike, bandwidths_hz: ArrayLike) -> float:
    """E = (1/M)·Σ_m δ_m / B_m (14): IID-distance drop per Hz, averaged over models."""
    d = np.asarray(distance_drops, dtype=float)
    b = np.asarray(bandwidths_hz, dtype=float)
    return float(np.mean(np.where(b > 0, d / np.where(b > 0, b, 1.0), 0.0)))


def chain_weights(chain_sizes: Sequence[float]) -> np.ndarray:
    """Aggregation weights of (6): each model's chain data size over the total."""
    s = np.asarray(chain_sizes, dtype=float)
    return s / s.sum()


@dataclass
class Chain:
    """One local model on its diffusion chain."""

    holder: int  # position of its holder in the round's PUE list
    visited: list[int]  # PUE positions that trained it, in order
    size: float  # Σ |D_i| over the chain
    dol: np.ndarray  # ψ (11)
    state: dict | None = None
    loss: float = float("nan")
