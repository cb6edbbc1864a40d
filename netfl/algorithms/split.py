"""DNN-partitioned FL: vanilla DPFL (SplitFed), local-loss DPFL and EcoFed.

D. Wu et al., "EcoFed: Efficient Communication for DNN Partitioning-based
Federated Learning", arXiv 2304.05495 (Table I, Algorithm 1). Classic FL is
``fedavg`` on the whole model. The model is split at ``partition_point``
(:mod:`netfl.learning.split`); device compute runs on the device profile,
server compute on the server profile, every exchange on the radio.

Per device and round (n samples, batches of B, |a| values per sample at the
cut, ``value_bits`` per value):

- ``vanilla_dpfl`` (SplitFed V1): download w_C; per batch: device forward,
  activations up, server forward+backward (with the cut's gradient), gradient
  down, device backward; upload w_C. The server keeps a copy of w_S per
  device; w_C and the copies are aggregated (FedAvg). The weights equal
  whole-model SGD on the device's data (tested), so the torch job is the
  whole model's; the bytes and instants are the split exchange's.
- ``local_loss_dpfl``: download w_C and the auxiliary head; per batch the
  device trains w_C on its local loss and queues the activations for upload
  without waiting (one send queue per device: its link carries one batch at a
  time); the server trains its copy of w_S on each batch as it arrives, in
  order; upload w_C and the head after the last batch. All three aggregated.
- ``ecofed``: w_C pre-trained (``pretrain``) and frozen. A device downloads
  w_C the first time it takes part; in rounds t with t mod ρ = 0 it computes
  the activations of its data batch by batch (forward only) and streams each
  batch (8-bit with ``quantize``, a 32-bit scale per batch) into the
  server's replay buffer; in every
  round the server trains a copy of w_S per selected device on that device's
  buffered activations (none yet: the device is skipped), and aggregates the
  copies. Nothing else crosses the air.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any, ClassVar, Literal

import numpy as np
import simpy
import torch
from pydantic import BaseModel, ConfigDict, Field

from netfl.algorithms.base import RoundSummary, register
from netfl.algorithms.fedavg import FedAvg, FedAvgConfig
from netfl.compute.flops import measure_flops
from netfl.errors import UserError
from netfl.learning import DataRootError, SplitTask, TrainResult, load_dataset, weighted_average
from netfl.learning.pretrain import load_weights, pretrain
from netfl.learning.split import (
    PARTITION_POINTS,
    ReplayBuffer,
    activation_switch,
    dequantize_activations,
    quantize_activations,
    quantized_bits,
    split_model,
)
from netfl.learning.split_train import aux_head
from netfl.learning.train import batch_bounds
from netfl.nodes import Node

__all__ = ["SplitConfig", "VanillaConfig", "VanillaDPFL", "LocalLossDPFL", "EcoFed", "EcoFedConfig"]


class SplitConfig(FedAvgConfig):
    partition_point: Literal["PP1", "PP2", "PP3", "PP4"] = Field(
        "PP2", description="partition point: the first k compute layers stay on the device"
    )
    value_bits: int = Field(32, ge=1, description="bits per activation/gradient value (float32)")


def _keymap(part: torch.nn.Module, whole: torch.nn.Module) -> dict[str, str]:
    """Names of a part's state entries in the whole model's state (shared tensors)."""
    by_id = {id(t): k for k, t in whole.state_dict(keep_vars=True).items()}
    return {k: by_id[id(t)] for k, t in part.state_dict(keep_vars=True).items()}


class _SplitFL(FedAvg):
    """What the three split schemes share: the split, its sizes and FLOPs, state maps."""

    config: SplitConfig
    #: whether the server's backward pass computes the cut's gradient (vanilla DPFL)
    server_input_grad: ClassVar[bool] = False

    @classmethod
    def check_scenario(cls, scenario: Any) -> list[tuple[str, str]]:
        name = scenario.model.name
        if name not in PARTITION_POINTS:
            return [
                (
                    "model.name",
                    f"{cls.name} splits the model at a partition point: use one of "
                    f"{', '.join(sorted(PARTITION_POINTS))} (got {name!r})",
                )
            ]
        return []

    def __init__(self, world, config: SplitConfig):
        super().__init__(world, config)
        spec = world.model.spec
        shape, classes = world.dataset.input_shape, world.dataset.num_classes
        with torch.random.fork_rng():
            model = spec.build(shape, classes)
        self.split = split_model(model, spec.name, config.partition_point, shape)
        self.device_keys = _keymap(self.split.device, model)
        self.server_keys = _keymap(self.split.server, model)
        bpp = world.scenario.model.bits_per_param
        self.device_bits = float(self.split.device_params * bpp)
        self.server_bits = float(self.split.server_params * bpp)
        self.act_values = self.split.activation_values
        key = (spec.name, shape, classes, config.partition_point)
        act = self.split.activation_shape

        def mse(out, _y):
            return out.float().pow(2).mean()

        self.device_flops = measure_flops(
            (*key, "device"), lambda: self.split.device, shape, mse, classes
        )
        self.server_flops = measure_flops(
            (*key, "server", self.server_input_grad),
            lambda: self.split.server,
            act,
            spec.loss_fn(),
            classes,
            input_grad=self.server_input_grad,
        )

    # -- state helpers ---------------------------------------------------------------
    def part_state(self, keys: dict[str, str], whole: dict | None = None) -> dict | None:
        whole = self.global_state if whole is None else whole
        if whole is None:
            return None
        return {k: whole[w] for k, w in keys.items()}

    def merge(self, device_state: dict | None, server_state: dict | None) -> None:
        if self.global_state is None:
            return
        new = dict(self.global_state)
        for part, keys in ((device_state, self.device_keys), (server_state, self.server_keys)):
            if part is not None:
                new.update({keys[k]: v for k, v in part.items()})
        self.global_state = new

    def batches(self, device: Node) -> list[int]:
        """Batch sizes of one device's round (epochs × ⌈n/B⌉ batches)."""
        return self.epoch_batches(device) * self.world.train_config.epochs

    def activation_bits(self, num_samples: int) -> float:
        return float(num_samples * self.act_values * self.config.value_bits)

    def send_after(
        self, previous: simpy.Event | None, src: Node, dst: Node, bits: float, kind: str, **kw
    ) -> simpy.Process:
        """A transfer that starts once ``previous`` (the sender's last queued send) is
        done: a device streams batches through one send queue, never two at once on
        its own link."""

        def proc():
            if previous is not None:
                yield previous
            return (yield self.world.radio.transfer(src, dst, bits, kind, **kw))

        return self.world.env.process(proc())

    def epoch_batches(self, device: Node) -> list[int]:
        """Batch sizes of one pass over a device's data."""
        bounds = batch_bounds(self.world.num_samples(device), self.world.train_config.batch_size)
        return [end - start for start, end in bounds]


