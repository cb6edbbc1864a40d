"""The seam through which all torch work of a round's devices passes.

A SimPy process *submits* a device's training job when its compute step
begins and takes the *result* when the step ends in simulated time. Jobs are
pure functions of their inputs (seeded per round and device), so running them
serially now, or on a process pool or Ray actors later, never changes results.
"""

from __future__ import annotations

import copy
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from netfl.learning.consensus import class_scores, digest_and_revisit
from netfl.learning.distill import DistillResult, train_distill
from netfl.learning.models import ModelSpec
from netfl.learning.split import Split, split_model
from netfl.learning.split_train import (
    aux_head,
    device_activations,
    train_local_loss,
    train_server_part,
)
from netfl.learning.train import TrainConfig, evaluate_batches, train_local
from netfl.learning.zkt import (
    Generator,
    ZKTServerConfig,
    ZKTServerResult,
    proximal_loss,
    server_update,
)

__all__ = [
    "TrainTask",
    "SplitTask",
    "DistillTask",
    "ZKTServerTask",
    "FedMDTask",
    "EvalTask",
    "LearningContext",
    "SerialExecutor",
]


@dataclass
class TrainTask:
    """One device's local training job (picklable)."""

    model: str
    state: dict[str, torch.Tensor]
    indices: np.ndarray
    config: TrainConfig
    seed: int
    proximal_weight: float = 0.0  # λ of λ‖w − w_start‖² (FedZKT (9)); 0: plain SGD


@dataclass
class ZKTServerTask:
    """FedZKT's server update (Algorithm 3; picklable; result: ``ZKTServerResult``).

    ``devices`` lists ``(model name, state)`` of the participating device models;
    ``value_range`` is the data's per-channel ``(lo, hi)`` for the generator.
    """

    model: str
    state: dict[str, torch.Tensor]
    generator_state: dict[str, torch.Tensor]
    devices: list[tuple[str, dict[str, torch.Tensor]]]
    config: ZKTServerConfig
    seed: int
    value_range: tuple[torch.Tensor, torch.Tensor]


@dataclass
class FedMDTask:
    """One device's FedMD job (picklable).

    ``kind``: ``"transfer"`` (``public_epochs`` on the labelled public set
    ``public_x``/``public_y``, then ``config.epochs`` on the private data;
    result: ``TrainResult``), ``"scores"`` (logits on ``public_x``; result: a
    tensor) or ``"digest"`` (``public_epochs`` towards the consensus
    ``public_y``, then revisit; result: ``TrainResult``).
    """

    kind: Literal["transfer", "scores", "digest"]
    model: str
    state: dict[str, torch.Tensor]
    indices: np.ndarray
    config: TrainConfig
    seed: int
    public_x: torch.Tensor
    public_y: torch.Tensor | None = None
    public_epochs: int = 1


@dataclass
class SplitTask:
    """One device's job of a split scheme (picklable).

    ``kind``: ``"activations"`` (a frozen device part's forward pass over the
    device's data; result: a tensor), ``"server"`` (train the server part on
    ``activations``/``labels``; result: :class:`TrainResult`) or
    ``"local_loss"`` (local-loss DPFL; result: ``LocalLossResult``).
    ``states`` holds the parts' states by name (``device``, ``server``, ``aux``).
    """

    kind: Literal["activations", "server", "local_loss"]
    model: str
    point: str
    states: dict[str, dict[str, torch.Tensor]]
    indices: np.ndarray
    config: TrainConfig
    seed: int
    activations: torch.Tensor | None = None
    labels: torch.Tensor | None = None


@dataclass
class DistillTask:
    """One device's DFL/FD job: weighted CE + KL to the soft targets, then its own
    soft targets (picklable; result: ``DistillResult``)."""

    model: str
    state: dict[str, torch.Tensor]
    indices: np.ndarray
    config: TrainConfig
    seed: int
    targets: torch.Tensor
    ce_weight: float
    kl_weight: float
    temperature: float = 1.0


@dataclass
class EvalTask:
    """Test rows ``[start, stop)`` of the context's test set scored with ``state`` of
    ``model``, in batches of ``batch_size`` (picklable; result: one ``(correct, summed
    loss)`` per batch). Evaluation is not simulated (not charged in time): it runs
    wherever the executor runs jobs, the test set split over its workers."""

    model: str
    state: dict[str, torch.Tensor]
    start: int
    stop: int
    batch_size: int


Task = TrainTask | SplitTask | DistillTask | ZKTServerTask | FedMDTask | EvalTask


