"""FedDif's options (:class:`FedDifConfig`): the IID-distance stop ε or the mean
diffusion-efficiency rule, the D2D constraints (16e) and (A.1), the diffusion rounds'
training and cap, the control messages' number size and the (16f) bandwidth window.

S. Ahn et al., "Communication-Efficient Diffusion Strategy for Performance
Improvement of Federated Learning with Non-IID Data", arXiv 2207.07493; the round that
reads them is :class:`netfl.algorithms.feddif.FedDif`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from netfl.algorithms.fedavg import FedAvgConfig
from netfl.scenario.strict import given, refuse

__all__ = ["FedDifConfig"]


class FedDifConfig(FedAvgConfig):
    epsilon: float = Field(
        0.04,
        ge=0.0,
        description="ε: diffusion stops when every model's IID distance is ≤ ε",
        le=1e6,
    )
    stop: Literal["per_model", "mean_efficiency"] = Field(
        "per_model",
        description="per_model: Algorithm 2, line 10 (every model within ε; a model within ε "
        "gets no edges); mean_efficiency: the authors' code, diffusion ends when the mean "
        "diffusion efficiency (14) of the scheduled pairs is ≤ efficiency_epsilon",
    )
    efficiency_epsilon: float | None = Field(
        None,
        ge=0.0,
        description="stop: mean_efficiency — threshold on (14) in netfl's units, IID-distance "
        "drop per Hz of a pair's (16f) bandwidth (required with that rule: the authors' 5e-3 "
        "is on their code's scale; read the diffusion table's mean_efficiency to set it)",
        le=1e3,
    )

    @model_validator(mode="after")
    def _efficiency_threshold(self) -> FedDifConfig:
        if self.stop == "mean_efficiency" and self.efficiency_epsilon is None:
            raise ValueError(
                "stop: mean_efficiency needs efficiency_epsilon (IID-distance drop per Hz; "
                "the diffusion table's mean_efficiency column shows the scale)"
            )
        if self.stop == "per_model":
            refuse(given(self, {"efficiency_epsilon"}), "to stop 'per_model' (ε: epsilon)")
        return self

    min_efficiency_bps_per_hz: float = Field(
        1.0,
        ge=0.0,
        description="γ_min (16e): least expected D2D spectral efficiency [bit/s/Hz]",
        le=30.0,
    )
    max_outage: float = Field(
        0.05, gt=0.0, lt=1.0, description="largest outage probability at γ_min (A.1)"
    )
    iid_distance: Literal["l2", "kld", "jsd", "emd"] = Field(
        "l2", description="IID distance W (13): l2 (C.1, the paper), kld, jsd or emd"
    )
    diffusion_epochs: int = Field(
        1, ge=1, description="local epochs of a model's receiver", le=1000
    )
    max_diffusion_rounds: int | None = Field(
        None,
        ge=0,
        description="cap on diffusion rounds per round (none: until ε or no pair)",
        le=10_000,
    )
    redrop_each_diffusion_round: bool = Field(
        False, description="re-drop every UE after each diffusion round (authors' code)"
    )
    control_value_bits: int = Field(
        32,
        ge=0,
        description="size of one number in DoL, bid and schedule messages (0: free)",
        le=64,
    )
    bandwidth_window_s: float = Field(
        1.0,
        gt=0.0,
        description="(16f): a pair needs B = S/(γ̃·T) Hz to send its model within T seconds; "
        "a diffusion round's pairs must fit in the uplink bandwidth CUEs leave",
        le=1e4,
    )
