"""The seam through which all torch work of a round's devices passes.

A SimPy process *submits* a device's training job when its compute step
begins and takes the *result* when the step ends in simulated time. Jobs are
pure functions of their inputs (seeded per round and device), so running them
serially now, or on a process pool or Ray actors later, never changes results.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from torch import nn

from netfl.learning.consensus import class_scores, digest_and_revisit
from netfl.learning.distill import DistillResult, train_distill
from netfl.learning.flower_client import run_flower_client
from netfl.learning.models import ModelSpec
from netfl.learning.split_model import Split, split_model
from netfl.learning.split_train import (
    aux_head,
    device_activations,
    train_local_loss,
    train_server_part,
)
from netfl.learning.tasks import (
    DistillTask,
    EvalTask,
    FedMDTask,
    FlowerClientTask,
    SplitTask,
    Task,
    TrainTask,
    ZKTServerTask,
)
from netfl.learning.train import evaluate_batches, train_local
from netfl.learning.zkt import (
    Generator,
    ZKTServerConfig,
    ZKTServerResult,
    proximal_loss,
    server_update,
)

__all__ = ["TASK_RUNNERS", "runs", "LearningContext", "SerialExecutor"]  # (tasks: tasks.py)


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
        """Run ``task`` with the runner registered for its type (:data:`TASK_RUNNERS`)."""
        runner = TASK_RUNNERS.get(type(task))
        if runner is None:
            known = ", ".join(sorted(t.__name__ for t in TASK_RUNNERS))
            raise TypeError(f"no runner for {type(task).__name__} (registered: {known})")
        return runner(self, task)

    def _run_eval(self, task: EvalTask) -> list[tuple[int, float]]:
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

    def _run_train(self, task: TrainTask) -> Any:
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
            task.kl_direction,
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
            return device_activations(
                split.device,
                task.states["device"],
                x,
                task.config.batch_size,
                device=self.device,
                augment=task.config.augment,
                seed=task.seed,
            )
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


#: the runner of each task type: ``runner(context, task) -> result`` (a new job type is
#: one dataclass in :mod:`netfl.learning.tasks` and one entry here)
TASK_RUNNERS: dict[type, Callable[[LearningContext, Any], Any]] = {}


def runs(task_type: type, runner: Callable[[LearningContext, Any], Any]) -> None:
    """Register ``runner`` for ``task_type``; registering one type twice is an error."""
    if task_type in TASK_RUNNERS:
        raise ValueError(f"{task_type.__name__} has a runner already")
    TASK_RUNNERS[task_type] = runner


runs(TrainTask, LearningContext._run_train)
runs(SplitTask, LearningContext._run_split)
runs(DistillTask, LearningContext._run_distill)
runs(ZKTServerTask, LearningContext._run_zkt)
runs(FedMDTask, LearningContext._run_fedmd)
runs(EvalTask, LearningContext._run_eval)


runs(FlowerClientTask, run_flower_client)  # (imports flwr when a Flower run uses it)


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
