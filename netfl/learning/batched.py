"""Training many clients at once: the ``batched`` executor (``learning.executor: batched``).

The local-training jobs (:class:`~netfl.learning.tasks.TrainTask`) pending at the same
simulated instant — a round's trainers, in practice — that share an architecture and SGD
settings run as one computation: their parameters stacked along a client axis, one
``torch.func.vmap`` of ``grad`` over the clients per SGD step (``functional_call`` of
the one model). Each client keeps what the serial executor gives it: its own data and
batch order (the batches of :func:`netfl.learning.train.minibatches`, seed and
augmentation included), its own momentum buffer, weight decay and proximal term. A
client with fewer batches is masked on the steps it does not have (no update, its
momentum untouched); a short last batch is masked sample by sample (its loss the mean
over its real samples). Results equal the serial executor's up to the order of float
sums (tested: 1e-5 relative).

A job is run when its result is first asked for (the end of its compute step), together
with every pending job of its group; the others' results wait in their futures. What is
not batched runs serially, as in :class:`~netfl.learning.executor.SerialExecutor`: other
task types, models with buffers that training changes (BatchNorm), losses other than
cross-entropy, groups of one job — said once in the log.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from netfl.learning.executor import LearningContext, SerialExecutor
from netfl.learning.tasks import Task, TrainTask
from netfl.learning.train import TrainResult, minibatches

__all__ = ["BatchedExecutor", "train_batched"]

log = logging.getLogger(__name__)


def batchable(model: nn.Module, loss_fn: nn.Module) -> str | None:
    """Why ``model`` cannot be trained batched (None: it can)."""
    if any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        return "BatchNorm statistics"
    if type(loss_fn) is not nn.CrossEntropyLoss or loss_fn.reduction != "mean":
        return f"its loss ({type(loss_fn).__name__})"
    if any(True for _ in model.buffers()):
        return "buffers"
    return None


def train_batched(context: LearningContext, tasks: list[TrainTask]) -> list[TrainResult]:
    """Every task of ``tasks`` (one model name and one :class:`TrainConfig`) trained as
    one stacked computation; the results in the tasks' order."""
    model = context.model(tasks[0].model)
    config = tasks[0].config
    device = context.device
    model.to(device).train()
    names = [n for n, _ in model.named_parameters()]
    # each client's batches, exactly as the serial trainer draws them
    batches = []
    for task in tasks:
        idx = torch.from_numpy(np.asarray(task.indices, dtype=np.int64))
        x, y = context.train_x[idx].to(device), context.train_y[idx].to(device)
        batches.append(list(minibatches(x, y, config, task.seed)))
    c = len(tasks)
    steps = max(len(b) for b in batches)
    width = max(len(yb) for b in batches for _, yb in b)
    feature_shape = batches[0][0][0].shape[1:]
    params = {n: torch.stack([t.state[n].to(device) for t in tasks]).clone() for n in names}
    anchors = {n: p.clone() for n, p in params.items()}
    prox = torch.tensor([t.proximal_weight for t in tasks], device=device)
    momentum = {n: torch.zeros_like(p) for n, p in params.items()}
    started = torch.zeros(c, dtype=torch.bool, device=device)
    total_loss = torch.zeros(c, device=device)

    def loss(p, xb, yb, mask, anchor, weight):
        logits = functional_call(model, p, (xb,))
        per_sample = nn.functional.cross_entropy(logits, yb, reduction="none")
        value = (per_sample * mask).sum() / mask.sum().clamp(min=1.0)
        ridge = sum(((p[n] - anchor[n]) ** 2).sum() for n in names)
        return value + weight * ridge

    step_fn = vmap(grad_and_value(loss))
    lr, mu, wd = config.lr, config.momentum, config.weight_decay
    for s in range(steps):
        xs = torch.zeros((c, width, *feature_shape), dtype=batches[0][0][0].dtype, device=device)
        ys = torch.zeros((c, width), dtype=batches[0][0][1].dtype, device=device)
        mask = torch.zeros((c, width), device=device)
        active = torch.zeros(c, dtype=torch.bool, device=device)
        for k, b in enumerate(batches):
            if s < len(b):
                xb, yb = b[s]
                xs[k, : len(yb)], ys[k, : len(yb)], mask[k, : len(yb)] = xb, yb, 1.0
                active[k] = True
        grads, values = step_fn(params, xs, ys, mask, anchors, prox)
        for n in names:
            shape = (c,) + (1,) * (params[n].ndim - 1)
            on = active.view(shape)
            g = grads[n] + wd * params[n] if wd else grads[n]
            if mu:  # torch.optim.SGD: the first step's buffer is the gradient itself
                buf = torch.where(started.view(shape), mu * momentum[n] + g, g)
                momentum[n] = torch.where(on, buf, momentum[n])
                g = buf
            params[n] = torch.where(on, params[n] - lr * g, params[n])
        started |= active
        total_loss += torch.where(active, values.detach(), torch.zeros_like(values))
    out = []
    for k, task in enumerate(tasks):
        state = {n: v.detach().to("cpu", copy=True) for n, v in task.state.items()}
        state.update({n: params[n][k].detach().to("cpu", copy=True) for n in names})
        n_steps = len(batches[k])
        out.append(
            TrainResult(state, len(task.indices), n_steps, float(total_loss[k]) / max(n_steps, 1))
        )
    return out


class _BatchFuture(Future):
    def __init__(self, executor: BatchedExecutor, task: TrainTask):
        super().__init__()
        self.executor, self.task = executor, task

    def result(self, timeout=None):
        if not self.done():
            self.executor.run_group(self)
        return super().result(timeout)


class BatchedExecutor(SerialExecutor):
    """The serial executor, but pending local-training jobs of one architecture and one
    SGD configuration run together (:func:`train_batched`) when the first of them is
    collected (see the module docstring)."""

    def __init__(self, context: LearningContext):
        super().__init__(context)
        self.pending: list[_BatchFuture] = []
        self._said: set[str] = set()

    def _why_not(self, task: TrainTask) -> str | None:
        spec = self.context.specs[task.model]
        return batchable(self.context.model(task.model), spec.loss_fn())

    def submit(self, task: Task) -> Future:
        if isinstance(task, TrainTask):
            why = self._why_not(task)
            if why is None:
                future = _BatchFuture(self, task)
                self.pending.append(future)
                return future
            if task.model not in self._said:
                self._said.add(task.model)
                log.warning("learning.executor batched: %s trains serially (%s)", task.model, why)
        return super().submit(task)

    def run_group(self, trigger: _BatchFuture) -> None:
        """Run ``trigger`` with every pending job of its model and configuration."""
        key = (trigger.task.model, trigger.task.config)
        group = [f for f in self.pending if (f.task.model, f.task.config) == key]
        self.pending = [f for f in self.pending if (f.task.model, f.task.config) != key]
        try:
            if len(group) == 1:
                results: list[Any] = [self.context.run(trigger.task)]
            else:
                results = train_batched(self.context, [f.task for f in group])
        except Exception as err:  # raised where each result is collected
            for f in group:
                f.set_exception(err)
            return
        for f, r in zip(group, results, strict=True):
            f.set_result(r)
