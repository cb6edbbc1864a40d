"""Nodes of the simulated cell: the base station/server and the UEs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from channel_models import LinkProfile
from netfl.compute.meter import EnergyMeter
from netfl.compute.profiles import ComputeProfile

__all__ = ["Node", "NodeKind"]

NodeKind = Literal["bs", "pue", "cue"]


@dataclass(eq=False)
class Node:
    """A node: the BS (which hosts the FL server) or a UE.

    ``link`` is the node's fixed-rate access profile (None for the BS, whose
    capacity is configured on the radio). ``index`` is the device index
    (0..N-1) for PUEs and -1 for the BS. ``height_m`` is the antenna height of a
    device placed with one (NaN: the path-loss law's UE height applies);
    ``o2i_loss_db`` the outdoor-to-indoor penetration loss of an indoor device's links
    to its BSs (a network with ``indoor_fraction``; 0 outdoors) and ``o2i_inside_m``
    its distance inside the building, d_2D-in (TR 38.901 §7.4.3: its LOS probability is
    that of d_2D-out = d_2D − d_2D-in, Table 7.4.2-1's note).
    """

    name: str
    kind: NodeKind
    index: int
    position_m: np.ndarray
    compute: ComputeProfile
    link: LinkProfile | None = None
    energy: EnergyMeter = field(default_factory=EnergyMeter)
    height_m: float = float("nan")
    o2i_loss_db: float = 0.0
    o2i_inside_m: float = 0.0

    @property
    def is_device(self) -> bool:
        return self.kind != "bs"

    def __repr__(self) -> str:
        return f"Node({self.name!r}, {self.kind})"