@dataclass
class LearningContext:
    """What every worker holds once: the training (and test) tensors and the model builders."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    input_shape: tuple[int, ...]
    num_classes: int
    specs: dict[str, ModelSpec]
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    test_x: torch.Tensor | None = None
    test_y: torch.Tensor | None = None
    _models: dict[str, nn.Module] = field(default_factory=dict, repr=False)
    _splits: dict[str, tuple[Split, nn.Module]] = field(default_factory=dict, repr=False)

    def model(self, name: str) -> nn.Module:
        """A worker-local instance of model ``name`` (built once, reloaded per job)."""
        if name not in self._models:
            self._models[name] = self.specs[name].build(self.input_shape, self.num_classes)
        return self._models[name]

    def split(self, name: str, point: str) -> tuple[Split, nn.Module]:
        """Worker-local device/server parts of model ``name`` at ``point``, and an aux head."""
        key = f"{name}@{point}"
        if key not in self._models:
            model = self.specs[name].build(self.input_shape, self.num_classes)
            split = split_model(model, name, point, self.input_shape)
            self._models[key] = model
            self._splits[key] = (split, aux_head(split.activation_shape, self.num_classes))
        return self._splits[key]

    def generator(self, config: ZKTServerConfig, value_range) -> Generator:
        """FedZKT's generator for this data shape (fresh; its state comes with the task)."""
        return Generator(config.noise_dim, self.input_shape, value_range, config.generator_width)

    def run(self, task: Task) -> Any:
        if isinstance(task, SplitTask):
            return self._run_split(task)
        if isinstance(task, DistillTask):
            return self._run_distill(task)
        if isinstance(task, ZKTServerTask):
            return self._run_zkt(task)
        if isinstance(task, FedMDTask):
            return self._run_fedmd(task)
        if isinstance(task, EvalTask):
            assert self.test_x is not None and self.test_y is not None, "no test set"
            rows = slice(task.start, task.stop)
            return evaluate_batches(
                self.model(task.model),
                task.state,
                self.test_x[rows],
                self.test_y[rows],
                self.specs[task.model].loss_fn(),
                task.batch_size,
                self.device,
            )
        idx = torch.from_numpy(np.asarray(task.indices, dtype=np.int64))
        spec = self.specs[task.model]
        extra = proximal_loss(task.proximal_weight, task.state) if task.proximal_weight else None
        return train_local(
            self.model(task.model),
            task.state,
            self.train_x[idx],
            self.train_y[idx],
            task.config,
            task.seed,
            spec.loss_fn(),
            self.device,
            extra_loss=extra,
        )

    def _run_fedmd(self, task: FedMDTask) -> Any:
        model = self.model(task.model)
        if task.kind == "scores":
            return class_scores(model, task.state, task.public_x, self.device)
        idx = torch.from_numpy(np.asarray(task.indices, dtype=np.int64))
        loss = self.specs[task.model].loss_fn()
        x, y = self.train_x[idx], self.train_y[idx]
        if task.kind == "digest":
            return digest_and_revisit(
                model,
                task.state,
                task.public_x,
                task.public_y,
                task.public_epochs,
                x,
                y,
                task.config,
                task.seed,
                loss,
                self.device,
            )
        state = task.state
        if task.public_epochs > 0:
            pub = replace(task.config, epochs=task.public_epochs)
            state = train_local(
                model, state, task.public_x, task.public_y, pub, task.seed, loss, self.device
            ).state
        return train_local(model, state, x, y, task.config, task.seed + 1, loss, self.device)

    def _run_zkt(self, task: ZKTServerTask) -> ZKTServerResult:
        # one module per device model: autograd keeps each teacher's weights alive
        devices = [(copy.deepcopy(self.model(name)), state) for name, state in task.devices]
        return server_update(
            self.model(task.model),
            task.state,
            self.generator(task.config, task.value_range),
            task.generator_state,
            devices,
            task.config,
            task.seed,
            self.device,
        )

    def _run_distill(self, task: DistillTask) -> DistillResult:
        idx = torch.from_numpy(np.asarray(task.indices, dtype=np.int64))
        return train_distill(
            self.model(task.model),
            task.state,
            self.train_x[idx],
            self.train_y[idx],
            task.targets,
            task.ce_weight,
            task.kl_weight,
            task.config,
            task.seed,
            self.num_classes,
            task.temperature,
            self.device,
        )

    def _run_split(self, task: SplitTask) -> Any:
        split, aux = self.split(task.model, task.point)
        loss = self.specs[task.model].loss_fn()
        if task.kind == "server":
            return train_server_part(
                split.server,
                task.states["server"],
                task.activations,
                task.labels,
                task.config,
                task.seed,
                loss,
                self.device,
            )
        idx = torch.from_numpy(np.asarray(task.indices, dtype=np.int64))
        x, y = self.train_x[idx], self.train_y[idx]
        if task.kind == "activations":
            return device_activations(split.device, task.states["device"], x, device=self.device)
        if task.kind == "local_loss":
            return train_local_loss(
                split.device,
                aux,
                split.server,
                task.states["device"],
                task.states["aux"],
                task.states["server"],
                x,
                y,
                task.config,
                task.seed,
                loss,
                self.device,
            )
        raise ValueError(f"unknown split job {task.kind!r}")


class _DeferredFuture(Future):
    """A future whose job runs in the calling process when its result is first asked
    for (the end of the device's compute step), so a round's results are not all held
    at once: jobs are pure functions of their inputs, so when they run never matters."""

    def __init__(self, run):
        super().__init__()
        self._run = run

    def result(self, timeout=None):
        if self._run is not None:
            run, self._run = self._run, None
            try:
                self.set_result(run())
            except Exception as err:  # raised below, in the SimPy process
                self.set_exception(err)
        return super().result(timeout)


class SerialExecutor:
    """Runs each job in the calling process when its result is collected."""

    def __init__(self, context: LearningContext):
        self.context = context

    def submit(self, task: Task) -> Future:
        return _DeferredFuture(lambda: self.context.run(task))

    def close(self) -> None:
        """Nothing to release (the parallel executors stop their workers here)."""
