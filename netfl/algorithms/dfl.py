"""DFL: FedAvg plus label-wise soft targets and a dynamic loss ratio, and the FD baseline.

T. Liu et al., "Efficient Federated Learning for AIoT Applications Using
Knowledge Distillation", IEEE IoT Journal (arXiv 2111.14347), Algorithms 1-2.
The math is in :mod:`netfl.learning.distill`.

``dfl`` round r: the BS sends each selected device the global model w_r and
the soft targets Y_r (one download of |w| + N_cls² values); the device trains
E epochs on (7) ρ·CE + (1 − ρ)·KL(f(x) ‖ Y_r[y]) with ρ from (10) (or a fixed
ratio), predicts its samples once more for its label-wise soft targets Y_k,
and uploads Δ_k = w_k − w_r (9) with Y_k (|w| + N_cls² values). The server
applies (5) — computed as the weighted average of the devices' models, which
equals w_r + Σ|D_k|Δ_k/Σ|D_k| exactly in real arithmetic and avoids the
round-off of subtracting w_r and adding it back — and (6) with per-label
weights. With T = 1 (ρ ≡ 1) the local steps and the aggregation are
FedAvg's (tested), only the soft targets ride along.

``fd`` (federated distillation, Jeong et al.): only soft targets travel; each
device keeps its own model and trains on CE + ``kd_weight``·KL to the global
soft targets. Its accuracy is the mean test accuracy of the devices' models
(a fixed seeded sample of ``eval_devices`` of them, default 10).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Generator
from dataclasses import replace
from typing import Any, ClassVar, Literal

import numpy as np
import simpy
from pydantic import Field, model_validator

from netfl.algorithms.algorithm import RoundSummary, honours, register
from netfl.algorithms.context import RoundContext
from netfl.algorithms.fedavg import FedAvg, FedAvgConfig
from netfl.algorithms.hooks import Payload
from netfl.core.nodes import Node
from netfl.scenario.strict import given, refuse

__all__ = ["DFL", "DFLConfig", "FD", "FDConfig"]


class DFLConfig(FedAvgConfig):
    ratio: Literal["dynamic", "fixed"] = Field(
        "dynamic", description="ρ of (7): dynamic (10) max(1 − r/R, T), or fixed"
    )
    threshold: float = Field(0.6, ge=0.0, le=1.0, description="T of (10)")
    fixed_ratio: float = Field(0.5, ge=0.0, le=1.0, description="ρ when ratio is fixed")
    temperature: float = Field(
        1.0, gt=0.0, description="softmax temperature of the soft targets", le=100.0
    )
    kl_direction: Literal["model_to_targets", "targets_to_model"] = Field(
        "model_to_targets",
        description="KL term of (7): KL(f(x) ‖ Y[y]) as the paper writes it, or KL(Y[y] ‖ f(x)) "
        "(standard distillation's direction; the paper does not say which it means)",
    )
    value_bits: int = Field(32, ge=1, description="bits per soft-target value on the wire", le=64)

    @model_validator(mode="after")
    def _keys_of_ratio(self) -> DFLConfig:
        unused = {"dynamic": {"fixed_ratio"}, "fixed": {"threshold"}}[self.ratio]
        refuse(given(self, unused), f"to ratio {self.ratio!r}")
        return self


class _SoftTargets(FedAvg):
    """What DFL and FD share: the global soft targets and their payload."""

    supports_over_the_air = False  # (soft targets travel beside the model)

    def __init__(self, world: RoundContext, config):
        from netfl.learning.distill import uniform_soft_targets

        super().__init__(world, config)
        self.num_classes = world.dataset.num_classes
        self.soft = uniform_soft_targets(self.num_classes)
        self.soft_bits = float(self.num_classes**2 * config.value_bits)

    @abstractmethod
    def ce_kl_weights(self, r: int) -> tuple[float, float]:
        """Weights of CE and of KL to the soft targets in round ``r``'s local loss."""

    def train_flops(self, device: Node, epochs: int | None = None) -> float:
        """E epochs of training (default: ``training.local_epochs``) plus one prediction
        pass for the soft targets."""
        m, n = self.world.model.flops, self.world.num_samples(device)
        e = self.world.train_config.epochs if epochs is None else epochs
        return m.train_per_sample * n * e + m.inference_per_sample * n

    def distill_update(
        self,
        r: int,
        device: Node,
        state: dict | None,
        epochs: int | None = None,
        targets: Any = None,
    ) -> Generator[simpy.Event, Any, Any]:
        from netfl.learning import DistillTask

        world = self.world
        cfg = world.train_config
        if epochs is not None and epochs != cfg.epochs:  # (the configure hook's)
            cfg = replace(cfg, epochs=epochs)
        future = None
        if world.learn:
            ce, kl = self.ce_kl_weights(r)
            future = world.submit_device_job(
                DistillTask,
                r,
                device,
                state=state,
                targets=(self.soft if targets is None else targets).clone(),
                ce_weight=ce,
                kl_weight=kl,
                temperature=self.config.temperature,
                kl_direction=self.config.kl_direction,
                config=cfg,
            )
        yield world.compute.run(device, self.train_flops(device, cfg.epochs), "train")
        return future.result() if future is not None else None

    def aggregator(self, r: int, clients: list[Node]) -> None:
        """None: the server aggregates the soft targets (and DFL the models) of every
        update at once."""
        return None

    def soft_targets_correct(self) -> int:
        """How many rows y of the global soft targets Y peak on label y (a diagnostic:
        the KL term of (7) only teaches once most rows do)."""
        import torch

        return int((self.soft.argmax(dim=1) == torch.arange(self.num_classes)).sum())

    @honours(
        "deadline_s", "policy", "outage"
    )  # (FedAvg's round, a column added: its deadline kept)
    def round(self, r: int) -> Generator[simpy.Event, Any, RoundSummary]:
        summary = yield from super().round(r)
        if self.world.learn:
            summary.extra["soft_targets_correct"] = self.soft_targets_correct()
        return summary

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "soft_targets": self.soft.clone()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.soft = state["soft_targets"].clone()


