"""``compute(node, flops, kind)``: a SimPy process charging time and energy."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from netfl.core.activity import quiet_cut
from netfl.core.records import ComputeRecord, Recorder

if TYPE_CHECKING:
    from netfl.core.activity import Activities
    from netfl.core.nodes import Node

__all__ = ["ComputeEngine"]


class ComputeEngine:
    """Runs compute steps on nodes in simulated time.

    A step of ``flops`` on a node takes ``flops / effective_flops_per_s``
    seconds once the node has a free slot (``parallel_jobs`` at a time; further
    steps queue FCFS) and costs ``busy_power_w * duration`` joules.
    """

    def __init__(self, env: simpy.Environment, recorder: Recorder):
        self.env = env
        self.recorder = recorder
        self._slots: dict[str, simpy.Resource] = {}
        #: the devices' running activities (a departure or a deadline cuts a compute
        #: step there: :mod:`netfl.core.activity`); None: steps are never cut
        self.activities: Activities | None = None

    def _slot(self, node: Node) -> simpy.Resource:
        slot = self._slots.get(node.name)
        if slot is None:
            slot = simpy.Resource(self.env, capacity=node.compute.parallel_jobs)
            self._slots[node.name] = slot
        return slot

    def run(self, node: Node, flops: float, kind: str) -> simpy.Process:
        """Start a compute step; the process ends when it is done (value: its record)."""
        if flops < 0:
            raise ValueError(f"negative FLOPs for compute step {kind!r} on {node.name}")
        return quiet_cut(self.env.process(self._run(node, float(flops), kind)))

    def _run(
        self, node: Node, flops: float, kind: str
    ) -> Generator[simpy.Event, Any, ComputeRecord]:
        key = self.env.active_process
        if self.activities is not None:
            self.activities.enter((node,), key)
        with self._slot(node).request() as req:
            start = None
            try:
                yield req
                start = self.env.now
                yield self.env.timeout(flops / node.compute.effective_flops_per_s)
            except simpy.Interrupt as stop:  # (the device left, or the deadline passed)
                if start is not None:
                    done = (self.env.now - start) * node.compute.effective_flops_per_s
                    self._record(node, kind, min(done, flops), start, stop.cause.reason)
                raise stop.cause from None
            if self.activities is not None:
                self.activities.leave((node,), key)
            return self._record(node, kind, flops, start, "done")

    def _record(
        self, node: Node, kind: str, flops: float, start: float, outcome: str
    ) -> ComputeRecord:
        duration = self.env.now - start
        energy = node.compute.busy_power_w * duration
        node.energy.compute_s += duration
        node.energy.compute_j += energy
        record = ComputeRecord(
            round=self.recorder.round,
            node=node.name,
            kind=kind,
            flops=flops,
            start_s=start,
            end_s=self.env.now,
            energy_j=energy,
            outcome=outcome,
        )
        self.recorder.computes.append(record)
        return record
