"""**FedAsync** (C. Xie, S. Koyejo, I. Gupta, "Asynchronous Federated Optimization",
OPT workshop 2020, arXiv 1903.03934, Algorithm 1): the server mixes every arriving
model into the global one, ``x_t = (1 − α_t)·x_{t−1} + α_t·x_new`` with ``α_t = α·s(t −
τ)``, where τ is the version the device trained from and t − τ its *staleness*;
s is ``constant`` (1), ``polynomial`` ((t − τ + 1)^−a) or ``hinge`` (1 while t − τ ≤ b,
then 1/(a·(t − τ − b) + 1)) (their eq. (2)).

The slots, versions and rounds: :mod:`netfl.algorithms.asynchronous`.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Literal

import simpy
from pydantic import Field, model_validator

from netfl.algorithms.algorithm import register
from netfl.algorithms.asynchronous import AsyncAlgorithm, AsyncConfig, staleness_weight
from netfl.scenario.strict import given, refuse

__all__ = ["FedAsync", "FedAsyncConfig"]


class FedAsyncConfig(AsyncConfig):
    alpha: float = Field(0.6, gt=0.0, le=1.0, description="mixing weight α (Xie et al.)")
    staleness: Literal["constant", "polynomial", "hinge"] = Field(
        "polynomial", description="s(t − τ): constant, polynomial (a), hinge (a, b)"
    )
    a: float = Field(0.5, ge=0.0, le=100.0, description="exponent (polynomial) or slope (hinge)")
    b: float = Field(4.0, ge=0.0, le=1e6, description="hinge: staleness without penalty")

    @model_validator(mode="after")
    def _keys_of_staleness(self) -> FedAsyncConfig:
        unused = {"constant": {"a", "b"}, "polynomial": {"b"}, "hinge": set()}[self.staleness]
        refuse(given(self, unused), f"to staleness {self.staleness!r}")
        return self


@register
class FedAsync(AsyncAlgorithm):
    """FedAsync (Xie, Koyejo, Gupta, 2019, Algorithm 1): mix each arrival with α·s(t − τ)."""

    name = "fedasync"
    Config = FedAsyncConfig
    config: FedAsyncConfig

    def mixing_weight(self, staleness: int) -> float:
        """α_t = α·s(t − τ) (eq. (2))."""
        c = self.config
        return c.alpha * staleness_weight(c.staleness, staleness, c.a, c.b)

    def absorb(self, device: str, version: int) -> Generator[simpy.Event, Any, None]:
        yield self.server_step(3.0 * self.world.model.num_params)  # (1 − α)x + αx_new
        arrival = self.arrival(device, version)
        new = None
        if arrival.state is not None and self.global_state is not None:
            from netfl.learning.params import mix_states

            new = mix_states(
                self.global_state, arrival.state, self.mixing_weight(arrival.staleness)
            )
        self.publish(new, [arrival])
