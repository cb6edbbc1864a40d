"""The seam through which all torch work of a round's devices passes.

A SimPy process *submits* a device's training job when its compute step
begins and takes the *result* when the step ends in simulated time. Jobs are
pure functions of their inputs (seeded per round and device), so running them
serially now, or on a process pool or Ray actors later, never changes results.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from netfl.learning.models import ModelSpec
from netfl.learning.train import TrainConfig, TrainResult, train_local

__all__ = ["TrainTask", "LearningContext", "SerialExecutor"]


@dataclass
class TrainTask:
    """One device's local training job (picklable)."""

    model: str
    state: dict[str, torch.Tensor]
    indices: np.ndarray
    config: TrainConfig
    seed: int


@dataclass
class LearningContext:
    """What every worker holds once: the training tensors and the model builders."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    input_shape: tuple[int, ...]
    num_classes: int
    specs: dict[str, ModelSpec]
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    _models: dict[str, nn.Module] = field(default_factory=dict, repr=False)

    def model(self, name: str) -> nn.Module:
        """A worker-local instance of model ``name`` (built once, reloaded per job)."""
        if name not in self._models:
            self._models[name] = self.specs[name].build(self.input_shape, self.num_classes)
        return self._models[name]

    def run(self, task: TrainTask) -> TrainResult:
        idx = torch.from_numpy(np.asarray(task.indices, dtype=np.int64))
        spec = self.specs[task.model]
        return train_local(
            self.model(task.model),
            task.state,
            self.train_x[idx],
            self.train_y[idx],
            task.config,
            task.seed,
            spec.loss_fn(),
            self.device,
        )


class SerialExecutor:
    """Runs each job in the calling process when it is submitted."""

    def __init__(self, context: LearningContext):
        self.context = context

    def submit(self, task: TrainTask) -> Future[TrainResult]:
        fut: Future[TrainResult] = Future()
        try:
            fut.set_result(self.context.run(task))
        except Exception as err:  # surfaced by fut.result() in the SimPy process
            fut.set_exception(err)
        return fut
