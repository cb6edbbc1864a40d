"""FedZKT: heterogeneous on-device models, zero-shot knowledge transfer on the server.

L. Zhang, D. Wu, X. Yuan, "FedZKT: Zero-Shot Knowledge Transfer towards
Resource-Constrained Federated Learning with Heterogeneous On-Device Models",
ICDCS 2022 (arXiv 2109.03775), Algorithms 1-3. The math is in
:mod:`netfl.learning.zkt`.

Each device runs its own architecture (``devices.models`` or
``devices.groups[].model``); ``model.name`` is the server's global model F.
Round r:

1. the server selects a portion p (``fraction``) of the devices; the others
   are stragglers and keep their parameters;
2. every selected device trains T_l (``training.local_epochs``) epochs on
   (9), Σ_{D_k} CE + λ‖w_k − w_k^{last}‖² — w_k^{last} is what it last received,
   i.e. the parameters it starts the round with — as batch-mean CE plus
   (λ/|D_k|)‖·‖² (the same objective divided by |D_k|), and uploads its own model;
3. the server runs Algorithm 3 over the uploaded models (generator and F
   adversarially, then F distilled into each device model), charged on the
   server's compute profile from the FLOPs of exactly those steps while the
   devices idle;
4. each selected device downloads its own updated parameters.

Transfers are each device's own model size. Accuracy (``rounds.csv``) is the
global model's; ``device_accuracy_mean/min/max`` and the ``device_accuracy``
table give every device model's test accuracy on evaluation rounds.
"""

from __future__ import annotations

from collections.abc import Generator as Gen
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import simpy
from pydantic import Field

from netfl.algorithms.algorithm import AlgorithmConfig, RoundSummary, register
from netfl.algorithms.context import RoundContext
from netfl.algorithms.fedavg import cut_counts, is_cut
from netfl.algorithms.hetero import HeterogeneousFL
from netfl.core.nodes import Node
from netfl.learning.tasks import ZKTServerTask

if TYPE_CHECKING:
    from netfl.learning.zkt import Generator, PassFlops

__all__ = ["FedZKT", "FedZKTConfig"]

#: the server's losses of a distillation, one column each in ``rounds.csv``
_LOSSES = ("generator_loss", "global_loss", "transfer_loss")


class FedZKTConfig(AlgorithmConfig):
    fraction: float = Field(1.0, gt=0.0, le=1.0, description="p: share of devices active per round")
    min_clients: int = Field(
        1, ge=1, description="at least this many active devices per round", le=100_000
    )
    l2_weight: float = Field(
        1.0,
        ge=0.0,
        description="λ of (9) on the paper's scale: (9) sums CE over the device's |D_k| samples "
        "plus λ‖w − w_last‖² (the paper: λ = 1); a batch-mean CE gets λ/|D_k| (0: no ℓ2 pull)",
        le=1e6,
    )
    server_iterations: int = Field(200, ge=1, description="n_D of Algorithm 3", le=100_000)
    distill_batch_size: int = Field(
        256, ge=2, description="generated samples per iteration", le=100_000
    )
    noise_dim: int = Field(100, ge=1, description="length of the generator's noise z", le=4096)
    generator_width: int = Field(
        64, ge=1, description="channels of the generator's last block", le=1024
    )
    generator_lr: float = Field(
        1e-3, gt=0.0, description="Adam learning rate of the generator", le=10.0
    )
    server_lr: float = Field(
        0.01, gt=0.0, description="SGD learning rate of F and device models", le=100.0
    )
    server_momentum: float = Field(0.0, ge=0.0, lt=1.0, description="SGD momentum on the server")
    lr_decay: float = Field(0.3, gt=0.0, le=1.0, description="factor at 1/2 and 3/4 of n_D")
    loss: Literal["sl", "kl", "kl_ens", "l1"] = Field(
        "sl",
        description="disagreement: softmax-ℓ1 (5), KL (3) as the paper writes it KL(F ‖ f_ens), "
        "its reverse KL(f_ens ‖ F), or ℓ1 on logits (4)",
    )
    device_bn: Literal["frozen", "update"] = Field(
        "frozen",
        description="device models' BatchNorm while distilled on generated images: frozen "
        "(running statistics of the device's real data kept) or update",
    )


#: the server's generator step (weights, Adam moments, one batch's activations) at most
MAX_GENERATOR_BYTES = 8 * 2**30


