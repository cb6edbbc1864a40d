"""FedMD: heterogeneous models agree on class scores over a public data set (FedZKT's baseline).

D. Li, J. Wang, "FedMD: Heterogenous Federated Learning via Model
Distillation", NeurIPS 2019 FL workshop (arXiv 1910.03581), Algorithm 1.
The math is in :mod:`netfl.learning.consensus`.

Round 0 starts with *transfer learning* on every device: it downloads the
labelled public set (charged once at 8 bits per pixel and per label, unless
``public_download: false``), trains ``transfer_epochs`` on it and then
``training.local_epochs`` on its private data. Every round r then:

1. the selected devices compute class scores (logits) on an alignment subset
   of ``alignment_size`` public samples (drawn from the ``fedmd_align`` stream
   of r) and upload them (``alignment_size`` × classes × ``score_bits``);
2. the server averages them into the consensus and sends it back (unicast, or
   one multicast);
3. each device *digests* (``digest_epochs`` on the subset towards the
   consensus, ℓ1 on logits) and *revisits* (``revisit_epochs`` on its private
   data; default ``training.local_epochs``).

There is no global model: accuracy is the mean test accuracy of the device
models (``device_accuracy`` table per device).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from math import prod
from typing import Any

import numpy as np
import simpy
from pydantic import Field, field_validator, model_validator

from netfl.algorithms.algorithm import RoundSummary, register
from netfl.algorithms.context import RoundContext
from netfl.algorithms.fedavg import FedAvgConfig, cut_counts, is_cut
from netfl.algorithms.hetero import HeterogeneousFL
from netfl.core.nodes import Node
from netfl.errors import UserError
from netfl.learning.tasks import FedMDTask
from netfl.scenario.strict import beside, given, refuse

__all__ = ["FedMD", "FedMDConfig"]

_JOB_KEYS = {"transfer": 0, "scores": 1, "digest": 2}


class FedMDConfig(FedAvgConfig):
    public_dataset: str = Field(
        "digits", description="the public data set (resized to the private shape)"
    )
    public_root: str | None = Field(None, description="local root of a torchvision public set")
    public_samples: int | None = Field(
        None,
        ge=1,
        description="use the first N public training images (default: all)",
        le=1_000_000,
    )
    alignment_size: int = Field(
        500, ge=1, description="public samples scored per round", le=1_000_000
    )
    transfer_epochs: int = Field(
        1,
        ge=0,
        description="epochs on the labelled public set in round 0",
        le=1000,
    )
    digest_epochs: int = Field(
        1, ge=0, description="epochs towards the consensus per round", le=1000
    )
    revisit_epochs: int | None = Field(
        None,
        ge=0,
        description="epochs on private data per round (default training.local_epochs)",
        le=1000,
    )
    score_bits: int = Field(32, ge=1, description="bits per class score on the wire", le=64)
    public_download: bool = Field(
        True, description="charge each device's one-time download of the public set in round 0"
    )

    @field_validator("public_dataset")
    @classmethod
    def _known(cls, v: str) -> str:
        from netfl.learning.datasets import DATASETS

        if v not in DATASETS:
            raise ValueError(f"unknown data set {v!r} (valid: {', '.join(sorted(DATASETS))})")
        return v

    @model_validator(mode="after")
    def _root_of_public_set(self) -> FedMDConfig:
        from netfl.learning.datasets import BUNDLED_DATASETS

        if self.public_dataset in BUNDLED_DATASETS:
            refuse(
                given(self, {"public_root"}),
                f"to public_dataset {self.public_dataset!r} (shipped with a package)",
            )
        return self


@register
class FedMD(HeterogeneousFL):
    """FedMD (Li & Wang, 2019): public-data consensus, digest, revisit."""

    name = "fedmd"
    Config = FedMDConfig
    config: FedMDConfig
    #: a device off at round 0 does its transfer learning at its first round on; one
    #: that leaves mid-round is out of the consensus (or of the digest) from there
    supports_availability = True

    @classmethod
    def resolve_options(cls, options: dict[str, Any], base_dir: Any) -> dict[str, Any]:
        """``public_root`` relative to the scenario file's folder."""
        root = options.get("public_root")
        if isinstance(root, str):
            return {**options, "public_root": beside(root, base_dir)}
        return options

    @classmethod
    def check_scenario(cls, scenario: Any) -> list[tuple[str, str]]:
        return super().check_scenario(scenario) + cls.unread_model_keys(
            scenario, {"size_bits", "bits_per_param"}, "sends class scores only: no model travels"
        )

    def __init__(self, world: RoundContext, config: FedMDConfig):
        from netfl.learning import DataRootError, load_dataset
        from netfl.learning.consensus import adapt_images

        super().__init__(world, config)
        try:
            public = load_dataset(
                config.public_dataset, config.public_root, 0.2, world.scenario.seed
            )
        except DataRootError as err:
            raise UserError(f"{world.source}: algorithm.public_root: {err}") from None
        n = min(config.public_samples or len(public.train_y), len(public.train_y))
        if config.transfer_epochs > 0 and public.num_classes > world.dataset.num_classes:
            raise UserError(
                f"{world.source}: algorithm.public_dataset: {config.public_dataset!r} has "
                f"{public.num_classes} classes, the private set {world.dataset.num_classes}; "
                "set transfer_epochs: 0 to skip training on its labels"
            )
        self.public_x = adapt_images(public.train_x[:n], world.dataset.input_shape)
        self.public_y = public.train_y[:n]
        self.public_bits = float(n * (prod(world.dataset.input_shape) * 8 + 8))
        self.align = min(config.alignment_size, n)
        self.revisit = (
            config.revisit_epochs
            if config.revisit_epochs is not None
            else world.train_config.epochs
        )
        self.score_payload_bits = float(self.align * world.dataset.num_classes * config.score_bits)
        #: devices that have done their transfer learning
        self.transferred: set[int] = set()

    # -- steps -----------------------------------------------------------------
    def _job(self, r: int, device: Node, kind: str, x, y, epochs: int):
        """Submit a device's FedMD job (learn mode); the private part of a digest job runs
        ``revisit_epochs``, of the transfer job ``training.local_epochs``."""
        world = self.world
        if not world.learn:
            return None
        cfg = world.train_config
        if kind == "digest":
            cfg = replace(cfg, epochs=self.revisit)
        return world.submit_device_job(
            FedMDTask,
            r,
            device,
            seed_key=(_JOB_KEYS[kind],),
            config=cfg,
            kind=kind,
            state=self.device_states[device.index],
            public_x=x,
            public_y=y,
            public_epochs=epochs,
        )

    def transfer_learning(self, device: Node) -> Generator[simpy.Event, Any, None]:
        """Round 0: download the public set, train on it, then on the private data."""
        world = self.world
        if self.config.public_download:
            yield world.radio.transfer(world.bs, device, self.public_bits, "public_data_down")
        m, n_priv = world.device_model(device).flops, world.num_samples(device)
        flops = m.train_per_sample * (
            len(self.public_y) * self.config.transfer_epochs + n_priv * world.train_config.epochs
        )
        fut = self._job(
            0, device, "transfer", self.public_x, self.public_y, self.config.transfer_epochs
        )
        yield world.compute.run(device, flops, "train")
        self.transferred.add(device.index)
        if fut is not None:
            res = fut.result()
            if world.keep_finite([res], [device.name]):
                self.device_states[device.index] = res.state

    def client_scores(self, r, device, x) -> Generator[simpy.Event, Any, Any]:
        world = self.world
        fut = self._job(r, device, "scores", x, None, 0)
        flops = world.device_model(device).flops.inference_per_sample * self.align
        yield world.compute.run(device, flops, "score")
        yield world.radio.transfer(device, world.bs, self.score_payload_bits, "scores_up")
        return fut.result() if fut is not None else None

    def client_digest(self, r, device, x, consensus, download) -> Generator[simpy.Event, Any, Any]:
        world = self.world
        if download:
            yield world.radio.transfer(world.bs, device, self.score_payload_bits, "consensus_down")
        m = world.device_model(device).flops
        flops = m.train_per_sample * (
            self.align * self.config.digest_epochs + world.num_samples(device) * self.revisit
        )
        # every device's scores dropped (NaN/Inf): nothing to digest, but the step is
        # charged all the same — the clock never depends on learned values (a resumed
        # run replays it without learning)
        lost = world.learn and consensus is None
        fut = (
            None
            if lost
            else self._job(r, device, "digest", x, consensus, self.config.digest_epochs)
        )
        yield world.compute.run(device, flops, "train")
        if fut is None:
            return None
        res = fut.result()
        if not world.keep_finite([res], [device.name]):
            return None
        self.device_states[device.index] = res.state
        return res

    def round(self, r: int) -> Generator[simpy.Event, Any, RoundSummary]:
        import torch

        world, env = self.world, self.world.env
        self._round = r
        cuts: dict[str, Any] = {}

        def each(devices: list[Node], steps) -> Generator[simpy.Event, Any, list[tuple]]:
            """``steps(d)`` for every device at once; those that arrived, with values."""
            jobs = [env.process(self.guarded(d, steps(d))) for d in devices]
            yield simpy.AllOf(env, jobs)
            for d, job in zip(devices, jobs, strict=True):
                if is_cut(job.value):
                    cuts[d.name] = job.value
            return [
                (d, job.value)
                for d, job in zip(devices, jobs, strict=True)
                if not is_cut(job.value)
            ]

        if r == 0:  # transfer learning: every device on now (the others at their first round)
            yield from each(world.available_devices(r), self.transfer_learning)
        clients = yield from self.wait_for_clients(r)
        if not clients:  # (Bernoulli availability: an empty round)
            return RoundSummary(num_clients=0, train_loss=float("nan"))
        late_starters = [d for d in clients if d.index not in self.transferred]
        if late_starters:
            yield from each(late_starters, self.transfer_learning)
        rng = world.streams.generator("fedmd_align", r)
        idx = torch.from_numpy(np.sort(rng.choice(len(self.public_y), self.align, replace=False)))
        x = self.public_x[idx]
        ready = [d for d in clients if d.name not in cuts]
        scored = yield from each(ready, lambda d: self.client_scores(r, d, x))
        n_cls = world.dataset.num_classes
        yield world.compute.run(world.bs, float(self.align * n_cls * len(scored)), "aggregate")
        consensus = None
        if world.learn:
            scores = world.keep_finite([v for _, v in scored], [d.name for d, _ in scored])
            consensus = torch.stack(scores).mean(dim=0) if scores else None
        members = [d for d, _ in scored]
        multicast = self.config.downlink == "multicast"
        if multicast and members:
            yield world.radio.broadcast(
                world.bs, members, self.score_payload_bits, "consensus_down"
            )
        digested = yield from each(
            members, lambda d: self.client_digest(r, d, x, consensus, not multicast)
        )
        losses = [v.mean_loss for _, v in digested if v is not None]
        return RoundSummary(
            num_clients=len(clients),
            train_loss=float(np.mean(losses)) if losses else float("nan"),
            extra=cut_counts([cuts.get(d.name) for d in clients]),
        )

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "transferred": sorted(self.transferred)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.transferred = set(state.get("transferred", [d.index for d in self.world.devices]))

    def evaluate(self) -> tuple[float, float]:
        """Mean test accuracy and loss of the device models (FedMD has no global model)."""
        return self.evaluate_devices()
