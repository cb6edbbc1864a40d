"""What the heterogeneous-model algorithms (FedZKT, FedMD) share.

Every device keeps its own architecture (``World.device_model``) and
parameters, initialised from the ``model_init`` stream of its index; it trains
its own model, sends and receives its own model's size, and is evaluated on
the server's test set on evaluation rounds (``device_accuracy`` table,
``device_accuracy_mean/min/max`` columns).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from netfl.algorithms.context import RoundContext
from netfl.algorithms.fedavg import FedAvg
from netfl.core.nodes import Node

__all__ = ["HeterogeneousFL"]

if TYPE_CHECKING:
    import torch

State = dict[str, "torch.Tensor"]


class HeterogeneousFL(FedAvg):
    """Base of algorithms whose devices run different architectures."""

    codec_directions = frozenset()  # (its own payloads: no update codec yet)
    supports_over_the_air = False

    supports_availability = False  # (its own rounds: availability not yet applied)

    heterogeneous_models = True

    def __init__(self, world: RoundContext, config):
        super().__init__(world, config)
        self.device_states: dict[int, State] = {}
        if world.learn:
            self.device_states = {
                d.index: world.init_model_state(world.device_model(d).name, d.index)
                for d in world.devices
            }
        self.device_scores: list[dict[str, Any]] = []
        self._round = -1
        self._last_scores: dict[str, float] = {}

    def model_bits(self, device: Node | None = None) -> float:
        """A device sends and receives its own model."""
        return self.world.device_model(device).size_bits if device else self.world.model.size_bits

    # -- evaluation and state ------------------------------------------------------
    def evaluate_devices(self) -> tuple[float, float]:
        """Test accuracy of every device model (recorded); returns the mean accuracy and loss."""
        world = self.world
        accs, losses = [], []
        names = [world.device_model(d).name for d in world.devices]
        scores = world.evaluate_many(
            [
                (self.device_states[d.index], name)
                for d, name in zip(world.devices, names, strict=True)
            ]
        )
        for d, name, (acc, loss) in zip(world.devices, names, scores, strict=True):
            accs.append(acc)
            losses.append(loss)
            self.device_scores.append(
                {
                    "round": self._round,
                    "device": d.index,
                    "model": name,
                    "accuracy": acc,
                    "loss": loss,
                }
            )
        self._last_scores = {
            "device_accuracy_mean": float(np.mean(accs)),
            "device_accuracy_min": float(np.min(accs)),
            "device_accuracy_max": float(np.max(accs)),
        }
        return float(np.mean(accs)), float(np.mean(losses))

    def evaluation_columns(self) -> dict[str, float]:
        return dict(self._last_scores)

    def tables(self) -> dict[str, Any]:
        import pandas as pd

        return {"device_accuracy": pd.DataFrame(self.device_scores)} if self.device_scores else {}

    def info(self) -> dict[str, Any]:
        w = self.world
        return {
            "device_models": dict(enumerate(w.device_model_names)),
            "device_model_params": {n: i.num_params for n, i in w.models.items()},
        }

    def state_dict(self) -> dict[str, Any]:
        from netfl.learning import clone_state

        return {
            **super().state_dict(),
            "device_states": {k: clone_state(v) for k, v in self.device_states.items()},
            "device_scores": [dict(s) for s in self.device_scores],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.device_states = dict(state["device_states"])
        self.device_scores = [dict(s) for s in state.get("device_scores", [])]