class VanillaConfig(SplitConfig):
    coalesce: bool = Field(
        True,
        description="merge a batch's device backward with the next batch's forward into one "
        "compute step (the device does nothing in between: same instants, fewer events)",
    )


@register
class VanillaDPFL(_SplitFL):
    """SplitFed V1 (vanilla DPFL): activations up and gradients down every batch."""

    name = "vanilla_dpfl"
    Config = VanillaConfig
    config: VanillaConfig
    server_input_grad = True

    def model_bits(self, device: Node | None = None) -> float:
        return self.device_bits

    def client_round(
        self, r: int, device: Node, download: bool = True
    ) -> Generator[simpy.Event, Any, TrainResult | None]:
        world = self.world
        radio, compute, bs = world.radio, world.compute, world.bs
        if download:
            yield radio.transfer(bs, device, self.device_bits, "device_model_down", num_models=1)
        future = self._submit_whole(r, device)
        fwd, dev_train = self.device_flops.inference_per_sample, self.device_flops.train_per_sample
        bwd = dev_train - fwd
        srv = self.server_flops.train_per_sample
        batches = self.batches(device)
        carry = 0.0  # a backward pass waiting to be merged into the next forward
        for b in batches:
            kind = "device_backward_forward" if carry else "device_forward"
            yield compute.run(device, carry + fwd * b, kind)
            yield radio.transfer(device, bs, self.activation_bits(b), "activations")
            yield compute.run(bs, srv * b, "server_train")
            yield radio.transfer(bs, device, self.activation_bits(b), "gradients")
            if self.config.coalesce:
                carry = bwd * b
            else:
                yield compute.run(device, bwd * b, "device_backward")
        if carry:
            yield compute.run(device, carry, "device_backward")
        yield radio.transfer(device, bs, self.device_bits, "device_model_up", num_models=1)
        return future.result() if future is not None else None

    def _submit_whole(self, r: int, device: Node):
        from netfl.learning import TrainTask

        world = self.world
        if not world.learn:
            return None
        return world.executor.submit(
            TrainTask(
                model=world.model.spec.name,
                state=self.global_state,
                indices=world.partitions[device.index],
                config=world.train_config,
                seed=world.streams.torch_seed("torch", r, device.index),
            )
        )

    def aggregation_flops(self, num_models: int) -> float:
        """w_C and the per-device copies of w_S: the whole model's size per device."""
        return 2.0 * (self.split.device_params + self.split.server_params) * num_models


