"""FedProx (Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith, MLSys 2020) as a netfl plugin.

FedProx is FedAvg whose devices minimise a proximal objective (eq. (2) of the paper)

    h_k(w; w^t) = F_k(w) + (μ/2) · ‖w − w^t‖²

around the global model w^t they received: the term keeps local models of
heterogeneous devices (different data, different amounts of local work) near the
global one. μ = 0 is FedAvg, event for event and bit for bit.

Only one step of FedAvg changes: :meth:`FedProx.local_update` adds the proximal weight
μ/2 to the local job (netfl's train step adds ``weight · Σ‖w − w^t‖²`` over the
trainable parameters to the batch loss). Everything else — client selection, the radio,
aggregation, timing and energy — is netfl's FedAvg.

Use it from a scenario (``plugins: [netfl_fedprox.py]``, a path relative to the
scenario file, or the module name once this folder is installed with ``pip install -e
examples/fedprox``, which also declares the ``netfl.algorithms`` entry point, so that
``algorithm: {name: fedprox}`` alone works).
"""

from __future__ import annotations

from pydantic import Field

from netfl.algorithms import FedAvg, FedAvgConfig, register


class FedProxConfig(FedAvgConfig):
    mu: float = Field(
        0.01, ge=0.0, le=100.0, description="μ of the proximal term (μ/2)·‖w − w^t‖² (eq. 2)"
    )


@register
class FedProx(FedAvg):
    """FedProx (Li et al., MLSys 2020): FedAvg with the proximal term (μ/2)·‖w − w^t‖²."""

    name = "fedprox"
    Config = FedProxConfig
    config: FedProxConfig

    def local_update(self, r, device, state, epochs=None, seed_key=(), proximal_weight=0.0):
        """FedAvg's local update with μ/2 added to the proximal weight (eq. (2))."""
        weight = proximal_weight + (self.config.mu / 2.0 if state is not None else 0.0)
        return super().local_update(r, device, state, epochs, seed_key, weight)