@register
class FedZKT(HeterogeneousFL):
    """FedZKT (Zhang et al., 2022, Algorithms 1-3): per-device architectures, data-free server distillation."""

    name = "fedzkt"
    Config = FedZKTConfig  # type: ignore[assignment]
    config: FedZKTConfig  # type: ignore[assignment]

    @classmethod
    def check_scenario(cls, scenario: Any) -> list[tuple[str, str]]:
        """The server's generator step must fit in memory: estimated before the run (the
        generator's float32 weights with Adam's two moments, and one distillation batch's
        activations through it, forward and backward) against
        :data:`MAX_GENERATOR_BYTES`, for the largest image netfl's data sets have (3×32×32)
        or the synthetic shape."""
        cfg = cls.Config(**scenario.algorithm.options())
        c, h, w = (
            tuple(scenario.data.synthetic.shape)
            if scenario.data.dataset == "synthetic"
            else (3, 32, 32)
        )
        h4, w4 = -(-h // 4), -(-w // 4)
        g = cfg.generator_width
        weights = cfg.noise_dim * 2 * g * h4 * w4 + 9 * (4 * g * g + 2 * g * g + g * c)
        per_sample = 2 * g * h4 * w4 + 2 * g * (2 * h4) * (2 * w4) * 3 + g * h * w * 3 + c * h * w
        need = 4 * (3 * weights + 2 * cfg.distill_batch_size * per_sample)
        if need <= MAX_GENERATOR_BYTES:
            return []
        return [
            (
                "algorithm",
                f"the generator (noise_dim {cfg.noise_dim}, generator_width {g}) with "
                f"distill_batch_size {cfg.distill_batch_size} needs about {need / 2**30:,.0f} GiB "
                f"(at most {MAX_GENERATOR_BYTES / 2**30:g}); lower them",
            )
        ]

    def __init__(self, world: RoundContext, config: FedZKTConfig):
        import torch

        from netfl.learning import clone_state
        from netfl.learning.zkt import ZKTServerConfig

        super().__init__(world, config)  # type: ignore[arg-type]
        self.server_config = ZKTServerConfig(
            iterations=config.server_iterations,
            batch_size=config.distill_batch_size,
            noise_dim=config.noise_dim,
            generator_width=config.generator_width,
            generator_lr=config.generator_lr,
            model_lr=config.server_lr,
            model_momentum=config.server_momentum,
            lr_decay=config.lr_decay,
            loss=config.loss,
            device_bn=config.device_bn,
        )
        x = world.dataset.train_x
        self.value_range = (x.amin(dim=(0, 2, 3)), x.amax(dim=(0, 2, 3)))
        self.server_flops = self._server_flops_per_device()
        self.generator_state: dict[str, torch.Tensor] | None = None
        self._server_losses: dict[str, float] = {}
        self._distill_flops = 0.0  # (the last round's distillation)
        if world.learn:
            with torch.random.fork_rng():
                torch.manual_seed(world.streams.torch_seed("generator_init"))
                gen = self._generator()
            self.generator_state = clone_state(gen.state_dict())

    def _generator(self) -> Generator:
        from netfl.learning.zkt import Generator

        cfg, ds = self.server_config, self.world.dataset
        return Generator(cfg.noise_dim, ds.input_shape, self.value_range, cfg.generator_width)

    def _server_flops_per_device(self) -> tuple[PassFlops, PassFlops, dict[str, PassFlops]]:
        """Measured per-sample FLOPs of the generator, F and each device architecture."""
        from netfl.compute.flops import measure_flops, measure_input_grad_flops
        from netfl.learning.zkt import PassFlops

        world, cfg = self.world, self.server_config
        shape, classes = world.dataset.input_shape, world.dataset.num_classes

        def passes(name: str) -> PassFlops:
            spec = world.models[name].spec
            key = (name, shape, classes)
            build = lambda: spec.build(shape, classes)  # noqa: E731
            return PassFlops(
                world.models[name].flops.inference_per_sample,
                measure_input_grad_flops(key, build, shape),
                world.models[name].flops.train_per_sample,
            )

        g = measure_flops(
            ("fedzkt_generator", shape, cfg.noise_dim, cfg.generator_width),
            self._generator,
            (cfg.noise_dim,),
            lambda out, _y: out.mean(),
            1,
        )
        gen = PassFlops(g.inference_per_sample, float("nan"), g.train_per_sample)
        return gen, passes(world.model.name), {n: passes(n) for n in world.models}

    def server_update_flops(self, clients: list[Node]) -> float:
        """FLOPs of Algorithm 3 over ``clients``' models (:func:`server_update_flops`)."""
        from netfl.learning.zkt import server_update_flops

        gen, glob, per_name = self.server_flops
        devs = [per_name[self.world.device_model(d).name] for d in clients]
        return server_update_flops(self.server_config, gen, glob, devs)

    # -- device side -----------------------------------------------------------
    def local_update(self, r, device, state, epochs=None, seed_key=()):
        """T_l epochs of (9) on the device's own architecture: (9) is Σ_{D_k} CE + λ‖w −
        w^{last}‖²; training minimises it divided by |D_k| — the batch-mean CE plus
        (λ/|D_k|)‖w − w^{last}‖² — so λ keeps the paper's scale."""
        weight = self.config.l2_weight / max(self.world.num_samples(device), 1)
        return (
            yield from super().local_update(
                r,
                device,
                self.device_states.get(device.index),
                epochs,
                seed_key,
                weight,
            )
        )

    def client_round(self, r, device, download=True):
        """Train and upload (the download of the updated model ends the round)."""
        result = yield from self.local_update(r, device, None)
        yield self.world.radio.transfer(
            device, self.world.bs, self.model_bits(device), "model_up", num_models=1
        )
        return result

    # -- server side -------------------------------------------------------------
    def server_update(self, r, clients, results) -> Gen[simpy.Event, Any, None]:
        """Algorithm 3 on the server's compute profile; then store each device's new model."""
        world = self.world
        future = None
        arrived = clients
        if world.learn:
            ok = {id(res) for res in world.keep_finite(results, [d.name for d in clients])}
            kept = [(d, res) for d, res in zip(clients, results, strict=True) if id(res) in ok]
            for dev, res in kept:
                self.device_states[dev.index] = res.state
            clients = [d for d, _ in kept]  # dropped devices keep their models
        if world.learn and clients:
            future = world.executor.submit(
                ZKTServerTask(
                    model=world.model.name,
                    state=self.global_state,
                    generator_state=self.generator_state,
                    devices=[
                        (world.device_model(d).name, self.device_states[d.index]) for d in clients
                    ],
                    config=self.server_config,
                    seed=world.streams.torch_seed("zkt_noise", r),
                    value_range=self.value_range,
                )
            )
        # (the FLOPs of the distillation over the models that arrived, finite or not —
        # the clock never depends on learned values: a resumed run replays it without
        # learning; none arrived, none runs)
        self._distill_flops = self.server_update_flops(arrived) if arrived else 0.0
        if arrived:
            yield world.compute.run(world.bs, self._distill_flops, "distill")
        if world.learn and not clients:  # (no distillation ran: no losses of one either)
            self._server_losses = dict.fromkeys(_LOSSES, float("nan"))
        if future is not None:
            out = future.result()
            self.global_state = out.global_state
            self.generator_state = out.generator_state
            for dev, state in zip(clients, out.device_states, strict=True):
                self.device_states[dev.index] = state
            self._server_losses = {k: getattr(out, k) for k in _LOSSES}

    supports_availability = True  # (a device that leaves: out of the distillation)

    def round(self, r: int) -> Gen[simpy.Event, Any, RoundSummary]:
        env, world = self.world.env, self.world
        self._round = r
        clients = yield from self.wait_for_clients(r)
        if not clients:  # (Bernoulli availability: an empty round)
            return RoundSummary(num_clients=0, train_loss=float("nan"))
        jobs = [env.process(self.guarded(dev, self.client_round(r, dev))) for dev in clients]
        yield simpy.AllOf(env, jobs)
        outcomes = [job.value for job in jobs]
        arrived = [(d, o) for d, o in zip(clients, outcomes, strict=True) if not is_cut(o)]
        results = [o for _, o in arrived]
        yield from self.server_update(r, [d for d, _ in arrived], results)
        downs = [env.process(self.guarded(d, self._send_model(d))) for d, _ in arrived]
        yield simpy.AllOf(env, downs)
        for (d, res), down in zip(arrived, downs, strict=True):
            if is_cut(down.value) and res is not None and world.learn:
                self.device_states[d.index] = res.state  # (it keeps the model it trained)
            if is_cut(down.value):
                outcomes[clients.index(d)] = down.value
        losses = [res.mean_loss for res in results if res is not None]
        return RoundSummary(
            num_clients=len(clients),
            train_loss=float(np.mean(losses)) if losses else float("nan"),
            extra={
                "server_flops": self._distill_flops,
                **self._server_losses,
                **cut_counts(outcomes),
            },
        )

    def _send_model(self, device: Node) -> Gen[simpy.Event, Any, Any]:
        """The device's updated model down (the round's last step)."""
        world = self.world
        return (
            yield world.radio.transfer(
                world.bs, device, self.model_bits(device), "model_down", num_models=1
            )
        )

    # -- evaluation and state ------------------------------------------------------
    def evaluate(self) -> tuple[float, float]:
        """The global model's accuracy; every device model is evaluated too."""
        self.evaluate_devices()
        return self.world.evaluate(self.global_state)

    def state_dict(self) -> dict[str, Any]:
        from netfl.learning import clone_state

        state = super().state_dict()
        state["generator_state"] = (
            clone_state(self.generator_state) if self.generator_state else None
        )
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.generator_state = state["generator_state"]
