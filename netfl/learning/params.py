"""Parameter arithmetic on state dicts."""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["weighted_average", "clone_state", "state_numel", "all_finite"]

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


def state_numel(state: State) -> int:
    """Number of values in a state dict."""
    return sum(t.numel() for t in state.values())


def all_finite(value) -> bool:
    """Whether every floating-point tensor in ``value`` is finite: a tensor, a state
    dict, a list/tuple of them, or a result object (its tensor-valued attributes)."""
    if isinstance(value, torch.Tensor):
        return not value.is_floating_point() or bool(torch.isfinite(value).all())
    if isinstance(value, dict):
        return all(all_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(all_finite(v) for v in value)
    if hasattr(value, "__dict__"):
        return all(all_finite(v) for v in vars(value).values())
    if isinstance(value, float):
        return True  # scalars (losses) may be NaN without poisoning a model
    return True
