"""Training many clients at once: the ``batched`` executor (``learning.executor: batched``).

The local-training jobs (:class:`~netfl.learning.tasks.TrainTask`) pending at the same
simulated instant — a round's trainers, in practice — that share an architecture and SGD
settings run as one computation: their parameters stacked along a client axis, one
``torch.func.vmap`` of ``grad`` over the clients per SGD step (``functional_call`` of
the one model). Each client keeps what the serial executor gives it: its own data and
batch order (the batches of :func:`netfl.learning.train.minibatches`, seed and
augmentation included), its own momentum buffer, weight decay and proximal term. The
clients are stacked by their number of steps, most first, so a step runs over the
clients that take it alone — a prefix of the stack — and a client out of batches costs
nothing more (clients of unequal data sizes pay for their own steps, not for the
largest client's: a Dirichlet partition of 50 clients trained 3× slower than serially
when every step ran over the whole stack); a short last batch is masked sample by
sample (its loss the mean over its real samples). BatchNorm layers normalise each client's batch by that batch's
own statistics over its real samples (padding excluded), and each client keeps its own
running statistics and ``num_batches_tracked``, updated as ``torch.nn.BatchNorm`` does
(the unbiased batch variance; ``momentum`` or, with ``momentum=None``, the cumulative
average). Results equal the serial executor's up to the order of float sums (tested:
1e-5 relative).

A job is run when its result is first asked for (the end of its compute step), together
with every pending job of its group; the others' results wait in their futures. What is
not batched runs serially, as in :class:`~netfl.learning.executor.SerialExecutor`: other
task types, models with buffers other than BatchNorm's, losses other than
cross-entropy, models with convolutions on a CPU (vmap makes them grouped convolutions,
which lose to one client at a time there: McMahan's CNN ran at 0.36× serial), groups of
one job — said once in the log.

Every step is applied in place on the prefix's views, and FedProx's term and its
anchors exist only where a client has a proximal weight. ``benchmarks/batched_executor.py``
measures it against the serial executor, both warm.
"""

from __future__ import annotations

import logging
import math
import types
from concurrent.futures import Future
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from netfl.learning.executor import LearningContext, SerialExecutor
from netfl.learning.tasks import Task, TrainTask
from netfl.learning.train import TrainResult, minibatches

__all__ = ["BatchedExecutor", "train_batched", "why_not_stacked"]

log = logging.getLogger(__name__)


def _norms(model: nn.Module) -> dict[str, nn.modules.batchnorm._BatchNorm]:
    return {
        n: m for n, m in model.named_modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)
    }


def batchable(model: nn.Module, loss_fn: nn.Module) -> str | None:
    """Why ``model`` cannot be trained batched (None: it can)."""
    if type(loss_fn) is not nn.CrossEntropyLoss or loss_fn.reduction != "mean":
        return f"its loss ({type(loss_fn).__name__})"
    norms = _norms(model)
    model.train()
    if any(not m.training for m in norms.values()):  # (a model that freezes some)
        return "BatchNorm in evaluation mode while training"
    norm_buffers = {
        f"{n}.{b}" if n else b for n, m in norms.items() for b, _ in m.named_buffers(recurse=False)
    }
    if any(n not in norm_buffers for n, _ in model.named_buffers()):
        return "buffers"
    return None


def why_not_stacked(
    model: nn.Module, loss_fn: nn.Module, device: torch.device, convolutions_on_cpu: bool = False
) -> str | None:
    """Why the batched executor trains ``model``'s jobs one at a time on ``device``
    (None: it stacks them): :func:`batchable`, and on a CPU models with convolutions
    (unless ``convolutions_on_cpu``: the equivalence tests)."""
    if (
        not convolutions_on_cpu
        and device.type == "cpu"
        and any(isinstance(m, nn.modules.conv._ConvNd) for m in model.modules())
    ):  # (measured: benchmarks/batched_executor.py)
        return (
            "convolutions on a CPU: vmap runs them as grouped convolutions, slower than "
            "one client at a time (McMahan's CNN: 0.36x serial)"
        )
    return batchable(model, loss_fn)


