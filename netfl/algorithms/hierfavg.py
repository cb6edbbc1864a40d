"""HierFAVG: client-edge-cloud hierarchical federated averaging.

L. Liu, J. Zhang, S. H. Song, K. B. Letaief, "Client-Edge-Cloud Hierarchical
Federated Learning", IEEE ICC 2020 (Algorithm 1). Every client runs κ1 local
updates between edge aggregations; each edge server ℓ aggregates its clients
C_ℓ, w^ℓ = Σ_{i∈C_ℓ} |D_i| w_i / |D_ℓ|, and after κ2 edge aggregations the cloud
aggregates the edge models, w = Σ_ℓ |D_ℓ| w^ℓ / |D|.

In netfl the edge server of a device is the BS of its serving cell
(:meth:`RoundContext.edge_of`: the cell's BS in a ``network``, the BS itself in a
single cell) and κ1 counts local *epochs* (``kappa1``, default
``training.local_epochs``). One netfl round is one cloud round:

1. the cloud sends the global model to every edge with sampled clients (the
   backhaul; nothing when the edge is the server, or sits at the server's site);
2. κ2 times: each edge sends its model to its clients (access downlink), they train
   κ1 epochs (the j-th time with ``seed_key`` (j,), the first as FedAvg's), upload
   to the edge, and the edge aggregates (its compute charged);
3. the edges upload to the cloud, which aggregates weighted by samples (charged on
   the server; a single edge that is the server itself needs neither).

With one cell and κ2 = 1 this is FedAvg event for event (tested). Per-round
columns: ``edges`` (edge servers with clients) and ``edge_aggregations`` (κ2).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy
from pydantic import Field

from netfl.algorithms.algorithm import RoundSummary, honours, register
from netfl.algorithms.fedavg import FedAvg, FedAvgConfig, cut_counts, is_cut
from netfl.core.nodes import Node
from netfl.policies.resource_policy import RoundWork

if TYPE_CHECKING:
    from netfl.learning.train import TrainResult

__all__ = ["HierFAVG", "HierFAVGConfig"]


class HierFAVGConfig(FedAvgConfig):
    kappa1: int | None = Field(
        None,
        ge=1,
        description="κ1: local epochs between edge aggregations (default: training.local_epochs)",
        le=1000,
    )
    kappa2: int = Field(2, ge=1, description="κ2: edge aggregations per cloud aggregation", le=1000)


@register
class HierFAVG(FedAvg):
    """Client-edge-cloud hierarchical FedAvg (Liu et al., ICC 2020, Algorithm 1)."""

    codec_directions = frozenset()  # (its own payloads: no update codec yet)

    #: a client that leaves is out of its edge's later edge rounds (and of this one's)
    supports_availability = True

    name = "hierfavg"
    Config = HierFAVGConfig
    config: HierFAVGConfig

    def edges(self, clients: list[Node]) -> dict[str, tuple[Node, list[Node]]]:
        """Sampled clients grouped by edge server, in client order."""
        groups: dict[str, tuple[Node, list[Node]]] = {}
        for device in clients:
            edge = self.world.edge_of(device)
            groups.setdefault(edge.name, (edge, []))[1].append(device)
        return groups

    def _edge_client(
        self, r: int, j: int, edge: Node, device: Node, state: dict | None, download: bool
    ) -> Generator[simpy.Event, Any, TrainResult | None]:
        world = self.world
        bits = self.model_bits(device)
        if j == 0:  # (a resource policy's share, power and frequency, for its κ2 edge rounds)
            self.begin_client(r, device)
        if download:
            yield world.radio.transfer(edge, device, bits, "model_down", num_models=1)
        result = yield from self.local_update(
            r, device, state, epochs=self.config.kappa1, seed_key=(j,) if j else ()
        )
        yield world.radio.transfer(device, edge, bits, "model_up", num_models=1)
        return result

    def _edge(
        self, r: int, edge: Node, members: list[Node]
    ) -> Generator[simpy.Event, Any, tuple[dict | None, int, list[float]]]:
        """One edge server's κ2 edge rounds; its model, sample count and clients' losses."""
        world, env = self.world, self.world.env
        bits = self.model_bits()
        if edge is not world.bs:
            yield world.radio.transfer(world.bs, edge, bits, "edge_model_down", num_models=1)
        state = self.global_state
        losses: list[float] = []
        multicast = self.config.downlink == "multicast"
        weight = 0
        for j in range(self.config.kappa2):
            if not members:
                break  # (every client of this edge left)
            if multicast:
                yield world.radio.broadcast(edge, members, bits, "model_down", num_models=1)
            jobs = [
                env.process(self.guarded(d, self._edge_client(r, j, edge, d, state, not multicast)))
                for d in members
            ]
            yield simpy.AllOf(env, jobs)
            for d, job in zip(members, jobs, strict=True):
                if is_cut(job.value):
                    self._cut[d.name] = job.value
                    world.policy.release(r, d, job.value.reason)
            members = [d for d, job in zip(members, jobs, strict=True) if not is_cut(job.value)]
            results = [job.value for job in jobs if not is_cut(job.value)]
            if results:  # (the edge model's weight: the data of its last contributors)
                weight = sum(world.num_samples(d) for d in members)
            yield world.compute.run(edge, self.aggregation_flops(len(results)), "aggregate")
            losses += [res.mean_loss for res in results if res is not None]
            if world.learn:
                from netfl.learning.params import weighted_average

                kept = world.keep_finite(results, [d.name for d in members])
                if kept:
                    state = weighted_average(
                        [res.state for res in kept], [res.num_samples for res in kept]
                    )
        for d in members:  # (their last edge update arrived)
            world.policy.release(r, d, "arrived")
        if edge is not world.bs:
            yield world.radio.transfer(edge, world.bs, bits, "edge_model_up", num_models=1)
        return state, weight, losses

    def round_work(self) -> RoundWork:
        """FedAvg's, with a client's κ2 edge rounds of κ1 epochs each (one download and
        upload counted: the estimate of a policy that plans one edge round)."""
        work = super().round_work()
        epochs = self.world.train_config.epochs
        per = (self.config.kappa1 or epochs) * self.config.kappa2 / epochs
        return replace(
            work,
            train_flops=lambda d: work.train_flops(d) * per,
            train_samples=lambda d: work.train_samples(d) * per,
            deadline_s=None,
        )

    @honours("policy")
    def round(self, r: int) -> Generator[simpy.Event, Any, RoundSummary]:
        world, env = self.world, self.world.env
        clients = yield from self.wait_for_clients(r)
        if not clients:  # (Bernoulli availability, or a policy chose none: an empty round)
            world.policy.close_round(r, {})
            return RoundSummary(num_clients=0, train_loss=float("nan"))
        self._cut: dict[str, object] = {}
        groups = self.edges(clients)
        jobs = [env.process(self._edge(r, edge, members)) for edge, members in groups.values()]
        yield simpy.AllOf(env, jobs)
        outs = [job.value for job in jobs]
        if len(groups) > 1 or next(iter(groups.values()))[0] is not world.bs:
            yield world.compute.run(world.bs, self.aggregation_flops(len(outs)), "aggregate")
        if world.learn:
            from netfl.learning.params import weighted_average

            kept = [(s, n) for s, n, _ in outs if s is not None and n > 0]
            if len(kept) == 1:
                self.global_state = kept[0][0]
            elif kept:
                self.global_state = weighted_average([s for s, _ in kept], [n for _, n in kept])
        losses = [x for _, _, ls in outs for x in ls]
        world.policy.close_round(r, {n: getattr(c, "reason", "cut") for n, c in self._cut.items()})
        return RoundSummary(
            num_clients=len(clients),
            train_loss=float(np.mean(losses)) if losses else float("nan"),
            extra={
                "edges": len(groups),
                "edge_aggregations": self.config.kappa2,
                **cut_counts([self._cut.get(d.name) for d in clients]),
            },
        )
