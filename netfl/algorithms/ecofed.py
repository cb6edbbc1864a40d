"""EcoFed: a pre-trained frozen device part, an activation switch, a replay buffer
and 8-bit activations (the split scheme of :mod:`netfl.algorithms.split_fl`).

D. Wu et al., "EcoFed: Efficient Communication for DNN Partitioning-based
Federated Learning", arXiv 2304.05495 (Algorithm 1).

w_C is pre-trained (``pretrain``) and frozen. A device downloads w_C the first
time it takes part; in rounds t with t mod ρ = 0 it computes the activations
of its data batch by batch (forward only; with ``training.augment: [hflip]`` of
freshly flipped images, seeded per round and device) and streams each batch (8-bit
with ``quantize``, quantised with its own 32-bit scale) into the server's replay
buffer; in
every round the server trains a copy of w_S per selected device on that
device's buffered activations (none yet: the device is skipped), and
aggregates the copies. Nothing else crosses the air.

Replay buffer semantics: it holds, per device, the activations of its latest upload
as they arrived (quantised codes and per-batch scales) with their labels. Between
switch rounds the server trains on exactly those — never re-augmented (they are
activations, not images) — so with augmentation a fresh upload differs from a replay,
and without it ρ changes only the bytes on air.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import numpy as np
import simpy
from pydantic import BaseModel, ConfigDict, Field, model_validator

from netfl.algorithms.algorithm import RoundSummary, register
from netfl.algorithms.context import RoundContext
from netfl.algorithms.fedavg import cut_counts, is_cut
from netfl.algorithms.split_fl import SplitConfig, SplitFL
from netfl.core.nodes import Node
from netfl.errors import UserError
from netfl.scenario.strict import beside, given, refuse

__all__ = ["EcoFed", "EcoFedConfig", "PretrainConfig"]


class PretrainConfig(BaseModel):
    """Where EcoFed's frozen device part comes from."""

    model_config = ConfigDict(extra="forbid")

    dataset: str | None = Field(
        "synthetic",
        description="pre-training data set (its images must have the FL data's shape); "
        "'synthetic' draws Gaussian class clusters of that shape; none: random frozen weights",
    )
    root: str | None = Field(None, description="local root of a torchvision pre-training set")
    num_samples: int = Field(
        2000, ge=10, description="samples of a synthetic pre-training set", le=1_000_000
    )
    epochs: int = Field(2, ge=0, le=1000)
    lr: float = Field(0.01, gt=0, le=100.0)
    batch_size: int = Field(32, ge=1, le=100_000)
    weights_file: str | None = Field(
        None, description="load the whole model's pre-trained state from this local file instead"
    )

    @model_validator(mode="after")
    def _keys_of_source(self) -> PretrainConfig:
        from netfl.learning.datasets import BUNDLED_DATASETS

        training = {"num_samples", "lr", "batch_size", "root"}
        if self.weights_file is not None:
            refuse(given(self, training | {"dataset", "epochs"}), "with weights_file (loaded)")
        elif self.dataset is None:
            refuse(given(self, training | {"epochs"}), "with dataset: null (no pre-training)")
        elif self.epochs == 0:
            refuse(given(self, training | {"dataset"}), "with epochs: 0 (no pre-training)")
        if self.dataset != "synthetic":
            refuse(given(self, {"num_samples"}), f"to dataset {self.dataset!r}")
        if self.dataset in BUNDLED_DATASETS:
            refuse(given(self, {"root"}), f"to dataset {self.dataset!r} (shipped with a package)")
        return self


class EcoFedConfig(SplitConfig):
    rho: int = Field(
        2, ge=1, description="activation switch: upload in rounds t with t mod ρ = 0", le=1_000_000
    )
    quantize: bool = Field(True, description="8-bit activations (EcoFed's compressor)")
    replay_capacity: int | None = Field(
        None,
        ge=1,
        description="replay buffer capacity in samples (none: unbounded)",
        le=10_000_000,
    )
    pretrain: PretrainConfig = PretrainConfig()

    @model_validator(mode="after")
    def _bits_of_quantizer(self) -> EcoFedConfig:
        if self.quantize:  # (8-bit values and a scale per batch: value_bits is not read)
            refuse(given(self, {"value_bits"}), "with quantize: true (8-bit activations)")
        return self


