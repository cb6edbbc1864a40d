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

import zlib
from collections.abc import Generator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy
from pydantic import Field

from netfl.algorithms.algorithm import RoundSummary, honours, register
from netfl.algorithms.fedavg import FedAvg, FedAvgConfig, cut_counts, is_cut
from netfl.algorithms.update_coding import UpdateCoding
from netfl.core.nodes import Node
from netfl.policies.resource_policy import RoundWork
from netfl.scenario.codec_section import CodecSection

if TYPE_CHECKING:
    from netfl.learning.train import TrainResult

__all__ = ["HierFAVG", "HierFAVGConfig"]


def _key(node: Node) -> int:
    """A node's key in the codecs' random streams (its name's CRC-32: stable)."""
    return zlib.crc32(node.name.encode())


class HierFAVGConfig(FedAvgConfig):
    kappa1: int | None = Field(
        None,
        ge=1,
        description="κ1: local epochs between edge aggregations (default: training.local_epochs)",
        le=1000,
    )
    kappa2: int = Field(2, ge=1, description="κ2: edge aggregations per cloud aggregation", le=1000)
    edge_uplink_codec: CodecSection = Field(
        default_factory=CodecSection,
        description="how an edge's model goes to the cloud (docs/codecs.md; the client "
        "tier's are uplink_codec and downlink_codec)",
    )
    edge_downlink_codec: CodecSection = Field(
        default_factory=CodecSection,
        description="how the cloud's model goes to an edge (docs/codecs.md)",
    )


@register
class HierFAVG(FedAvg):
    """Client-edge-cloud hierarchical FedAvg (Liu et al., ICC 2020, Algorithm 1)."""

    #: a client that leaves is out of its edge's later edge rounds (and of this one's)
    supports_availability = True

    supports_over_the_air = False  # (its clients upload to their edges: digital)
    name = "hierfavg"
    Config = HierFAVGConfig
    config: HierFAVGConfig

    def __init__(self, world: Any, config: HierFAVGConfig):
        super().__init__(world, config)
        #: the backhaul tier's codecs (the client tier's: ``coding``); its error-feedback
        #: memory by edge
        self.edge_coding = UpdateCoding(
            world,
            config.edge_uplink_codec,
            config.edge_downlink_codec,
            lambda _n: self.model_bits(),
        )

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
        if j == 0:  # (a resource policy's share, power and frequency, for its κ2 edge rounds)
            self.begin_client(r, device)
        down, start = self.coding.download((r, j, _key(edge)), state, device)
        if download:
            yield world.radio.transfer(edge, device, down, "model_down", num_models=1)
        result = yield from self.local_update(
            r, device, start, epochs=self.config.kappa1, seed_key=(j,) if j else ()
        )
        up, decoded = self.coding.upload(
            (r, j, device.index), device, None if result is None else result.state, start, state
        )
        if decoded is not None:
            result = replace(result, state=decoded)
        yield world.radio.transfer(device, edge, up, "model_up", num_models=1)
        return result

    def _edge(
        self, r: int, edge: Node, members: list[Node]
    ) -> Generator[simpy.Event, Any, tuple[dict | None, int, list[float]]]:
        """One edge server's κ2 edge rounds; its model, sample count and clients' losses."""
        world, env = self.world, self.world.env
        state = self.global_state
        if edge is not world.bs:  # (the backhaul tier: its codecs)
            bits, state = self.edge_coding.download((r, _key(edge)), state, edge)
            yield world.radio.transfer(world.bs, edge, bits, "edge_model_down", num_models=1)
        start = state
        losses: list[float] = []
        multicast = self.config.downlink == "multicast"
        weight = 0
        for j in range(self.config.kappa2):
            if not members:
                break  # (every client of this edge left)
            if multicast:
                bits = self.coding.download((r, j, _key(edge)), state, None)[0]
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
                    if job.value.reason == "left":  # (its state, codec memory included)
                        self.coding.forget(d)
            members = [d for d, job in zip(members, jobs, strict=True) if not is_cut(job.value)]
            results = [job.value for job in jobs if not is_cut(job.value)]
            if results:  # (the edge model's weight: the data of its last contributors)
                weight = sum(world.num_samples(d) for d in members)
            yield world.compute.run(edge, self.aggregation_flops(len(results)), "aggregate")
            losses += [res.mean_loss for res in results if res is not None]
            if world.learn:
                from netfl.learning.params import weighted_average

                kept = world.keep_finite(results, [d.name for d in members])
                if kept and self.coding.vote:  # (signSGD: the edge's majority vote)
                    from netfl.codecs.sign_sgd import MajorityVote

                    vote = MajorityVote(state, self.coding.raw_keys())
                    for i, res in enumerate(kept):
                        vote.add(i, res.state)
                    state = vote.result()
                elif kept:
                    state = weighted_average(
                        [res.state for res in kept], [res.num_samples for res in kept]
                    )
        for d in members:  # (their last edge update arrived)
            world.policy.release(r, d, "arrived")
        if edge is not world.bs:
            bits, decoded = self.edge_coding.upload(
                (r, _key(edge)), edge, state, start, self.global_state
            )
            state = decoded if decoded is not None else state
            yield world.radio.transfer(edge, world.bs, bits, "edge_model_up", num_models=1)
        return state, weight, losses

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "edge_codec_memory": self.edge_coding.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.edge_coding.load_state_dict(state.get("edge_codec_memory", {}))

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
