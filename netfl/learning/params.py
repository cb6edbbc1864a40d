"""Parameter arithmetic on state dicts."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

__all__ = [
    "weighted_average",
    "clone_state",
    "state_numel",
    "all_finite",
    "mix_states",
    "add_scaled_delta",
    "apply_delta",
]

State = dict[str, torch.Tensor]


def clone_state(state: State) -> State:
    """A detached copy of a state dict."""
    return {k: v.detach().clone() for k, v in state.items()}


def weighted_average(states: Sequence[State], weights: Sequence[float]) -> State:
    """``Σ_k w_k · θ_k / Σ_k w_k`` for every entry (FedAvg aggregation).

    Floating-point entries are averaged in their own dtype; integer entries
    (e.g. BatchNorm's ``num_batches_tracked``) are averaged and rounded.
    """
    if not states or len(states) != len(weights):
        raise ValueError("need one weight per state and at least one state")
    total = float(sum(weights))
    if total <= 0:
        raise ValueError("weights must sum to a positive number")
    coeffs = [float(w) / total for w in weights]
    out: State = {}
    for key, ref in states[0].items():
        if ref.is_floating_point():
            acc = torch.zeros_like(ref)
            for c, s in zip(coeffs, states, strict=True):
                acc.add_(s[key], alpha=c)
        else:
            acc = torch.round(sum(c * s[key].double() for c, s in zip(coeffs, states, strict=True)))
            acc = acc.to(ref.dtype)
        out[key] = acc
    return out


def mix_states(old: State, new: State, alpha: float) -> State:
    """``(1 − α)·old + α·new`` for every floating-point entry (FedAsync's update, eq. (2) of
    Xie et al.); other entries (e.g. BatchNorm's ``num_batches_tracked``) take ``new``'s."""
    out: State = {}
    for key, ref in old.items():
        if ref.is_floating_point():
            out[key] = torch.lerp(ref, new[key].to(ref.dtype), float(alpha))
        else:
            out[key] = new[key].clone()
    return out


def add_scaled_delta(total: State | None, trained: State, start: State, weight: float) -> State:
    """``total + weight·(trained − start)`` for every floating-point entry (``total`` None:
    a zero start) — FedBuff's buffer of client updates; other entries keep ``trained``'s."""
    out: State = {}
    for key, ref in trained.items():
        if ref.is_floating_point():
            delta = (ref - start[key]).mul_(float(weight))
            out[key] = delta if total is None else total[key] + delta
        else:
            out[key] = ref.clone()
    return out


def apply_delta(state: State, total: State, scale: float) -> State:
    """``state + scale·total`` for every floating-point entry (FedBuff's server step with
    ``scale`` = η_g / K); other entries take ``total``'s (the last update's)."""
    out: State = {}
    for key, ref in state.items():
        if ref.is_floating_point():
            out[key] = ref + float(scale) * total[key]
        else:
            out[key] = total[key].clone()
    return out


def state_numel(state: State) -> int:
    """Number of values in a state dict."""
    return sum(t.numel() for t in state.values())


def all_finite(value) -> bool:
    """Whether every floating-point tensor in ``value`` is finite: a tensor, a state
    dict, a list/tuple of them, or a result object (its tensor-valued attributes)."""
    if isinstance(value, torch.Tensor):
        if not value.is_floating_point() or value.numel() == 0:
            return True
        # one pass, no mask: the extremes propagate NaN and hold ±inf (10× faster than
        # isfinite(value).all() on a model's state)
        lo, hi = torch.aminmax(value.detach())
        return math.isfinite(lo) and math.isfinite(hi)
    if isinstance(value, dict):
        return all(all_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(all_finite(v) for v in value)
    if hasattr(value, "__dict__"):
        return all(all_finite(v) for v in vars(value).values())
    if isinstance(value, float):
        return True  # scalars (losses) may be NaN without poisoning a model
    return True


class OrderedAverage:
    """:func:`weighted_average` computed as the states arrive, holding only those that
    arrived ahead of their turn: states are folded in index order with the same
    coefficients and operations, so the result is bit-identical to
    ``weighted_average(states, weights)``. ``drop(i)`` removes a state (e.g. NaN):
    the partial sums are rescaled to the remaining weights (exact in real arithmetic).
    """

    def __init__(self, weights: Sequence[float]):
        if not weights:
            raise ValueError("need at least one weight")
        self.weights = [float(w) for w in weights]
        self.total = float(sum(self.weights))
        self._pending: dict[int, State | None] = {}
        self._next = 0
        self._acc: State | None = None
        self._int_acc: dict[str, object] = {}
        self.count = 0

    def add(self, index: int, state: State | None) -> None:
        """State ``index`` arrived (``None``: dropped)."""
        self._pending[index] = state
        while self._next in self._pending:
            s = self._pending.pop(self._next)
            if s is not None:
                self._fold(s, self.weights[self._next] / self.total)
            self._next += 1

    def drop(self, index: int) -> None:
        """Leave state ``index`` out: rescale what is folded to the remaining weights."""
        w = self.weights[index]
        new_total = self.total - w
        if self._acc is not None and new_total > 0:
            scale = self.total / new_total
            for v in self._acc.values():
                v.mul_(scale)
            self._int_acc = {k: v * scale for k, v in self._int_acc.items()}
        self.total = new_total
        self.add(index, None)

    def _fold(self, state: State, c: float) -> None:
        self.count += 1
        if self._acc is None:
            self._acc = {k: torch.zeros_like(v) for k, v in state.items() if v.is_floating_point()}
            self._int_acc = {k: 0 for k, v in state.items() if not v.is_floating_point()}
            self._ref = {k: v.dtype for k, v in state.items()}
        for key, acc in self._acc.items():
            acc.add_(state[key], alpha=c)
        for key in self._int_acc:
            self._int_acc[key] = self._int_acc[key] + c * state[key].double()

    def result(self) -> State | None:
        """The average (None if every state was dropped); all states must have arrived."""
        if self._next != len(self.weights):
            raise ValueError(f"{len(self.weights) - self._next} states have not arrived")
        if self._acc is None:
            return None
        out: State = {}
        for key, dtype in self._ref.items():
            if key in self._acc:
                out[key] = self._acc[key]
            else:
                out[key] = torch.round(self._int_acc[key]).to(dtype)  # type: ignore[arg-type]
        return out
