"""``proportional_fair``: the ``count`` devices whose channel is best relative to its own
average.

Yang, Liu, Quek & Poor, IEEE TCOM 2020, §III-C: each round the BS picks the K devices
with the largest ratio of instantaneous SNR to average SNR, ρ_k = SNR_k(t) / SNR̄_k.
Under Rayleigh fading with the path loss in both terms, the ratio is the fading gain
|h_k|²: every device is picked equally often (fair), each when its channel is at a peak
(the multi-user diversity that helps at a high SINR threshold θ).

netfl sounds each candidate's uplink in the block now
(:meth:`~netfl.policies.states.DeviceStates.block_snr_db`: the scenario needs
``cell.link.fading_draw: per_link``, so that the transfer sees the sounded block) and
keeps SNR̄_k as an exponentially weighted average of the soundings, in linear units:
SNR̄_k ← (1 − 1/t_c)·SNR̄_k + SNR_k(t)/t_c over the rounds where k is a candidate,
starting from its mean SNR (E|h|² = 1) — the classical PF averaging with window t_c
(``window_rounds``), which tracks a moving device's mean; the averages are in every
checkpoint. Ties in device order; nothing allocated. Under FedAsync/FedBuff a decision
is a pick (one device as a slot frees): every idle candidate's average then takes a
sounding per pick, so ``window_rounds`` counts picks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from netfl.core.nodes import Node
from netfl.policies.resource_policy import (
    Allocation,
    Decision,
    PolicyConfig,
    ResourcePolicy,
    RoundWork,
    download_time_s,
    register_policy,
    step_times_s,
)

__all__ = ["ProportionalFair", "ProportionalFairConfig"]


class ProportionalFairConfig(PolicyConfig):
    """``policy.options`` of ``proportional_fair``."""

    window_rounds: float = Field(
        20.0,
        ge=1.0,
        description="t_c of the average SNR's exponential weighting [rounds] (1: the "
        "last sounding alone, a ratio of 1 for every device)",
    )


@register_policy
class ProportionalFair(ResourcePolicy):
    """Top ``count`` by instantaneous-to-average uplink SNR."""

    name = "proportional_fair"
    description = (
        "the count devices with the largest instantaneous-to-average uplink SNR "
        "(Yang et al. 2020; needs cell.link.fading_draw: per_link)"
    )
    Config = ProportionalFairConfig
    needs_block_snr = True

    def __init__(self, *args: Any):
        super().__init__(*args)
        #: SNR̄_k by device name [linear]
        self.average: dict[str, float] = {}

    def ratios(self, candidates: Sequence[Node]) -> list[float]:
        """Each candidate's ρ_k = SNR_k(t) / SNR̄_k against the average before this
        sounding; the averages then take the sounding in."""
        w = 1.0 / self.config.window_rounds
        out = []
        for d in candidates:
            now = self.states.block_snr_db(d, "uplink")
            if math.isnan(now):
                raise ValueError(
                    f"{d.name}: no SNR of the block now (proportional_fair needs "
                    "cell.link.fading_draw: per_link on an OFDMA cell)"
                )
            snr = 10.0 ** (now / 10.0)
            mean = self.average.get(d.name)
            if mean is None:
                mean = 10.0 ** (self.states.mean_snr_db(d, "uplink") / 10.0)
            out.append(snr / mean)
            self.average[d.name] = (1.0 - w) * mean + w * snr
        return out

    def decide(self, r: int, candidates: Sequence[Node], count: int, work: RoundWork) -> Decision:
        rho = self.ratios(candidates)
        order = sorted(range(len(candidates)), key=lambda i: (-rho[i], i))
        chosen = sorted((candidates[i] for i in order[:count]), key=lambda d: d.index)
        if not chosen:
            return Decision([])
        down = download_time_s(self.states, chosen, work)
        expected = {}
        for d in chosen:
            _, update, up = step_times_s(self.states, d, work, 1.0 / len(chosen))
            expected[d.name] = Allocation(expected_time_s=down + update + up)
        return Decision(chosen, expected)

    def state_dict(self) -> dict[str, Any]:
        return {"average": dict(self.average)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.average = {k: float(v) for k, v in state["average"].items()}