@register
class EcoFed(SplitFL):
    """EcoFed (Wu et al., Algorithm 1): frozen pre-trained device part, replayed 8-bit activations.

    Activation switch every ρ rounds, a replay buffer on the server; only the
    server part w_S is trained and aggregated.
    """

    name = "ecofed"
    Config = EcoFedConfig
    config: EcoFedConfig

    @classmethod
    def resolve_options(cls, options: dict[str, Any], base_dir: Any) -> dict[str, Any]:
        """``pretrain.root`` and ``pretrain.weights_file`` relative to the scenario file's
        folder."""
        pretrain = options.get("pretrain")
        if not isinstance(pretrain, dict):
            return options
        files = {
            k: beside(v, base_dir)
            for k in ("root", "weights_file")
            if isinstance(v := pretrain.get(k), str)
        }
        return {**options, "pretrain": {**pretrain, **files}} if files else options

    @classmethod
    def check_scenario(cls, scenario: Any) -> list[tuple[str, str]]:
        problems = super().check_scenario(scenario)
        if scenario.algorithm.options().get("downlink") == "multicast":
            problems.append(
                (
                    "algorithm.downlink",
                    "ecofed sends each device its frozen device part once, by unicast, in "
                    "its first round; multicast does not apply",
                )
            )
        return problems

    def __init__(self, world: RoundContext, config: EcoFedConfig):
        from netfl.learning.split_model import ReplayBuffer

        super().__init__(world, config)
        self.buffer = ReplayBuffer(config.replay_capacity)
        self.has_device_part: set[int] = set()
        self.pretrain_info: dict[str, Any] = {}
        if world.learn:
            self._pretrain()

    def _pretrain(self) -> None:
        import torch

        from netfl.learning import DataRootError, load_dataset
        from netfl.learning.pretrain import load_weights, pretrain

        world, pc = self.world, self.config.pretrain
        where = f"{world.source}: algorithm.pretrain"
        if pc.weights_file:
            try:
                loaded = load_weights(pc.weights_file)
            except (OSError, ValueError, RuntimeError) as err:
                raise UserError(f"{where}.weights_file: {err}") from None
            wanted = set(self.device_keys.values())
            if not wanted <= set(loaded):
                raise UserError(
                    f"{where}.weights_file: {pc.weights_file} lacks the device part's "
                    f"{sorted(wanted - set(loaded))[:3]}"
                )
            self.merge({k: loaded[w].clone() for k, w in self.device_keys.items()}, None)
            self.pretrain_info = {"pretrain_source": str(pc.weights_file)}
            return
        if pc.dataset is None or pc.epochs == 0:
            self.pretrain_info = {"pretrain_source": "none (random frozen device part)"}
            return
        shape = world.dataset.input_shape
        options = (
            {
                "num_samples": pc.num_samples,
                "shape": shape,
                "num_classes": world.dataset.num_classes,
            }
            if pc.dataset == "synthetic"
            else {}
        )
        seed = world.scenario.seed + 7919  # a data set of its own, not the FL data
        try:
            data = load_dataset(pc.dataset, pc.root, 0.2, seed, **options)
        except (KeyError, DataRootError) as err:
            raise UserError(f"{where}.dataset: {err}") from None
        if data.input_shape != shape:
            raise UserError(
                f"{where}.dataset: {pc.dataset} images are {data.input_shape}, "
                f"the FL data's are {shape}"
            )
        from netfl.learning import TrainConfig

        cfg = TrainConfig(lr=pc.lr, momentum=0.9, batch_size=pc.batch_size, epochs=pc.epochs)
        init = self.global_state
        if data.num_classes != world.dataset.num_classes:  # another head for another label set
            with torch.random.fork_rng():
                torch.manual_seed(world.streams.torch_seed("pretrain_init"))
                init = world.model.spec.build(shape, data.num_classes).state_dict()
        res = pretrain(
            world.model.spec,
            init,
            data,
            {"name": pc.dataset, "root": pc.root, **options, "seed": seed},
            cfg,
            world.streams.torch_seed("pretrain"),
            world.torch_device,
        )
        self.merge({k: res.state[w] for k, w in self.device_keys.items()}, None)
        flops = world.model.flops.train_per_sample * res.num_samples * pc.epochs
        self.pretrain_info = {
            "pretrain_source": f"{pc.dataset} ({res.num_samples} samples, {pc.epochs} epochs)",
            "pretrain_train_accuracy": res.train_accuracy,
            "pretrain_flops": flops,
            "pretrain_server_time_s": flops / world.bs.compute.effective_flops_per_s,
            "pretrain_wall_s": res.wall_s,
            "pretrain_cached": res.cached,
        }

    def info(self) -> dict[str, Any]:
        return dict(self.pretrain_info)

    def model_bits(self, device: Node | None = None) -> float:
        return self.server_bits

    def upload_bits(self, num_samples: int) -> float:
        """One batch's activations: 8-bit values and a 32-bit scale, or full precision."""
        from netfl.learning.split_model import quantized_bits

        if self.config.quantize:
            return quantized_bits(num_samples * self.act_values, 1)
        return self.activation_bits(num_samples)

    def client_round(
        self, r: int, device: Node, download: bool = True
    ) -> Generator[simpy.Event, Any, Any]:
        import torch

        from netfl.learning import SplitTask
        from netfl.learning.split_model import (
            activation_switch,
            dequantize_activations,
            quantize_activations,
        )

        world = self.world
        radio, compute, bs = world.radio, world.compute, world.bs
        if device.index not in self.has_device_part:
            yield radio.transfer(bs, device, self.device_bits, "device_model_down", num_models=1)
            self.has_device_part.add(device.index)
        n = world.num_samples(device)
        if activation_switch(r, self.config.rho):
            future = None
            if world.learn:  # (a frozen part's forward pass: seed 0 unless augmenting)
                future = world.submit_device_job(
                    SplitTask,
                    r,
                    device,
                    seed=None if world.train_config.augment else 0,
                    kind="activations",
                    point=self.config.partition_point,
                    states={"device": self.part_state(self.device_keys)},
                )
            up: simpy.Process | None = None
            batches = self.epoch_batches(device)
            for b in batches:  # forward a batch, queue its upload
                yield compute.run(
                    device, self.device_flops.inference_per_sample * b, "device_forward"
                )
                up = self.send_after(up, device, bs, self.upload_bits(b), "activations")
            yield up
            labels = world.dataset.train_y[torch.from_numpy(world.partitions[device.index])]
            if future is not None:
                acts = future.result()
                # one scale per uploaded (and charged) batch
                stored = quantize_activations(acts, batches) if self.config.quantize else acts
            else:  # timing mode: the buffer keeps the sample count only
                stored = torch.empty((n, 0))
            self.buffer.put(device.index, stored, labels)
        entry = self.buffer.get(device.index)
        if entry is None:
            return None  # nothing uploaded yet, or evicted: no replay for this device
        stored, labels = entry
        flops = self.server_flops.train_per_sample * len(labels) * world.train_config.epochs
        future = None
        if world.learn:
            acts = dequantize_activations(stored) if self.config.quantize else stored
            future = world.submit_device_job(
                SplitTask,
                r,
                device,
                kind="server",
                point=self.config.partition_point,
                states={"server": self.part_state(self.server_keys)},
                activations=acts,
                labels=labels,
            )
        yield compute.run(bs, flops, "server_train")
        if future is None:
            return _Trained(None, len(labels))
        res = future.result()
        return _Trained(res.state, res.num_samples, res.mean_loss)

    def round(self, r: int) -> Generator[simpy.Event, Any, RoundSummary]:
        from netfl.learning import weighted_average
        from netfl.learning.split_model import activation_switch

        env = self.world.env
        clients = yield from self.wait_for_clients(r)
        if not clients:  # (Bernoulli availability: an empty round)
            return RoundSummary(num_clients=0, train_loss=float("nan"))
        jobs = [env.process(self.guarded(dev, self.client_round(r, dev))) for dev in clients]
        yield simpy.AllOf(env, jobs)
        outcomes = [job.value for job in jobs]  # (a device that left: no server training)
        done = [
            (d, v)
            for d, v in zip(clients, outcomes, strict=True)
            if v is not None and not is_cut(v)
        ]
        trained = self.world.keep_finite([v for _, v in done], [d.name for d, _ in done])
        # (every server part that was trained is aggregated, finite or not: the clock
        # never depends on learned values — a resumed run replays it without learning)
        yield self.world.compute.run(
            self.world.bs, 2.0 * self.split.server_params * len(done), "aggregate"
        )
        if self.world.learn and trained:
            self.merge(
                None,
                weighted_average([t.state for t in trained], [t.num_samples for t in trained]),
            )
        losses = [t.loss for t in trained if math.isfinite(t.loss)]
        return RoundSummary(
            num_clients=len(clients),
            train_loss=float(np.mean(losses)) if losses else float("nan"),
            extra={
                "activation_upload": float(activation_switch(r, self.config.rho)),
                "server_trained": float(len(trained)),
                "buffer_samples": float(len(self.buffer)),
                **cut_counts(outcomes),
            },
        )

    def state_dict(self) -> dict[str, Any]:
        return {
            **super().state_dict(),
            "buffer": self.buffer.state_dict(),
            "has_device_part": sorted(self.has_device_part),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.buffer.load_state_dict(state["buffer"])
        self.has_device_part = set(state["has_device_part"])


class _Trained:
    """A server-side copy of w_S trained for one device."""

    def __init__(self, state, num_samples: int, loss: float = float("nan")):
        self.state = state
        self.num_samples = num_samples
        self.loss = loss