class _MaskedNorms:
    """While installed, every BatchNorm layer of a model normalises over the real
    samples of its client's batch (``mask``) and records its batch statistics (mean,
    unbiased variance) in call order: they leave the vmapped step as auxiliary outputs,
    and the running statistics are updated outside it (:meth:`update`)."""

    def __init__(self, model: nn.Module):
        self.modules = _norms(model)
        self.mask: torch.Tensor | None = None
        self.calls: list[str] = []
        self.stats: list[torch.Tensor] = []

    def __enter__(self) -> _MaskedNorms:
        for name, module in self.modules.items():
            module.forward = types.MethodType(self._forward(name), module)
        return self

    def __exit__(self, *exc) -> None:
        for module in self.modules.values():
            del module.forward  # (the class's forward again)

    def _forward(self, name: str):
        holder = self

        def forward(module, x: torch.Tensor) -> torch.Tensor:
            m = holder.mask
            sample = (-1,) + (1,) * (x.ndim - 1)
            channel = (1, -1) + (1,) * (x.ndim - 2)
            dims = [0, *range(2, x.ndim)]
            count = m.sum() * math.prod(x.shape[2:])
            mean = (x * m.view(sample)).sum(dims) / count.clamp(min=1.0)
            centred = x - mean.view(channel)
            var = (centred.square() * m.view(sample)).sum(dims) / count.clamp(min=1.0)
            y = centred * torch.rsqrt(var + module.eps).view(channel)
            if module.affine:
                y = y * module.weight.view(channel) + module.bias.view(channel)
            holder.calls.append(name)
            holder.stats += [mean.detach(), (var * count / (count - 1).clamp(min=1.0)).detach()]
            return y

        return forward

    def collect(self) -> tuple[torch.Tensor, ...]:
        """The statistics the last forward recorded (and forget them)."""
        out, self.stats = tuple(self.stats), []
        return out

    def running(self, tasks: list[TrainTask], device) -> dict[str, torch.Tensor]:
        """Each client's running statistics, stacked: ``{buffer name: (clients, ...)}``."""
        return {
            f"{n}.{b}" if n else b: torch.stack([t.state[f"{n}.{b}" if n else b] for t in tasks])
            .to(device)
            .clone()
            for n, m in self.modules.items()
            if m.track_running_stats
            for b in ("running_mean", "running_var", "num_batches_tracked")
        }

    def update(
        self, buffers: dict[str, torch.Tensor], stats: tuple[torch.Tensor, ...], active
    ) -> None:
        """``torch.nn.BatchNorm``'s running-statistics update for the clients ``active`` on
        this step, from the ``(clients, channels)`` batch statistics of each call."""
        calls, self.calls = self.calls, []
        on = active.view(-1, 1)
        for i, name in enumerate(calls):
            module = self.modules[name]
            if not module.track_running_stats:
                continue
            prefix = f"{name}." if name else ""
            tracked = buffers[prefix + "num_batches_tracked"]
            tracked += active.to(tracked.dtype)
            if module.momentum is None:  # the cumulative moving average
                factor = (1.0 / tracked.clamp(min=1).to(stats[2 * i].dtype)).view(-1, 1)
            else:
                factor = module.momentum
            for key, batch in (("running_mean", stats[2 * i]), ("running_var", stats[2 * i + 1])):
                old = buffers[prefix + key]
                buffers[prefix + key] = torch.where(on, (1 - factor) * old + factor * batch, old)