@register
class LocalLossDPFL(_SplitFL):
    """Local-loss DPFL: the device trains on an auxiliary loss; activations up only."""

    name = "local_loss_dpfl"
    Config = SplitConfig

    def __init__(self, world, config: SplitConfig):
        super().__init__(world, config)
        classes = world.dataset.num_classes
        with torch.random.fork_rng():
            torch.manual_seed(world.streams.torch_seed("model_init", 1))
            head = aux_head(self.split.activation_shape, classes)
        self.aux_state = {k: v.detach().clone() for k, v in head.state_dict().items()}
        self.aux_bits = float(
            sum(t.numel() for t in self.aux_state.values()) * world.scenario.model.bits_per_param
        )
        self.aux_flops = measure_flops(
            (world.model.spec.name, self.split.activation_shape, classes, "aux"),
            lambda: head,
            self.split.activation_shape,
            world.model.spec.loss_fn(),
            classes,
            input_grad=True,
        )
        self._results: dict[int, Any] = {}

    def model_bits(self, device: Node | None = None) -> float:
        return self.device_bits + self.aux_bits

    def client_round(
        self, r: int, device: Node, download: bool = True
    ) -> Generator[simpy.Event, Any, Any]:
        world, env = self.world, self.world.env
        radio, compute, bs = world.radio, world.compute, world.bs
        if download:
            yield radio.transfer(bs, device, self.model_bits(), "device_model_down", num_models=1)
        future = None
        if world.learn:
            future = world.executor.submit(
                SplitTask(
                    "local_loss",
                    world.model.spec.name,
                    self.config.partition_point,
                    {
                        "device": self.part_state(self.device_keys),
                        "server": self.part_state(self.server_keys),
                        "aux": self.aux_state,
                    },
                    world.partitions[device.index],
                    world.train_config,
                    world.streams.torch_seed("torch", r, device.index),
                )
            )
        dev = self.device_flops.train_per_sample + self.aux_flops.train_per_sample
        srv = self.server_flops.train_per_sample
        previous: simpy.Event | None = None
        up: simpy.Process | None = None
        server_jobs = []
        for b in self.batches(device):
            yield compute.run(device, dev * b, "device_train")
            up = self.send_after(up, device, bs, self.activation_bits(b), "activations")
            previous = env.process(self._server_batch(up, previous, srv * b))
            server_jobs.append(previous)
        yield self.send_after(up, device, bs, self.model_bits(), "device_model_up", num_models=1)
        yield simpy.AllOf(env, server_jobs)
        return future.result() if future is not None else None

    def _server_batch(self, upload: simpy.Process, previous: simpy.Event | None, flops: float):
        """The server trains its copy on a batch once it has arrived and the previous
        batch of the same device is done (sequential SGD)."""
        yield upload
        if previous is not None:
            yield previous
        yield self.world.compute.run(self.world.bs, flops, "server_train")

    def aggregation_flops(self, num_models: int) -> float:
        params = self.split.device_params + self.split.server_params
        return (
            2.0 * (params + self.aux_bits / self.world.scenario.model.bits_per_param) * num_models
        )

    def server_update(self, r, clients, results) -> Generator[simpy.Event, Any, None]:
        yield self.world.compute.run(
            self.world.bs, self.aggregation_flops(len(results)), "aggregate"
        )
        if self.world.learn:
            w = [res.num_samples for res in results]
            self.merge(
                weighted_average([res.device_state for res in results], w),
                weighted_average([res.server_state for res in results], w),
            )
            self.aux_state = weighted_average([res.aux_state for res in results], w)

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "aux_state": self.aux_state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.aux_state = state["aux_state"]


