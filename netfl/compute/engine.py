"""``compute(node, flops, kind)``: a SimPy process charging time and energy.

Two models of a step, by the node's compute profile
(:class:`netfl.core.nodes.ComputeProfile`):

- FLOP/s (the default): F FLOPs take F / ``effective_flops_per_s`` seconds and cost
  ``busy_power_w`` times that.
- DVFS (``max_frequency_hz`` > 0): the step is C CPU cycles — ``cycles_per_sample`` ×
  its samples D where both are given (Yang et al.'s c_k·D_k), else F ×
  ``cycles_per_flop`` — run at the node's CPU frequency f (``set_frequency``; default
  f_max). It takes C / f seconds and costs κ·C·f² joules (κ: ``capacitance``).
  These are N. H. Tran et al., "Federated Learning over Wireless Networks:
  Optimization Model Design and Analysis", INFOCOM 2019, eqs. (5)-(6), and Z. Yang
  et al., "Energy Efficient Federated Learning over Wireless Communication Networks",
  IEEE TWC 2021, Sec. II (computation time c_k·D_k / f_k, energy κ·c_k·D_k·f_k² per
  local iteration). netfl takes Yang et al.'s κ: Tran et al. write (α/2)·c·D·f², so
  their α is 2κ (κ = α/2).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from netfl.core.activity import quiet_cut
from netfl.core.records import ComputeRecord, Recorder

if TYPE_CHECKING:
    from netfl.core.activity import Activities
    from netfl.core.nodes import Node

__all__ = ["ComputeEngine"]

_NAN = float("nan")


class ComputeEngine:
    """Runs compute steps on nodes in simulated time.

    A step of ``flops`` on a node takes ``flops / effective_flops_per_s``
    seconds once the node has a free slot (``parallel_jobs`` at a time; further
    steps queue FCFS) and costs ``busy_power_w * duration`` joules. On a DVFS node
    (its profile's ``max_frequency_hz`` > 0) it takes ``cycles / f`` seconds and costs
    ``capacitance · cycles · f²`` joules at the node's CPU frequency f
    (:meth:`set_frequency`; the module's docstring gives the model and its sources).
    """

    def __init__(self, env: simpy.Environment, recorder: Recorder):
        self.env = env
        self.recorder = recorder
        self._slots: dict[str, simpy.Resource] = {}
        #: the CPU frequencies a policy set [Hz] (a DVFS node not here runs at f_max)
        self._frequencies: dict[str, float] = {}
        #: the devices' running activities (a departure or a deadline cuts a compute
        #: step there: :mod:`netfl.core.activity`); None: steps are never cut
        self.activities: Activities | None = None

    def _slot(self, node: Node) -> simpy.Resource:
        slot = self._slots.get(node.name)
        if slot is None:
            slot = simpy.Resource(self.env, capacity=node.compute.parallel_jobs)
            self._slots[node.name] = slot
        return slot

    # -- DVFS -----------------------------------------------------------------------

    @staticmethod
    def check_frequency(node: Node, frequency_hz: float) -> float:
        """``frequency_hz`` as a float, or ``ValueError`` where ``node`` cannot run at it."""
        p = node.compute
        if not p.dvfs:
            raise ValueError(
                f"{node.name}: compute profile {p.name!r} has no DVFS (max_frequency_hz 0), "
                f"so no CPU frequency can be set (got {frequency_hz!r} Hz)"
            )
        f = float(frequency_hz)
        if not (math.isfinite(f) and f > 0 and p.min_frequency_hz <= f <= p.max_frequency_hz):
            raise ValueError(
                f"{node.name}: CPU frequency {frequency_hz!r} Hz is outside its range "
                f"[{p.min_frequency_hz:g}, {p.max_frequency_hz:g}] Hz (and must be > 0)"
            )
        return f

    def set_frequency(self, node: Node, frequency_hz: float | None) -> None:
        """Set ``node``'s CPU frequency [Hz] for the steps that start from now on (a
        running step keeps the frequency it started with); None: back to
        ``max_frequency_hz``.

        Raises
        ------
        ValueError
            ``frequency_hz`` is outside [``min_frequency_hz``, ``max_frequency_hz``]
            (or not > 0), or the node has no DVFS.
        """
        if frequency_hz is None:
            self._frequencies.pop(node.name, None)
            return
        self._frequencies[node.name] = self.check_frequency(node, frequency_hz)

    def frequency_hz(self, node: Node) -> float:
        """``node``'s current CPU frequency [Hz] (NaN without DVFS)."""
        if not node.compute.dvfs:
            return _NAN
        return self._frequencies.get(node.name, node.compute.max_frequency_hz)

    def cycles(self, node: Node, flops: float, samples: float | None = None) -> float:
        """CPU cycles of a step on ``node`` (NaN without DVFS): ``cycles_per_sample ×
        samples`` where the profile has ``cycles_per_sample`` and ``samples`` is given
        (Yang et al.'s c_k·D_k), else ``flops × cycles_per_flop`` (derived where 0)."""
        p = node.compute
        if not p.dvfs:
            return _NAN
        if samples is not None and p.cycles_per_sample > 0:
            return p.cycles_per_sample * float(samples)
        return float(flops) * p.cycles_per_flop_resolved

    def _frequency(self, node: Node, frequency_hz: float | None) -> float:
        return (
            self.frequency_hz(node)
            if frequency_hz is None
            else self.check_frequency(node, frequency_hz)
        )

    def step_time_s(
        self,
        node: Node,
        flops: float,
        samples: float | None = None,
        frequency_hz: float | None = None,
    ) -> float:
        """The time [s] a step would compute on ``node`` (not counting a wait for a
        slot): ``cycles / f`` under DVFS (Tran et al. (6); f: ``frequency_hz``, default
        the node's current one), else ``flops / effective_flops_per_s``."""
        p = node.compute
        if not p.dvfs:
            if frequency_hz is not None:
                self.check_frequency(node, frequency_hz)  # (raises: no DVFS)
            return float(flops) / p.effective_flops_per_s
        return self.cycles(node, flops, samples) / self._frequency(node, frequency_hz)

    def step_energy_j(
        self,
        node: Node,
        flops: float,
        samples: float | None = None,
        frequency_hz: float | None = None,
    ) -> float:
        """The energy [J] a step would cost on ``node``: ``κ · cycles · f²`` under DVFS
        (Tran et al. (5) with α = 2κ; Yang et al.), else ``busy_power_w`` × its time."""
        p = node.compute
        if not p.dvfs:
            return p.busy_power_w * self.step_time_s(node, flops, samples, frequency_hz)
        f = self._frequency(node, frequency_hz)
        return p.capacitance * self.cycles(node, flops, samples) * f * f

    # -- steps ----------------------------------------------------------------------

    def run(
        self, node: Node, flops: float, kind: str, samples: float | None = None
    ) -> simpy.Process:
        """Start a compute step; the process ends when it is done (value: its record).

        ``samples``: the training samples the step processes (epochs × the device's
        samples); a DVFS profile with ``cycles_per_sample`` counts its cycles from
        them, every other profile ignores them.
        """
        if flops < 0:
            raise ValueError(f"negative FLOPs for compute step {kind!r} on {node.name}")
        if samples is not None and not samples >= 0:
            raise ValueError(f"samples {samples!r} for compute step {kind!r} on {node.name}")
        return quiet_cut(self.env.process(self._run(node, float(flops), kind, samples)))

    def _run(
        self, node: Node, flops: float, kind: str, samples: float | None
    ) -> Generator[simpy.Event, Any, ComputeRecord]:
        key = self.env.active_process
        if self.activities is not None:
            self.activities.enter((node,), key)
        p = node.compute
        f = cycles = _NAN
        with self._slot(node).request() as req:
            start = None
            try:
                yield req
                if p.dvfs:  # (the frequency when the step starts holds to its end)
                    f = self.frequency_hz(node)
                    cycles = self.cycles(node, flops, samples)
                    duration = cycles / f
                else:
                    duration = flops / p.effective_flops_per_s
                start = self.env.now
                yield self.env.timeout(duration)
            except simpy.Interrupt as stop:  # (the device left, or the deadline passed)
                if start is not None:
                    elapsed = self.env.now - start
                    if p.dvfs:  # (the cycles run until the cut, and their share of FLOPs)
                        done = min(elapsed * f, cycles)
                        share = done / cycles if cycles > 0 else 0.0
                        energy = p.capacitance * done * f * f
                        self._record(
                            node, kind, flops * share, start, stop.cause.reason, energy, f, done
                        )
                    else:
                        done = min(elapsed * p.effective_flops_per_s, flops)
                        energy = p.busy_power_w * elapsed
                        self._record(node, kind, done, start, stop.cause.reason, energy)
                raise stop.cause from None
            if self.activities is not None:
                self.activities.leave((node,), key)
            if p.dvfs:
                energy = p.capacitance * cycles * f * f
            else:
                energy = p.busy_power_w * (self.env.now - start)
            return self._record(node, kind, flops, start, "done", energy, f, cycles)

    def _record(
        self,
        node: Node,
        kind: str,
        flops: float,
        start: float,
        outcome: str,
        energy: float,
        frequency_hz: float = _NAN,
        cycles: float = _NAN,
    ) -> ComputeRecord:
        duration = self.env.now - start
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
            frequency_hz=frequency_hz,
            cycles=cycles,
        )
        self.recorder.computes.append(record)
        return record
