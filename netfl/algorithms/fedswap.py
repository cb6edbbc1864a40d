"""FedSwap: the full-diffusion baseline of FedDif (Ahn et al., Sec. VI)."""

from __future__ import annotations

from typing import Any

import numpy as np

from netfl.algorithms.algorithm import register
from netfl.algorithms.feddif import FedDif
from netfl.algorithms.feddif_state import Chain
from netfl.core.nodes import Node
from netfl.scenario.strict import given

__all__ = ["FedSwap"]


@register
class FedSwap(FedDif):
    """Full diffusion (the paper's FedSwap baseline): every model visits every reachable PUE.

    Same process as FedDif; every unvisited PUE is worth 1 to every model, so the
    matching prefers the best links (weight 1/B̃) and diffusion ends only when no
    chain can grow (every chain complete, or the PUEs left out of range: (16e), (A.1)).
    No DoLs are exchanged; bids carry the channel state only.
    """

    name = "fedswap"
    within_epsilon_gets_no_edges = False  # (full diffusion: every model goes on)

    @classmethod
    def check_scenario(cls, scenario: Any) -> list[tuple[str, str]]:
        problems = super().check_scenario(scenario)
        config = cls.Config(**scenario.algorithm.options())
        for key in given(config, {"epsilon", "stop", "efficiency_epsilon"}):
            problems.append(
                (f"algorithm.{key}", "fedswap diffuses fully: no IID-distance stop applies")
            )
        return problems

    def valuations(self, chains: list[Chain], pues: list[Node]) -> np.ndarray:
        return np.ones((len(chains), len(pues)))

    def diffusion_done(self, chains: list[Chain], distances: np.ndarray, n_pues: int) -> bool:
        return all(len(c.visited) >= n_pues for c in chains)

    def bid_values_per_model(self) -> int:
        return 1

    def sends_dols(self) -> bool:
        return False
