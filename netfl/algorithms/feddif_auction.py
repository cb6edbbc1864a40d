"""FedDif's auction on the cell: the control messages of a diffusion round and the
winner selection (Algorithm 2, steps 3a-b; Algorithm 1).

S. Ahn et al., "Communication-Efficient Diffusion Strategy for Performance
Improvement of Federated Learning with Non-IID Data", arXiv 2207.07493.

- Control plane (:func:`exchange_bids`, :func:`control_message`): every model holder
  sends its models' DoLs (C numbers each) to the BS, which multicasts them to the PUEs
  (a cellular UE's broadcast); every PUE returns its bids — the valuation (17) and the
  channel state γ̃ of the link from each model's holder (18)-(19). Each number is
  ``control_value_bits`` long; the transfers are of kind ``dol``, ``bid`` and
  ``schedule``.
- Winner selection (:func:`winner_selection`): the edge weights (20)-(21) under (16b),
  (16c), (16e) and the outage rule (A.1) on the radio's link states, the maximum-weight
  matching (Kuhn–Munkres, (16d)) and the pairs that fit the uplink bandwidth CUEs leave
  (16f). The math is :mod:`netfl.algorithms.feddif_state`'s; the round that runs the
  auction is :class:`netfl.algorithms.feddif.FedDif`.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from netfl.algorithms.context import LinkStates
from netfl.algorithms.feddif_state import Chain, edge_weights, fit_bandwidth, select_winners

if TYPE_CHECKING:
    from netfl.algorithms.context import RoundContext
    from netfl.algorithms.feddif_config import FedDifConfig
    from netfl.core.nodes import Node

__all__ = [
    "control_message",
    "exchange_bids",
    "winner_selection",
    "matching_flops",
    "decision_rows",
]


def control_message(
    world: RoundContext, src: Node, dsts: list[Node], num_values: int, value_bits: int, kind: str
) -> Generator[simpy.Event, Any, float]:
    """A control message of ``num_values`` numbers of ``value_bits`` each from ``src`` to
    ``dsts`` (from the BS: one multicast; from a UE: a transfer to each); returns the
    bits put on air."""
    bits = float(num_values * value_bits)
    if bits <= 0 or not dsts:
        return 0.0
    if src is world.bs:
        yield world.radio.broadcast(src, dsts, bits, kind, num_models=0)
    else:
        yield simpy.AllOf(world.env, [world.radio.transfer(src, d, bits, kind) for d in dsts])
    return bits * len(dsts) if src is not world.bs else bits


def exchange_bids(
    world: RoundContext,
    pues: list[Node],
    chains: list[Chain],
    num_classes: int,
    value_bits: int,
    sends_dols: bool,
    bid_values_per_model: int,
) -> Generator[simpy.Event, Any, float]:
    """DoLs to the PUEs through the BS (``sends_dols``), then every PUE's bids to the BS
    (17)-(19), ``bid_values_per_model`` numbers per model; returns the bits put on air."""
    env = world.env
    bits = 0.0
    if sends_dols:
        held: dict[int, int] = {}
        for c in chains:
            held[c.holder] = held.get(c.holder, 0) + 1
        ups = [
            env.process(
                control_message(world, pues[h], [world.bs], n * num_classes, value_bits, "dol")
            )
            for h, n in held.items()
        ]
        yield simpy.AllOf(env, ups)
        bits += sum(u.value for u in ups)
        bits += yield from control_message(
            world, world.bs, pues, len(chains) * num_classes, value_bits, "dol"
        )
    n_bid = bid_values_per_model * len(chains)
    bids = [
        env.process(control_message(world, p, [world.bs], n_bid, value_bits, "bid")) for p in pues
    ]
    yield simpy.AllOf(env, bids)
    return bits + sum(b.value for b in bids)


def winner_selection(
    radio: object,
    pues: list[Node],
    chains: list[Chain],
    values: np.ndarray,
    saturated: np.ndarray | None,
    bits: float,
    cfg: FedDifConfig,
) -> dict[str, Any]:
    """Winner selection (Algorithm 1): edge weights (20)-(21), matching, (16f).

    ``values`` are the valuations v(m, i) (17), shape (M, N); ``saturated`` marks the
    models that get no edges (Algorithm 2: already within ε; None: none); ``bits`` the
    model's size S. Returns the chosen ``pairs`` (model, PUE position), the wall-clock
    time of the matching (``matching_wall_s``) and the matrices behind them (``values``,
    ``weights``, ``gamma`` γ̃, ``bandwidth`` B = S/(γ̃·T)).
    """
    assert isinstance(radio, LinkStates)  # (check_scenario asks for OFDMA links)
    holders = [pues[c.holder] for c in chains]
    snr, gamma = radio.link_states(holders, pues)
    in_chain = np.zeros(values.shape, dtype=bool)
    for m, c in enumerate(chains):
        in_chain[m, c.visited] = True
    weights = edge_weights(
        values, gamma, snr, in_chain, bits, cfg.min_efficiency_bps_per_hz, cfg.max_outage
    )
    if saturated is not None:
        # Algorithm 2: a model already within ε needs no more diffusion
        weights = np.where(saturated[:, None], 0.0, weights)
    with np.errstate(divide="ignore"):
        bandwidth = np.where(gamma > 0, bits / (gamma * cfg.bandwidth_window_s), np.inf)
    wall0 = time.perf_counter()
    matched = select_winners(weights)
    matching_wall = time.perf_counter() - wall0
    pool, available = radio.d2d_budget(holders)
    pairs = fit_bandwidth(matched, weights, bandwidth, available, pool)
    return {
        "pairs": pairs,
        "matching_wall_s": matching_wall,
        "values": values,
        "weights": weights,
        "gamma": gamma,
        "bandwidth": bandwidth,
    }


def matching_flops(num_models: int, num_pues: int) -> float:
    """Kuhn–Munkres is O(n³) on the n = max(M, N) square matrix (Sec. V, (22))."""
    return float(max(num_models, num_pues) ** 3)


def decision_rows(
    r: int,
    k: int,
    chains: list[Chain],
    distances: np.ndarray,
    decision: dict[str, Any],
    stop: str,
) -> list[dict[str, Any]]:
    """The ``diffusion`` table's rows of diffusion round ``k`` of round ``r``, one per
    model: its holder, chain and IID distance, and the pair the auction chose for it
    (``receiver`` −1 and NaNs when none: ``decision`` empty, or the model unmatched),
    with the wall-clock times in ``decision`` and the round's ``stop`` reason."""
    chosen = dict(decision.get("pairs", []))
    rows: list[dict[str, Any]] = []
    for m, c in enumerate(chains):
        i = chosen.get(m, -1)
        row = {
            "round": r,
            "diffusion_round": k,
            "model": m,
            "holder": c.holder,
            "chain_length": len(c.visited),
            "chain_size": c.size,
            "iid_distance": float(distances[m]),
            "receiver": i,
            "valuation": float("nan"),
            "weight": float("nan"),
            "efficiency_bps_per_hz": float("nan"),
            "bandwidth_hz": float("nan"),
            "matching_wall_s": decision.get("matching_wall_s", float("nan")),
            "schedule_wall_s": decision.get("schedule_wall_s", float("nan")),
            "mean_efficiency": decision.get("mean_efficiency", float("nan")),
            "stop": stop,
        }
        if i >= 0:
            row.update(
                valuation=float(decision["values"][m, i]),
                weight=float(decision["weights"][m, i]),
                efficiency_bps_per_hz=float(decision["gamma"][m, i]),
                bandwidth_hz=float(decision["bandwidth"][m, i]),
            )
        rows.append(row)
    return rows
