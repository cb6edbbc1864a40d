"""Moving devices of a run (issue 23, item 3): their trajectories, built from where the
drop put them, and bringing them up to date (``channel_models.mobility``; the network's
A3 rule in :mod:`netfl.radio.handover`)."""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from netfl.errors import UserError

if TYPE_CHECKING:
    import simpy

    from netfl.core.nodes import Node
    from netfl.core.rng import Streams
    from netfl.radio.radio import Radio
    from netfl.scenario.network_section import MobilitySection
    from netfl.sim.placement import Placement

__all__ = ["DeviceMobility", "MAX_TRAJECTORY_ROWS"]

log = logging.getLogger(__name__)

#: the trajectories table's rows at most (4 columns: about 1 GB in memory)
MAX_TRAJECTORY_ROWS = 20_000_000


class DeviceMobility:
    """Trajectories of the moving devices (``sections``: each device's
    ``devices.mobility``; ``network``: a multi-cell network, whose radio follows them),
    from where the drop put them, each drawing from its own ``mobility`` stream; the radio brings their
    positions (and a network their serving cells, by A3) up to date at every transfer
    start (its ``mover``)."""

    def __init__(
        self,
        sections: list[MobilitySection],
        network: bool,
        env: simpy.Environment,
        streams: Streams,
        devices: list[Node],
        radio: Radio,
        placement: Placement,
    ):
        from channel_models import mobility as mob
        from netfl.radio.mobility_models import MOBILITY_MODELS

        self.env, self.radio = env, radio
        self.network = network
        self.trajectories: dict[str, Any] = {}
        self._nodes: dict[str, Node] = {}
        self._moved_at: dict[str, float] = {}
        self._end: dict[str, float] = {}  # (the run's end, once it has one: :meth:`settle`)
        self._record_every: dict[str, float] = {}
        self._rows = 0.0  # rows of the trajectories table so far (bounded)
        for node, m in zip(devices, sections, strict=True):
            if not m.moves:
                continue
            rng = streams.generator("mobility", node.index)
            start = tuple(float(v) for v in node.position_m)
            heading = (
                math.radians(m.heading_deg)
                if m.heading_deg is not None
                else float(rng.uniform(0, 2 * math.pi))
            )
            traj = MOBILITY_MODELS[m.model].trajectory(
                start, heading, m.settings(), rng, placement.region_sampler()
            )
            dep = placement.deployment
            if dep is not None and len(dep.wrap_vectors()):  # never leaves a wrap-around net
                traj = mob.Folded(traj, dep.fold)
            self.trajectories[node.name] = traj
            self._nodes[node.name] = node
            self._moved_at[node.name] = env.now
            self._record_every[node.name] = m.record_every_s
        if not self.trajectories:
            return
        radio.mover = self.move
        if network:
            radio.follow(self.trajectories)

    def move(self, nodes) -> None:
        """Bring the moving devices among ``nodes`` to their positions now (a network
        first applies the A3 rule along the way)."""
        now = self.env.now
        for node in nodes:
            traj = self.trajectories.get(node.name)
            if traj is None or self._moved_at[node.name] >= now:
                continue
            if self.network:
                self.radio.track(node, self._moved_at[node.name], now)
            node.position_m = traj.positions(np.array([now]))[0]
            self._rows += (now - self._moved_at[node.name]) / self._record_every[node.name]
            if self._rows > MAX_TRAJECTORY_ROWS:
                raise UserError(
                    f"devices.mobility.record_every_s: the trajectories table would pass "
                    f"{MAX_TRAJECTORY_ROWS:,} rows (at {now:g} s of simulated time); record "
                    "less often, or fewer or shorter rounds"
                )
            self._moved_at[node.name] = now
            if self.network:
                self.radio.refresh(node)

    def settle(self, end_s: float) -> None:
        """The run ended at ``end_s`` (its last finished round's end): each moving device
        is put where its path has it then, and its ``trajectories`` rows run to then —
        a path is a function of time, so this costs no event; the A3 rule is not run on
        (no transfer asked where the device was served after its last one). Where the
        rows to then would pass :data:`MAX_TRAJECTORY_ROWS`, the table ends where the
        devices were last brought up to date instead (said in the log). On a network,
        the handovers after ``end_s`` (a round in progress that was dropped) are
        forgotten too."""
        if self.network:  # (a round in progress dropped: its handovers with it)
            self.radio.handover.forget_after(end_s)
        extra = sum(
            max(end_s - self._moved_at[n], 0.0) / self._record_every[n] for n in self.trajectories
        )
        table_to_end = self._rows + extra <= MAX_TRAJECTORY_ROWS
        if not table_to_end:
            log.warning(
                "trajectories: end at each device's last update, not the run's end (%g s): "
                "the table would pass %s rows",
                end_s,
                f"{MAX_TRAJECTORY_ROWS:,}",
            )
        for name, traj in self.trajectories.items():
            if table_to_end:
                self._end[name] = end_s
            self._nodes[name].position_m = traj.positions(np.array([end_s]))[0]

    def tables(self) -> dict[str, pd.DataFrame]:
        """``trajectories`` when devices move (:meth:`table`)."""
        return {"trajectories": self.table()} if self.trajectories else {}

    def table(self) -> pd.DataFrame:
        """``trajectories``: each moving device's position every ``record_every_s`` from
        the start to the run's end (:meth:`settle`; before it, the last instant the device
        was brought up to date), that instant included — its path is a function of time:
        sampled afterwards, at no event's cost."""
        frames = []
        for name, traj in self.trajectories.items():
            end = self._end.get(name, self._moved_at[name])
            step = self._record_every[name]
            t = np.arange(0.0, end, step)
            t = np.append(t, end) if not len(t) or t[-1] < end else t
            xy = traj.positions(t)
            frames.append(
                pd.DataFrame({"device": name, "time_s": t, "x_m": xy[:, 0], "y_m": xy[:, 1]})
            )
        if not frames:
            return pd.DataFrame(columns=["device", "time_s", "x_m", "y_m"])
        return pd.concat(frames, ignore_index=True)
