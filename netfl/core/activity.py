"""What each device is doing now, so that a departure or a deadline can stop it there
(issue 33, item 3).

A device's part of a round passes in *activities*: its transfers (the radio registers
the process carrying its bits for as long as they are on air) and its compute steps
(the compute engine registers them). :meth:`Activities.cut` stops every activity of a
device at this instant: each is interrupted (``simpy.Interrupt`` with the
:class:`DeviceCut` as cause), records what it did until now — the bits actually
delivered, the energy so far — and fails with the :class:`DeviceCut`, which reaches
the algorithm's client process at its ``yield``. A device stays cut until
:meth:`Activities.restore` (the next round it takes part in): an activity it starts
meanwhile fails at once.

Two causes: ``"left"`` (its availability turned off mid-round) and ``"late"`` (the
round's ``algorithm.deadline_s`` passed and the server stopped waiting for it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import simpy

    from netfl.core.nodes import Node

__all__ = ["Activities", "DeviceCut", "TransferCut", "CutReason", "quiet_cut"]

CutReason = Literal["left", "late", "outage"]


class DeviceCut(Exception):
    """A device's part of the round stopped at ``at_s``: it ``left``, was ``late``, or
    its update was lost in an ``outage`` (its uplink SINR below the policy section's
    ``outage_sinr_db``)."""

    def __init__(self, device: str, reason: CutReason, at_s: float):
        # (args are the fields: SimPy re-raises a failed process's exception as
        # ``type(e)(*e.args)``)
        super().__init__(device, reason, at_s)
        self.device = device
        self.reason: CutReason = reason
        self.at_s = at_s

    def __str__(self) -> str:
        return f"{self.device} {self.reason} at {self.at_s:.6g} s"


class TransferCut(Exception):
    """Raised by a link mode's delivery when it is interrupted: the bits it delivered
    until then and its accounting fields so far (for the partial record)."""

    def __init__(self, cause: DeviceCut, delivered_bits: float, extra: dict | None = None):
        super().__init__(cause, delivered_bits, extra)
        self.cause = cause
        self.delivered_bits = float(delivered_bits)
        self.extra = dict(extra or {})


def _defuse(event: simpy.Event) -> None:
    # (an interrupted activity fails with its DeviceCut; when no process waits on it any
    # more — its waiter was cut first — the failure must not stop the simulation)
    event.defused = True


def _defuse_cut(event: simpy.Event) -> None:
    if not event.ok and isinstance(event.value, DeviceCut):
        event.defused = True


def quiet_cut(process: simpy.Process) -> simpy.Process:
    """``process`` failing with a :class:`DeviceCut` does not stop the simulation when
    nothing waits on it (a transfer whose client was cut first, a queued send of a
    device that left); a waiter still gets the exception. Returns ``process``."""
    process.callbacks.append(_defuse_cut)
    return process


class Activities:
    """The running activities of every device: ``device name → {key: on_cut}``."""

    def __init__(self, env: simpy.Environment):
        self.env = env
        self._running: dict[str, dict[object, Callable[[DeviceCut], None]]] = {}
        self._cut: dict[str, DeviceCut] = {}

    def check(self, nodes: Iterable[Node]) -> None:
        """Raise the :class:`DeviceCut` of the first device among ``nodes`` that is cut."""
        for n in nodes:
            cut = self._cut.get(n.name)
            if cut is not None:
                raise cut

    def enter(self, nodes: Iterable[Node], key: object, on_cut=None) -> None:
        """Register activity ``key`` of the devices among ``nodes`` (fails at once if one
        of them is cut). ``on_cut`` (default: interrupt the running process, ``key``)
        is called with the :class:`DeviceCut` when one of them is cut."""
        devices = [n for n in nodes if n.is_device]
        self.check(devices)
        handler = on_cut if on_cut is not None else _interrupter(key)
        for n in devices:
            self._running.setdefault(n.name, {})[key] = handler

    def leave(self, nodes: Iterable[Node], key: object) -> None:
        """Activity ``key`` of these devices ended."""
        for n in nodes:
            running = self._running.get(n.name)
            if running is not None:
                running.pop(key, None)

    def cut(self, node: Node, reason: CutReason) -> DeviceCut:
        """Stop every activity of ``node`` now; it stays cut until :meth:`restore`."""
        cut = self._cut.get(node.name)
        if cut is not None:
            return cut
        cut = self._cut[node.name] = DeviceCut(node.name, reason, self.env.now)
        running = self._running.pop(node.name, {})
        for key, handler in running.items():
            for others in self._running.values():  # (a D2D transfer: its other end's too)
                others.pop(key, None)
            handler(cut)
        return cut

    def is_cut(self, node: Node) -> DeviceCut | None:
        return self._cut.get(node.name)

    def restore(self, nodes: Iterable[Node]) -> None:
        """These devices take part again (a new round)."""
        for n in nodes:
            self._cut.pop(n.name, None)

    def busy(self, node: Node) -> bool:
        """Whether ``node`` has a running activity."""
        return bool(self._running.get(node.name))


def _interrupter(process: object) -> Callable[[DeviceCut], None]:
    def interrupt(cut: DeviceCut) -> None:
        if process.is_alive:  # type: ignore[attr-defined]
            process.interrupt(cut)  # type: ignore[attr-defined]
            process.callbacks.append(_defuse)  # type: ignore[attr-defined]

    return interrupt
