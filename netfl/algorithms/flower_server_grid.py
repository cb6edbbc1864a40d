"""The ServerApp's side of netfl's Flower ``Grid``: what a ``ServerApp``'s thread calls
(:class:`ServerGrid`), each call that needs simulated time handed to the round's SimPy
process (:class:`~netfl.algorithms.flower_grid.FlowerBridge`, through its
:class:`~netfl.algorithms.app_thread.AppThread`), and the sleeps of Flower's strategy
helpers routed to it: ``sample_nodes`` waiting for more nodes than are on sleeps between
two ``get_node_ids``, and in a ServerApp netfl runs each sleep advances the clock to the
next device that turns on instead of taking real time. A ServerApp's own polling loop
waits once it has asked :data:`SPIN_POLLS` times in a row without sending or sleeping
through Flower's helpers (asking a few times is free)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from flwr.app import Message, RecordDict
from flwr.serverapp import Grid
from flwr.supercore.run import Run

if TYPE_CHECKING:
    from netfl.algorithms.app_thread import AppThread

__all__ = ["NODE_ID_BASE", "RUN_ID", "SPIN_POLLS", "WAIT_POLLS", "ServerGrid", "serving"]


class Bridge(Protocol):
    """What the grid asks of the round's side (:class:`~netfl.algorithms.flower_grid.FlowerBridge`,
    which builds it): the thread it hands its requests to, and the devices' node ids."""

    thread: AppThread

    def node_ids(self) -> list[int]: ...


#: node id of device i: NODE_ID_BASE + i (Flower's own ids are random 64-bit integers)
NODE_ID_BASE = 1_000_000
RUN_ID = 1
#: waits for nodes, no device able to turn on, after which a run stops
WAIT_POLLS = 6
#: consecutive get_node_ids calls (no message sent, no wait through Flower's helpers)
#: after which a ServerApp's own polling loop is taken to wait for nodes
SPIN_POLLS = 100

#: the grid of the ServerApp running in this thread (Flower's helpers' sleeps go to it)
_ACTIVE = threading.local()


def _flower_sleep(seconds: float) -> None:
    """``time.sleep`` as Flower's strategy helpers call it (``sample_nodes`` waiting for
    nodes): inside a ServerApp netfl runs, simulated time passes instead — until the next
    device turns on — and no real time; elsewhere, a real sleep."""
    grid = getattr(_ACTIVE, "grid", None)
    if grid is None:
        time.sleep(seconds)
    else:
        grid.wait_for_nodes()


def _route_flower_sleeps() -> None:
    from flwr.serverapp.strategy import strategy_utils

    strategy_utils.sleep = _flower_sleep


_route_flower_sleeps()


class ServerGrid(Grid):
    """Flower's ``Grid`` whose calls go to the simulation (see the module docstrings)."""

    def __init__(self, bridge: Bridge):
        self._bridge = bridge
        self._run = Run.create_empty(RUN_ID)
        self._polls = 0  # (get_node_ids calls since the last message)
        self._waits = 0  # (waits for nodes since the last message)

    def wait_for_nodes(self) -> None:
        """Simulated time passes until the next device turns on (the app waits)."""
        self._waits += 1
        self._bridge.thread.ask(("wait_nodes", self._waits))

    def set_run(self, run: Run) -> None:
        self._run = run

    @property
    def run(self) -> Run:
        return self._run

    def create_message(
        self,
        content: RecordDict,
        message_type: str,
        dst_node_id: int,
        group_id: str,
        ttl: float | None = None,
    ) -> Message:
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> Iterable[int]:
        self._polls += 1
        if self._polls > SPIN_POLLS:  # (an app's own polling loop: it waits)
            self.wait_for_nodes()
        return self._bridge.node_ids()

    def _sent(self) -> None:
        self._polls = self._waits = 0

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        self._sent()
        return self._bridge.thread.ask(("push", list(messages)))

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        self._sent()
        return self._bridge.thread.ask(("pull", list(message_ids)))

    def send_and_receive(
        self, messages: Iterable[Message], *, timeout: float | None = None
    ) -> Iterable[Message]:
        self._sent()
        return self._bridge.thread.ask(("send", list(messages), timeout))


def serving(grid: ServerGrid) -> None:
    """This thread runs the ServerApp of ``grid``: Flower's helpers' sleeps go to it."""
    _ACTIVE.grid = grid