class PretrainConfig(BaseModel):
    """Where EcoFed's frozen device part comes from."""

    model_config = ConfigDict(extra="forbid")

    dataset: str | None = Field(
        "synthetic",
        description="pre-training data set (its images must have the FL data's shape); "
        "'synthetic' draws Gaussian class clusters of that shape; none: random frozen weights",
    )
    root: str | None = Field(None, description="local root of a torchvision pre-training set")
    num_samples: int = Field(2000, ge=10, description="samples of a synthetic pre-training set")
    epochs: int = Field(2, ge=0)
    lr: float = Field(0.01, gt=0)
    batch_size: int = Field(32, ge=1)
    weights_file: str | None = Field(
        None, description="load the whole model's pre-trained state from this local file instead"
    )


class EcoFedConfig(SplitConfig):
    rho: int = Field(2, ge=1, description="activation switch: upload in rounds t with t mod ρ = 0")
    quantize: bool = Field(True, description="8-bit activations (EcoFed's compressor)")
    replay_capacity: int | None = Field(
        None, ge=1, description="replay buffer capacity in samples (none: unbounded)"
    )
    pretrain: PretrainConfig = PretrainConfig()


@register
class EcoFed(_SplitFL):
    """EcoFed (Wu et al., Algorithm 1): frozen pre-trained device part, replayed 8-bit activations.

    Activation switch every ρ rounds, a replay buffer on the server; only the
    server part w_S is trained and aggregated.
    """

    name = "ecofed"
    Config = EcoFedConfig
    config: EcoFedConfig

    def __init__(self, world, config: EcoFedConfig):
        super().__init__(world, config)
        self.buffer = ReplayBuffer(config.replay_capacity)
        self.has_device_part: set[int] = set()
        self.pretrain_info: dict[str, Any] = {}
        if world.learn:
            self._pretrain()

    def _pretrain(self) -> None:
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
        if self.config.quantize:
            return quantized_bits(num_samples * self.act_values, 1)
        return self.activation_bits(num_samples)

    def client_round(
        self, r: int, device: Node, download: bool = True
    ) -> Generator[simpy.Event, Any, Any]:
        world = self.world
        radio, compute, bs = world.radio, world.compute, world.bs
        if device.index not in self.has_device_part:
            yield radio.transfer(bs, device, self.device_bits, "device_model_down", num_models=1)
            self.has_device_part.add(device.index)
        n = world.num_samples(device)
        if activation_switch(r, self.config.rho):
            future = None
            if world.learn:
                future = world.executor.submit(
                    SplitTask(
                        "activations",
                        world.model.spec.name,
                        self.config.partition_point,
                        {"device": self.part_state(self.device_keys)},
                        world.partitions[device.index],
                        world.train_config,
                        0,
                    )
                )
            up: simpy.Process | None = None
            for b in self.epoch_batches(device):  # forward a batch, queue its upload
                yield compute.run(
                    device, self.device_flops.inference_per_sample * b, "device_forward"
                )
                up = self.send_after(up, device, bs, self.upload_bits(b), "activations")
            yield up
            labels = world.dataset.train_y[torch.from_numpy(world.partitions[device.index])]
            if future is not None:
                acts = future.result()
                stored = quantize_activations(acts) if self.config.quantize else acts
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
            future = world.executor.submit(
                SplitTask(
                    "server",
                    world.model.spec.name,
                    self.config.partition_point,
                    {"server": self.part_state(self.server_keys)},
                    world.partitions[device.index],
                    world.train_config,
                    world.streams.torch_seed("torch", r, device.index),
                    activations=acts,
                    labels=labels,
                )
            )
        yield compute.run(bs, flops, "server_train")
        if future is None:
            return _Trained(None, len(labels))
        res = future.result()
        return _Trained(res.state, res.num_samples, res.mean_loss)

    def round(self, r: int) -> Generator[simpy.Event, Any, RoundSummary]:
        env = self.world.env
        clients = self.select_clients(r)
        jobs = [env.process(self.client_round(r, dev)) for dev in clients]
        yield simpy.AllOf(env, jobs)
        trained = [job.value for job in jobs if job.value is not None]
        yield self.world.compute.run(
            self.world.bs, 2.0 * self.split.server_params * len(trained), "aggregate"
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