@register
class DFL(_SoftTargets):
    """DFL (Liu et al., Algorithms 1-2): weights and label-wise soft targets."""

    name = "dfl"
    Config = DFLConfig
    config: DFLConfig

    def __init__(self, world: RoundContext, config: DFLConfig):
        from netfl.algorithms.update_coding import UpdateCoding

        super().__init__(world, config)
        #: the codecs encode the model (its update up); the soft targets travel beside
        #: it at ``value_bits`` each
        self.coding = UpdateCoding(
            world,
            config.uplink_codec,
            config.downlink_codec,
            self.model_bits,
            beside_bits=lambda _device: self.soft_bits,
        )

    def rho(self, r: int) -> float:
        from netfl.learning.distill import dynamic_ratio

        if self.config.ratio == "fixed":
            return self.config.fixed_ratio
        return dynamic_ratio(r, self.world.scenario.training.rounds, self.config.threshold)

    def ce_kl_weights(self, r: int) -> tuple[float, float]:
        rho = self.rho(r)
        return rho, 1.0 - rho

    def model_bits(self, device: Node | None = None) -> float:
        """The model (or its update Δ) and the soft targets travel together."""
        return self.world.model.size_bits + self.soft_bits

    def local_update(self, r, device, state, epochs=None, seed_key=()):
        return (yield from self.distill_update(r, device, state, epochs))

    def server_update(self, r, clients, results) -> Generator[simpy.Event, Any, None]:
        from netfl.learning import weighted_average
        from netfl.learning.distill import aggregate_soft_targets

        world = self.world
        flops = self.aggregation_flops(len(results)) + 2.0 * self.num_classes**2 * len(results)
        yield world.compute.run(world.bs, flops, "aggregate")
        if world.learn:
            results = world.keep_finite(results, [d.name for d in clients])
            if not results:
                return
            weights = [res.num_samples for res in results]
            if self.coding.vote:  # (signSGD: the majority vote of the updates)
                from netfl.codecs.sign_sgd import MajorityVote

                vote = MajorityVote(self.global_state, self.coding.raw_keys())
                for i, res in enumerate(results):
                    vote.add(i, res.state)
                self.global_state = vote.result()
            else:
                self.global_state = weighted_average([res.state for res in results], weights)
            self.soft = aggregate_soft_targets(
                self.soft, [(res.soft_targets, res.label_counts) for res in results]
            )

    @honours(
        "deadline_s", "policy", "outage"
    )  # (FedAvg's round, a column added: its deadline kept)
    def round(self, r: int) -> Generator[simpy.Event, Any, RoundSummary]:
        summary = yield from super().round(r)
        summary.extra["rho"] = self.rho(r)
        return summary


class FDConfig(DFLConfig):
    kd_weight: float = Field(
        1.0, ge=0.0, description="weight of the KL term (CE has weight 1)", le=1e3
    )

    @model_validator(mode="after")
    def _keys_of_ratio(self) -> FDConfig:  # (replaces DFL's: FD has no ratio)
        refuse(
            given(self, {"ratio", "threshold", "fixed_ratio"}),
            "to fd (its loss weighs CE by 1 and KL by kd_weight)",
        )
        return self

    eval_devices: int | None = Field(
        10,
        ge=1,
        description="accuracy = mean over this many devices' models, a fixed seeded sample "
        "(none: every device; each is a full test-set evaluation)",
        le=100_000,
    )