def train_batched(context: LearningContext, tasks: list[TrainTask]) -> list[TrainResult]:
    """Every task of ``tasks`` (one model name and one :class:`TrainConfig`) trained as
    one stacked computation; the results in the tasks' order.

    The clients are stacked by how many steps they take, most first, so those that take
    a step are always the first ones of the stack: a step runs over that prefix alone
    (views of the stacked tensors, updated in place), and a client that has run out of
    batches costs nothing more — clients of very different data sizes (a Dirichlet
    partition) pay for their own steps, not for the largest client's."""
    model = context.model(tasks[0].model)
    config = tasks[0].config
    device = context.device
    model.to(device).train()
    names = [n for n, _ in model.named_parameters()]
    # each client's batches, exactly as the serial trainer draws them
    drawn = []
    for task in tasks:
        idx = torch.from_numpy(np.asarray(task.indices, dtype=np.int64))
        x, y = context.train_x[idx].to(device), context.train_y[idx].to(device)
        drawn.append(list(minibatches(x, y, config, task.seed)))
    order = sorted(range(len(tasks)), key=lambda k: -len(drawn[k]))  # (stable)
    stack = [tasks[k] for k in order]
    batches = [drawn[k] for k in order]
    c = len(stack)
    steps = len(batches[0])
    width = max(len(yb) for b in batches for _, yb in b)
    feature_shape = batches[0][0][0].shape[1:]
    params = {n: torch.stack([t.state[n].to(device) for t in stack]).clone() for n in names}
    prox = torch.tensor([t.proximal_weight for t in stack], device=device)
    proximal = bool((prox != 0).any())
    anchors = {n: p.clone() for n, p in params.items()} if proximal else {}
    momentum: dict[str, torch.Tensor] = {}  # (made by the first step)
    total_loss = torch.zeros(c, device=device)

    norms = _MaskedNorms(model)
    buffers = norms.running(stack, device)

    def loss(p, xb, yb, mask, anchor, weight):
        norms.mask = mask
        logits = functional_call(model, p, (xb,))
        per_sample = nn.functional.cross_entropy(logits, yb, reduction="none")
        value = (per_sample * mask).sum() / mask.sum().clamp(min=1.0)
        if proximal:
            value = value + weight * sum(((p[n] - anchor[n]) ** 2).sum() for n in names)
        return value, norms.collect()

    step_fn = vmap(grad_and_value(loss, has_aux=True))
    lr, mu, wd = config.lr, config.momentum, config.weight_decay
    full_mask = torch.ones((c, width), device=device)
    taking = [sum(len(b) > s for b in batches) for s in range(steps)]  # (the prefix)
    for s, m in enumerate(taking):
        here = [b[s] for b in batches[:m]]
        if all(len(h[1]) == width for h in here):  # (no padding)
            xs = torch.stack([h[0] for h in here])
            ys = torch.stack([h[1] for h in here])
            mask = full_mask[:m]
        else:  # (a short last batch: its missing samples masked)
            dtype = batches[0][0][0].dtype
            xs = torch.zeros((m, width, *feature_shape), dtype=dtype, device=device)
            ys = torch.zeros((m, width), dtype=batches[0][0][1].dtype, device=device)
            mask = torch.zeros((m, width), device=device)
            for k, (xb, yb) in enumerate(here):
                xs[k, : len(yb)], ys[k, : len(yb)], mask[k, : len(yb)] = xb, yb, 1.0
        front = {n: params[n][:m] for n in names}
        with norms:
            grads, (values, stats) = step_fn(
                front, xs, ys, mask, {n: a[:m] for n, a in anchors.items()}, prox[:m]
            )
        if buffers:  # (the prefix's running statistics, written back)
            held = {k: v[:m].clone() for k, v in buffers.items()}
            norms.update(held, stats, torch.ones(m, dtype=torch.bool, device=device))
            for k, v in held.items():
                buffers[k][:m] = v
        else:
            norms.calls = []  # (no running statistics: nothing to update)
        # in place, in torch.optim.SGD's order of operations (its floats: the fused
        # kernel rounds otherwise, which a CNN's max-pools amplify past 1e-5 in an epoch)
        for n in names:
            g = grads[n] + wd * front[n] if wd else grads[n]
            if mu:  # (the first step's buffer is the gradient itself)
                if s == 0:
                    momentum[n] = g
                else:
                    momentum[n][:m].mul_(mu).add_(g)
                g = momentum[n][:m]
            front[n].sub_(lr * g)
        total_loss[:m] += values.detach()
    out: list[TrainResult | None] = [None] * c
    trained = {**params, **buffers}
    rows = {n: t.detach().to("cpu").unbind(0) for n, t in trained.items()}
    for k, task in enumerate(stack):
        state = {
            n: rows[n][k].clone() if n in rows else v.detach().to("cpu", copy=True)
            for n, v in task.state.items()
        }
        n_steps = len(batches[k])
        out[order[k]] = TrainResult(
            state, len(task.indices), n_steps, float(total_loss[k]) / max(n_steps, 1)
        )
    return out  # type: ignore[return-value]


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
        #: batch models with convolutions on a CPU too (off: they lose there; the
        #: equivalence tests turn it on)
        self.convolutions_on_cpu = False
        self._verdicts: dict[tuple[str, bool], str | None] = {}

    def _why_not(self, task: TrainTask) -> str | None:
        key = (task.model, self.convolutions_on_cpu)
        if key not in self._verdicts:  # (an architecture's verdict: the same every job)
            self._verdicts[key] = self._judge(task.model)
        return self._verdicts[key]

    def _judge(self, name: str) -> str | None:
        return why_not_stacked(
            self.context.model(name),
            self.context.specs[name].loss_fn(),
            self.context.device,
            self.convolutions_on_cpu,
        )

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
