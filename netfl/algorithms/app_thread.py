"""Blocking code (a Flower ``ServerApp``) driven from a SimPy process: the code runs in a
thread of its own that hands each request needing simulated time to the simulation and
waits for the answer, so exactly one side runs at any moment
(:mod:`netfl.algorithms.flower_grid`)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["AppThread"]

#: how long :meth:`AppThread.stop` waits for the app's thread to unwind [s]
STOP_WAIT_S = 3.0


class _Stopped(BaseException):
    """The simulation ended while the ServerApp waited for it: its thread unwinds (a
    BaseException, so an app's ``except Exception`` does not swallow it)."""


class AppThread:
    """Runs ``target`` in a thread that hands each request to the simulation and waits
    for its answer (:meth:`ask`, on the app's side); :meth:`resume` (the simulation's
    side) answers the last request and waits for the next one, or for the end."""

    def __init__(self, target: Callable[[], None], name: str):
        self._to_app: queue.SimpleQueue = queue.SimpleQueue()
        self._to_sim: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._main, args=(target,), name=name, daemon=True)
        self.started = False
        self.ended = False

    def _main(self, target: Callable[[], None]) -> None:
        if self._to_app.get()[0] == "stop":
            return
        try:
            target()
        except _Stopped:
            return
        except BaseException as err:  # handed to the simulation, raised there
            self._to_sim.put(("error", err))
            return
        self._to_sim.put(("done", None))

    def ask(self, request: tuple) -> Any:
        """(App side.) Hand ``request`` to the simulation; return its answer."""
        self._to_sim.put(("request", request))
        command, value = self._to_app.get()
        if command == "stop":
            raise _Stopped()
        return value

    def resume(self, answer: Any = None) -> tuple[str, Any]:
        """(Simulation side.) Give the app ``answer``; return its next ``("request",
        request)``, ``("done", None)`` or ``("error", exception)``."""
        if not self.started:
            self.started = True
            self._thread.start()
        self._to_app.put(("go", answer))
        kind, payload = self._to_sim.get()
        if kind != "request":
            self.ended = True
        return kind, payload

    def stop(self) -> None:
        """End the app's thread if it still waits for the simulation."""
        if self.started and not self.ended:
            self.ended = True
            self._to_app.put(("stop", None))
            # an app waiting for the simulation unwinds at once; one that never asks
            # again (a loop of its own) is left to its daemon thread, so that Ctrl-C or
            # SIGTERM ends the process now
            self._thread.join(timeout=STOP_WAIT_S)