@register
class FD(_SoftTargets):
    """Federated distillation (Jeong et al.): only soft targets travel; models stay local."""

    name = "fd"
    codec_vote_fields = frozenset()  # (soft targets are averaged per label, never voted)
    download_kind: ClassVar[str] = "soft_targets_down"  # (no model travels)
    download_models: ClassVar[int] = 0
    Config = FDConfig
    config: FDConfig

    @classmethod
    def check_scenario(cls, scenario: Any) -> list[tuple[str, str]]:
        return super().check_scenario(scenario) + cls.unread_model_keys(
            scenario, {"size_bits", "bits_per_param"}, "sends soft targets only: no model travels"
        )

    def __init__(self, world: RoundContext, config: FDConfig):
        from netfl.algorithms.update_coding import UpdateCoding

        super().__init__(world, config)
        self.device_states: dict[int, dict] = {}
        #: the codecs encode the soft targets, the only payload (the device's own, up;
        #: the global ones, down)
        n = self.num_classes**2
        self.coding = UpdateCoding(
            world,
            config.uplink_codec,
            config.downlink_codec,
            self.model_bits,
            shapes=lambda: [(n, True, 32)],
            raw=frozenset,
        )

    def download(self, r: int, device: Node | None) -> tuple[float, dict | None]:
        """Round ``r``'s global soft targets on the way to ``device``: their bits on air
        and what the device decodes (``{"soft": Y}``; None in timing mode)."""
        return self.coding.download((r,), {"soft": self.soft} if self.world.learn else None, device)

    def payload(self, r: int, device: Node, result: Any) -> Payload:
        """The device's soft targets Y_k as they go on air — Δ = Y_k − Ŷ against the
        global targets it decoded, so that an error-feedback memory carries what was not
        sent of a change — and what the server rebuilds on its own Y, each row clamped at
        0 and renormalised (a lossy change of a distribution is not one)."""
        import torch

        start = self.download(r, device)[1]  # (what the device decoded of the global Y)
        if start is None:
            start = {"soft": torch.zeros_like(self.soft)}
        sent = None if result is None else {"soft": result.soft_targets}
        bits, decoded = self.coding.upload(
            (r, device.index), device, sent, start, {"soft": self.soft}
        )
        if decoded is not None and result is not None and self.coding.uplink is not None:
            # (a lossy change of a distribution is not one: each row back on the simplex's
            # side, clamped at 0 and renormalised)
            rows = decoded["soft"].clamp(min=0.0)
            rows = rows / rows.sum(dim=1, keepdim=True).clamp(min=1e-12)
            result = replace(result, soft_targets=rows)
        return Payload(bits, result)

    def ce_kl_weights(self, r: int) -> tuple[float, float]:
        return 1.0, self.config.kd_weight

    def client_round(
        self, r: int, device: Node, download: bool = True
    ) -> Generator[simpy.Event, Any, Any]:
        world = self.world
        settings = self.begin_client(r, device)
        bits, targets = self.download(r, device)
        if download:
            yield world.radio.transfer(world.bs, device, bits, self.download_kind)
        # (with multicast the round already broadcast them)
        state = self.device_states.get(device.index, self.global_state)
        targets = None if targets is None else targets["soft"]
        result = yield from self.distill_update(r, device, state, settings.epochs, targets)
        kept = result is not None and world.keep_finite([result], [device.name])
        if kept:  # (its own model: kept even if its upload never arrives)
            self.device_states[device.index] = result.state
        upload = self.payload(r, device, result if kept else None)
        yield world.radio.transfer(device, world.bs, upload.bits, "soft_targets_up")
        return upload.result

    def model_bits(self, device: Node | None = None) -> float:
        """Only the soft targets travel (a multicast sends them once)."""
        return self.soft_bits

    def server_update(self, r, clients, results) -> Generator[simpy.Event, Any, None]:
        from netfl.learning.distill import aggregate_soft_targets

        world = self.world
        yield world.compute.run(world.bs, 2.0 * self.num_classes**2 * len(results), "aggregate")
        results = [res for res in results if res is not None]
        if world.learn and results:
            self.soft = aggregate_soft_targets(
                self.soft, [(res.soft_targets, res.label_counts) for res in results]
            )

    def evaluate(self) -> tuple[float, float]:
        """Mean test accuracy and loss of the devices' models (untrained ones: the initial
        model) over ``eval_devices`` devices drawn once from the ``fd_eval`` stream."""
        devices = self.world.devices
        k = self.config.eval_devices
        if k is not None and k < len(devices):
            rng = self.world.streams.generator("fd_eval")
            devices = [devices[i] for i in sorted(rng.choice(len(devices), k, replace=False))]
        scores = self.world.evaluate_many(
            [(self.device_states.get(d.index, self.global_state), None) for d in devices]
        )
        return float(np.mean([a for a, _ in scores])), float(np.mean([loss for _, loss in scores]))

    def state_dict(self) -> dict[str, Any]:
        from netfl.learning import clone_state

        return {
            **super().state_dict(),
            "device_states": {k: clone_state(v) for k, v in self.device_states.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.device_states = dict(state["device_states"])
