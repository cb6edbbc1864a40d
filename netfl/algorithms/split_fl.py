"""DNN-partitioned FL: vanilla DPFL (SplitFed), local-loss DPFL and EcoFed.

D. Wu et al., "EcoFed: Efficient Communication for DNN Partitioning-based
Federated Learning", arXiv 2304.05495 (Table I, Algorithm 1). Classic FL is
``fedavg`` on the whole model. The model is split at ``partition_point``
(:mod:`netfl.learning.split_model`); device compute runs on the device profile,
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
- ``ecofed``: :mod:`netfl.algorithms.ecofed`.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import simpy
from pydantic import Field

from netfl.algorithms.algorithm import register
from netfl.algorithms.context import RoundContext
from netfl.algorithms.fedavg import FedAvg, FedAvgConfig
from netfl.core.activity import DeviceCut, quiet_cut
from netfl.core.nodes import Node
from netfl.learning.tasks import SplitTask, TrainTask
from netfl.policies.resource_policy import RoundWork

if TYPE_CHECKING:
    import torch

    from netfl.learning.train import TrainResult

__all__ = ["SplitConfig", "SplitFL", "VanillaConfig", "VanillaDPFL", "LocalLossDPFL"]


class SplitConfig(FedAvgConfig):
    partition_point: Literal["PP1", "PP2", "PP3", "PP4"] = Field(
        "PP2", description="partition point: the first k compute layers stay on the device"
    )
    value_bits: int = Field(
        32, ge=1, description="bits per activation/gradient value (float32)", le=64
    )


def _keymap(part: torch.nn.Module, whole: torch.nn.Module) -> dict[str, str]:
    """Names of a part's state entries in the whole model's state (shared tensors)."""
    by_id = {id(t): k for k, t in whole.state_dict(keep_vars=True).items()}
    return {k: by_id[id(t)] for k, t in part.state_dict(keep_vars=True).items()}


class SplitFL(FedAvg):
    """What the three split schemes share: the split, its sizes and FLOPs, state maps."""

    codec_directions = frozenset()  # (its own payloads: no update codec yet)
    supports_over_the_air = False

    config: SplitConfig
    #: whether the server's backward pass computes the cut's gradient (vanilla DPFL)
    server_input_grad: ClassVar[bool] = False

    @classmethod
    def check_scenario(cls, scenario: Any) -> list[tuple[str, str]]:
        from netfl.learning.split_model import PARTITION_POINTS

        unread = cls.unread_model_keys(
            scenario,
            {"size_bits"},
            "sizes each part by its parameters × model.bits_per_param (size_bits is the whole "
            "model's)",
        )
        name = scenario.model.name
        if name not in PARTITION_POINTS:
            return [
                (
                    "model.name",
                    f"{cls.name} splits the model at a partition point: use one of "
                    f"{', '.join(sorted(PARTITION_POINTS))} (got {name!r})",
                ),
                *unread,
            ]
        return unread

    def __init__(self, world: RoundContext, config: SplitConfig):
        import torch

        from netfl.compute.flops import measure_flops
        from netfl.learning.split_model import split_model

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

    def aggregator(self, r: int, clients: list[Node]) -> None:
        """None: the parts are merged from every update at once."""
        return None

    def device_flops_per_sample(self) -> float:
        """The device's training FLOPs per sample: its part forward and backward."""
        return self.device_flops.train_per_sample

    def round_work(self) -> RoundWork:
        """What a client's part of the round moves and computes, for a resource policy's
        estimates: its part down and up (:meth:`model_bits`), every epoch's activations
        up and — where the server sends the cut's gradient back (vanilla DPFL) — as many
        gradient bits down, and the device-side FLOPs. The server's steps are not the
        device's work and are not in it; the per-batch transfers are counted as one
        volume (their bits at the expected rate)."""
        work = super().round_work()
        epochs = self.world.train_config.epochs
        per_sample = self.device_flops_per_sample()

        def activations(device: Node) -> float:
            return self.activation_bits(self.world.num_samples(device)) * epochs

        back = self.server_input_grad
        return replace(
            work,
            download_bits=lambda d: work.download_bits(d) + (activations(d) if back else 0.0),
            upload_bits=lambda d: self.model_bits(d) + activations(d),
            train_flops=lambda d: per_sample * work.train_samples(d),
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

        # (its device cut, it fails; a queued send nothing waits on yet must not stop
        # the simulation: the client sees the cut at its own step)
        return quiet_cut(self.world.env.process(proc()))

    def epoch_batches(self, device: Node) -> list[int]:
        """Batch sizes of one pass over a device's data."""
        from netfl.learning.train import batch_bounds

        bounds = batch_bounds(self.world.num_samples(device), self.world.train_config.batch_size)
        return [end - start for start, end in bounds]


class VanillaConfig(SplitConfig):
    coalesce: bool = Field(
        True,
        description="merge a batch's device backward with the next batch's forward into one "
        "compute step (the device does nothing in between: same instants, fewer events)",
    )


@register
class VanillaDPFL(SplitFL):
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
        self.begin_client(r, device)  # (a resource policy's share, power and frequency)
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
        return self.world.submit_device_job(TrainTask, r, device, state=self.global_state)

    def aggregation_flops(self, num_models: int) -> float:
        """w_C and the per-device copies of w_S: the whole model's size per device."""
        return 2.0 * (self.split.device_params + self.split.server_params) * num_models


@register
class LocalLossDPFL(SplitFL):
    """Local-loss DPFL: the device trains on an auxiliary loss; activations up only."""

    name = "local_loss_dpfl"
    Config = SplitConfig

    def __init__(self, world: RoundContext, config: SplitConfig):
        import torch

        from netfl.compute.flops import measure_flops
        from netfl.learning.split_train import aux_head

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
            (world.model.name, self.split.activation_shape, classes, "aux"),
            lambda: head,
            self.split.activation_shape,
            world.model.spec.loss_fn(),
            classes,
            input_grad=True,
        )
        self._results: dict[int, Any] = {}

    def model_bits(self, device: Node | None = None) -> float:
        return self.device_bits + self.aux_bits

    def device_flops_per_sample(self) -> float:
        """Its part and the auxiliary head, forward and backward."""
        return self.device_flops.train_per_sample + self.aux_flops.train_per_sample

    def client_round(
        self, r: int, device: Node, download: bool = True
    ) -> Generator[simpy.Event, Any, Any]:
        world, env = self.world, self.world.env
        radio, compute, bs = world.radio, world.compute, world.bs
        self.begin_client(r, device)  # (a resource policy's share, power and frequency)
        if download:
            yield radio.transfer(bs, device, self.model_bits(), "device_model_down", num_models=1)
        future = None
        if world.learn:
            future = world.submit_device_job(
                SplitTask,
                r,
                device,
                kind="local_loss",
                point=self.config.partition_point,
                states={
                    "device": self.part_state(self.device_keys),
                    "server": self.part_state(self.server_keys),
                    "aux": self.aux_state,
                },
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
        batch of the same device is done (sequential SGD); a batch that never arrives (the
        device left) ends the device's batches (its client sees the cut itself)."""
        try:
            yield upload
            if previous is not None:
                yield previous
        except DeviceCut:
            return
        yield self.world.compute.run(self.world.bs, flops, "server_train")

    def aggregation_flops(self, num_models: int) -> float:
        params = self.split.device_params + self.split.server_params
        return (
            2.0 * (params + self.aux_bits / self.world.scenario.model.bits_per_param) * num_models
        )

    def server_update(self, r, clients, results) -> Generator[simpy.Event, Any, None]:
        from netfl.learning import weighted_average

        yield self.world.compute.run(
            self.world.bs, self.aggregation_flops(len(results)), "aggregate"
        )
        if self.world.learn:
            results = self.world.keep_finite(results, [d.name for d in clients])
            if not results:
                return
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
