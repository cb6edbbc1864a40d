"""FedDif: federated learning with D2D diffusion of local models, and FedSwap.

S. Ahn et al., "Communication-Efficient Diffusion Strategy for Performance
Improvement of Federated Learning with Non-IID Data", arXiv 2207.07493
(Algorithms 1 and 2). The data-state math and the winner selection are the
pure functions of :mod:`netfl.algorithms.feddif_state`; the auction on the cell
(control messages, winner selection on the radio's link states, the diffusion table's
rows) is :mod:`netfl.algorithms.feddif_auction`, the options
:mod:`netfl.algorithms.feddif_config`; this module runs them as a SimPy process on the
simulated cell: the round, its hooks, its table and its state.

One communication round (Algorithm 2):

1. The BS picks the PUEs (as FedAvg) and sends them the global model.
2. Every PUE trains it on its data: model m starts its diffusion chain at PUE m
   with DoL ψ_m = d_m (11).
3. Diffusion rounds k = 1, 2, ... while some model's IID distance (13) exceeds
   ε (Algorithm 2, line 10):

   a. control plane (sizes ``control_value_bits`` per number, accounted as
      transfers of kind ``dol``, ``bid`` and ``schedule``): every model
      holder sends its models' DoLs (C numbers each) to the BS, which
      multicasts them to the PUEs (a cellular UE's broadcast); every PUE
      returns its bids — the valuation (17) and the channel state γ̃ of the
      link from each model's holder (18)-(19), 2 numbers per model;
   b. the BS weighs each (model, PUE) pair by (20)-(21) under (16b), (16c),
      (16e) and the outage rule (A.1), solves the maximum-weight matching
      (Kuhn–Munkres, (16d); charged on the BS as an O(n³) compute step),
      keeps the pairs that fit the uplink bandwidth CUEs leave (16f), and
      multicasts the schedule;
   c. each matched holder sends its model over D2D; the receiver trains it
      ``diffusion_epochs`` local epochs and becomes its holder.

   The loop also ends when no pair can be scheduled (isolated PUEs, every
   chain complete, nothing to gain) or after ``max_diffusion_rounds``. Every
   diffusion round adds at least one PUE to a chain, so it always ends.
   Optionally the UEs are re-dropped after each diffusion round (the authors'
   code).
4. Every holder uploads its models; the BS aggregates them weighted by their
   chains' data sizes (6).

When every model starts within ε no diffusion is planned (the BS knows it
from the DSIs before training), so each PUE uploads as soon as it has
trained: the round is FedAvg's, event for event.

FedSwap (the paper's full-diffusion baseline) is the same process with every
unvisited PUE worth the same to every model: models diffuse, best links
first, until every chain has visited every reachable PUE.

Per-round columns (``rounds.csv``): ``diffusion_rounds``, ``control_bits``,
``matching_time_s`` (simulated), ``iid_distance_start/end_mean/max``,
``diffusion_stop`` (1 = every model within ε, 2 = no schedulable pair,
3 = ``max_diffusion_rounds``, 4 = mean diffusion efficiency (14) ≤
``efficiency_epsilon`` under ``stop: mean_efficiency``, 0 = none planned). The ``diffusion`` table has a
row per (round, diffusion round, model): holder, chain length and data
size, IID distance, and the pair chosen (receiver, valuation, weight, γ̃,
B̃), with the wall-clock time of the Kuhn–Munkres call (``matching_wall_s``)
and of the whole winner selection (``schedule_wall_s``: link states,
valuations, weights, matching, (16f)).
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from netfl.algorithms.algorithm import RoundSummary, register
from netfl.algorithms.context import RoundContext
from netfl.algorithms.fedavg import FedAvg
from netfl.algorithms.feddif_auction import (
    control_message,
    decision_rows,
    exchange_bids,
    matching_flops,
    winner_selection,
)
from netfl.algorithms.feddif_config import FedDifConfig
from netfl.algorithms.feddif_state import (
    Chain,
    candidate_dol,
    chain_weights,
    diffusion_efficiency,
    dsi,
    iid_distance,
    valuation_matrix,
)
from netfl.core.nodes import Node

if TYPE_CHECKING:
    import pandas as pd

    from netfl.learning.train import TrainResult

__all__ = ["FedDif", "DIFFUSION_STOP"]

#: codes of the ``diffusion_stop`` column
DIFFUSION_STOP = {"none_planned": 0, "iid": 1, "no_pair": 2, "max_rounds": 3, "efficiency": 4}


@register
class FedDif(FedAvg):
    """FedDif (Ahn et al., Algorithms 1-2): diffuse local models over D2D before aggregating."""

    codec_directions = frozenset()  # (its own payloads: no update codec yet)
    supports_over_the_air = False

    supports_availability = False  # (its own rounds: availability not yet applied)

    name = "feddif"
    Config = FedDifConfig
    config: FedDifConfig
    #: Algorithm 2's rule that a model within ε is not diffused further (FedSwap: off)
    within_epsilon_gets_no_edges = True

    def __init__(self, world: RoundContext, config: FedDifConfig):
        super().__init__(world, config)
        labels = world.dataset.train_y_np
        classes = world.dataset.num_classes
        self.dsis = np.stack([dsi(labels[p], classes) for p in world.partitions])
        self.sizes = np.array([len(p) for p in world.partitions], dtype=float)
        self._rows: list[dict[str, Any]] = []

    @classmethod
    def check_scenario(cls, scenario: Any) -> list[tuple[str, str]]:
        if scenario.cell.link.mode != "ofdma":
            return [
                (
                    "cell.link.mode",
                    f"{cls.name} schedules D2D links by SNR and spectral efficiency "
                    "(eqs. (9), (16e), (21)): it needs 'ofdma'",
                )
            ]
        options = scenario.algorithm.options()
        if options.get("redrop_each_diffusion_round") and any(
            m.moves for m in scenario.devices.mobility_of()
        ):
            return [
                (
                    "algorithm.redrop_each_diffusion_round",
                    "moving devices follow their paths (a re-drop would teleport them, and "
                    "their next transfer moves them back); set one of the two",
                )
            ]
        return []

    # -- steps a variant may override ------------------------------------------
    def valuations(self, chains: list[Chain], pues: list[Node]) -> np.ndarray:
        """v(m, i) (17) of every model and PUE, shape (M, N)."""
        idx = [p.index for p in pues]
        return valuation_matrix(
            np.stack([c.dol for c in chains]),
            [c.size for c in chains],
            self.dsis[idx],
            self.sizes[idx],
            self.config.iid_distance,
        )

    def diffusion_done(self, chains: list[Chain], distances: np.ndarray, n_pues: int) -> bool:
        """Algorithm 2, line 10: stop once every model's IID distance is ≤ ε (``stop:
        per_model``; with ``mean_efficiency`` the schedule decides, :meth:`efficiency_done`)."""
        if self.config.stop == "mean_efficiency":
            return False
        return bool(np.all(distances <= self.config.epsilon))

    def efficiency_done(self, decision: dict[str, Any]) -> tuple[bool, float]:
        """``stop: mean_efficiency`` (the authors' code): the mean diffusion efficiency (14)
        E = (1/M)·Σ_m δ_m / B_m of the scheduled pairs — δ the IID-distance drop (the
        valuation (17)), B the pair's bandwidth (16f) — and whether it is ≤
        ``efficiency_epsilon``. (False, nan) under ``per_model``."""
        pairs = decision["pairs"]
        if self.config.stop != "mean_efficiency" or not pairs:
            return False, float("nan")
        e = diffusion_efficiency(
            [decision["values"][p] for p in pairs], [decision["bandwidth"][p] for p in pairs]
        )
        return e <= self.config.efficiency_epsilon, e

    def bid_values_per_model(self) -> int:
        """Numbers per model in a PUE's bid: its valuation and the link's channel state."""
        return 2

    def sends_dols(self) -> bool:
        return True

    # -- protocol ------------------------------------------------------------------
    def round(self, r: int) -> Generator[simpy.Event, Any, RoundSummary]:
        from netfl.learning import weighted_average

        world, env = self.world, self.world.env
        pues = self.select_clients(r)
        chains = [
            Chain(i, [i], float(self.sizes[p.index]), self.dsis[p.index].copy())
            for i, p in enumerate(pues)
        ]
        d0 = self._distances(chains)
        extra: dict[str, float] = {
            "diffusion_rounds": 0,
            "control_bits": 0.0,
            "matching_time_s": 0.0,
            "iid_distance_start_mean": float(d0.mean()),
            "iid_distance_start_max": float(d0.max()),
        }
        if self.diffusion_done(chains, d0, len(pues)):
            self._log(r, 0, chains, d0, {}, "none_planned")
            summary = yield from super().round(r)
            summary.extra.update(
                extra,
                iid_distance_end_mean=float(d0.mean()),
                iid_distance_end_max=float(d0.max()),
                diffusion_stop=DIFFUSION_STOP["none_planned"],
            )
            return summary

        # 1-2: global model to the PUEs, local training
        multicast = self.config.downlink == "multicast"
        if multicast:
            yield world.radio.broadcast(world.bs, pues, self.model_bits(), "model_down", 1)
        jobs = [env.process(self._first_training(r, p, not multicast)) for p in pues]
        yield simpy.AllOf(env, jobs)
        for chain, job in zip(chains, jobs, strict=True):
            self._trained(chain, job.value)

        # 3: diffusion rounds
        k, stop = 0, "iid"
        while True:
            distances = self._distances(chains)
            if self.diffusion_done(chains, distances, len(pues)):
                self._log(r, k, chains, distances, {}, "iid")
                stop = "iid"
                break
            cap = self.config.max_diffusion_rounds
            if cap is not None and k >= cap:
                self._log(r, k, chains, distances, {}, "max_rounds")
                stop = "max_rounds"
                break
            extra["control_bits"] += yield from exchange_bids(
                world,
                pues,
                chains,
                self.dsis.shape[1],
                self.config.control_value_bits,
                self.sends_dols(),
                self.bid_values_per_model(),
            )
            wall0 = time.perf_counter()
            decision = self.schedule(pues, chains)
            decision["schedule_wall_s"] = time.perf_counter() - wall0
            t_match = env.now
            yield world.compute.run(
                world.bs, self.matching_flops(len(chains), len(pues)), "matching"
            )
            extra["matching_time_s"] += env.now - t_match
            if not decision["pairs"]:
                self._log(r, k, chains, distances, decision, "no_pair")
                stop = "no_pair"
                break
            done, decision["mean_efficiency"] = self.efficiency_done(decision)
            if done:
                self._log(r, k, chains, distances, decision, "efficiency")
                stop = "efficiency"
                break
            self._log(r, k, chains, distances, decision, "")
            extra["control_bits"] += yield from control_message(
                world,
                world.bs,
                pues,
                2 * len(decision["pairs"]),
                self.config.control_value_bits,
                "schedule",
            )
            k += 1
            moves = [
                env.process(self._diffuse(r, k, chains[m], pues[i], pues))
                for m, i in decision["pairs"]
            ]
            yield simpy.AllOf(env, moves)
            for (m, i), job in zip(decision["pairs"], moves, strict=True):
                chain = chains[m]
                chain.dol = candidate_dol(
                    chain.dol, chain.size, self.dsis[pues[i].index], self.sizes[pues[i].index]
                )
                chain.size += float(self.sizes[pues[i].index])
                chain.holder = i
                chain.visited.append(i)
                self._trained(chain, job.value)
            if self.config.redrop_each_diffusion_round:
                world.redrop(r, k)

        # 4: upload from the holders, aggregate by chain data size (6)
        ups = [
            world.radio.transfer(pues[c.holder], world.bs, self.model_bits(), "model_up", 1)
            for c in chains
        ]
        yield simpy.AllOf(env, ups)
        yield world.compute.run(world.bs, self.aggregation_flops(len(chains)), "aggregate")
        if world.learn:
            kept = world.keep_finite(chains, [f"chain of ue{pues[c.holder].index}" for c in chains])
            if kept:
                self.global_state = weighted_average(
                    [c.state for c in kept], list(chain_weights([c.size for c in kept]))
                )
        end = self._distances(chains)
        extra.update(
            diffusion_rounds=k,
            iid_distance_end_mean=float(end.mean()),
            iid_distance_end_max=float(end.max()),
            diffusion_stop=DIFFUSION_STOP[stop],
        )
        losses = [c.loss for c in chains if np.isfinite(c.loss)]
        return RoundSummary(
            num_clients=len(pues),
            train_loss=float(np.mean(losses)) if losses else float("nan"),
            extra=extra,
        )

    # -- steps -----------------------------------------------------------------------
    def _first_training(
        self, r: int, device: Node, download: bool
    ) -> Generator[simpy.Event, Any, TrainResult | None]:
        if download:
            yield self.world.radio.transfer(
                self.world.bs, device, self.model_bits(), "model_down", 1
            )
        return (yield from self.local_update(r, device, self.global_state))

    def _diffuse(
        self, r: int, k: int, chain: Chain, receiver: Node, pues: list[Node]
    ) -> Generator[simpy.Event, Any, TrainResult | None]:
        """Send ``chain``'s model from its holder to ``receiver`` (D2D); train it there."""
        holder = pues[chain.holder]
        yield self.world.radio.transfer(holder, receiver, self.model_bits(), "model_d2d", 1)
        return (
            yield from self.local_update(
                r, receiver, chain.state, epochs=self.config.diffusion_epochs, seed_key=(k,)
            )
        )

    def _trained(self, chain: Chain, result: TrainResult | None) -> None:
        if result is not None:
            chain.state = result.state
            chain.loss = result.mean_loss

    def schedule(self, pues: list[Node], chains: list[Chain]) -> dict[str, Any]:
        """Winner selection (Algorithm 1): edge weights (20)-(21), matching, (16f)
        (:func:`~netfl.algorithms.feddif_auction.winner_selection`).

        Returns the chosen ``pairs`` (model, PUE position) and the matrices behind them.
        """
        cfg = self.config
        saturated = None
        if cfg.stop == "per_model" and self.within_epsilon_gets_no_edges:
            saturated = self._distances(chains) <= cfg.epsilon
        values = self.valuations(chains, pues)
        return winner_selection(
            self.world.radio, pues, chains, values, saturated, self.model_bits(), cfg
        )

    def matching_flops(self, num_models: int, num_pues: int) -> float:
        """Kuhn–Munkres is O(n³) on the n = max(M, N) square matrix (Sec. V, (22))."""
        return matching_flops(num_models, num_pues)

    def _distances(self, chains: list[Chain]) -> np.ndarray:
        return np.atleast_1d(
            iid_distance(np.stack([c.dol for c in chains]), self.config.iid_distance)
        )

    def _log(
        self,
        r: int,
        k: int,
        chains: list[Chain],
        distances: np.ndarray,
        decision: dict[str, Any],
        stop: str,
    ) -> None:
        self._rows.extend(decision_rows(r, k, chains, distances, decision, stop))

    def tables(self) -> dict[str, pd.DataFrame]:
        """``diffusion``: one row per (round, diffusion round, model); see the module doc."""
        import pandas as pd

        return {"diffusion": pd.DataFrame(self._rows)}

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "diffusion_rows": list(self._rows)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self._rows = list(state.get("diffusion_rows", []))
