"""netfl's implementation of Flower's ``Grid``: a ServerApp's messages on the simulated
network (the engine of :mod:`netfl.algorithms.flower_bridge`; imports ``flwr``).

**Two threads, one at a time.** A Flower ``ServerApp`` is ordinary blocking code: its
strategy calls ``grid.send_and_receive(...)`` and waits. It runs in a thread of its own
(:class:`~netfl.algorithms.app_thread.AppThread`) that hands every call which needs simulated time to the SimPy
process of the round and blocks until the answer comes back, so exactly one side runs
at any moment and the run is as deterministic as a single thread.

**A message's life** (one SimPy process per message, :mod:`netfl.algorithms.flower_exchanges`):
the message is sent to its device as a downlink transfer of its serialised size
(Flower's protobuf, ``message_to_proto(...).ByteSize()``), the device's ``ClientApp``
answers it as a compute step of the FLOPs the handler performed (its torch work runs
through the executor seam: :mod:`netfl.learning.flower_client`), and the reply goes
back as an uplink transfer of its serialised size. A device handles its messages one
at a time, as a Flower SuperNode does. ``send_and_receive`` returns when the replies
have arrived in simulated time, or when its ``timeout`` (simulated seconds) has passed:
a reply still on its way is then dropped when it arrives (the device still spent the
time and energy). Replies are returned in the order the messages were sent, so results
never depend on which device happened to answer first. ``pull_messages`` waits (in
simulated time) until at least one awaited reply is there, so a polling loop advances.

**Nodes.** Node ``1_000_000 + i`` is device ``i``; ``get_node_ids`` lists the devices
in coverage that are available now (``devices.availability``). A message to a node
that is not (a device off, out of coverage, or no device at all) is answered at once
with Flower's ``NODE_UNAVAILABLE`` error; so is one to a device that leaves while
its message, handler or reply is under way (the transfer or compute step stops there,
recorded with what it did: :mod:`netfl.core.activity`). A strategy that waits for more
nodes than are on waits in simulated time, taking no real time
(:mod:`netfl.algorithms.flower_server_grid`, the ServerApp's side). Each node keeps its
``Context`` across rounds (``node_config``:
``partition-id`` = the device's index, ``num-partitions``; ``run_config`` from the
scenario), as Flower's simulation keeps it.

**Rounds.** A row of ``rounds.csv`` is one Flower round: the exchanges whose messages
belong to the same round (their ``group_id``, or the ``server-round`` that Flower's
strategies put into every message's config record); the row ends when the ServerApp
sends a message of another round, or returns — then the run ends, and exchanges still
under way stop there (recorded ``late`` with what they did).
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy
from flwr.app import Context, Message, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.supercore.task_identity import TaskIdentity

from netfl.algorithms.algorithm import RoundSummary
from netfl.algorithms.app_thread import AppThread
from netfl.algorithms.flower_exchanges import Exchanges
from netfl.algorithms.flower_messages import (
    aggregate_metrics,
    category,
    message_bits,
)
from netfl.algorithms.flower_server_grid import (
    NODE_ID_BASE,
    RUN_ID,
    WAIT_POLLS,
    ServerGrid,
    serving,
)
from netfl.errors import AppError, UserError
from netfl.learning.flower_client import load_flower_app

if TYPE_CHECKING:
    from netfl.algorithms.context import RoundContext
    from netfl.algorithms.flower_config import FlowerConfig

__all__ = ["FlowerBridge", "NODE_ID_BASE", "RUN_ID", "message_bits", "aggregate_metrics"]


class FlowerBridge:
    """Runs a ServerApp on the simulated network, round by round (see the module
    docstring). ``round(r)`` is the SimPy process of netfl's round ``r``."""

    def __init__(self, world: RoundContext, config: FlowerConfig, source: str):
        self.world = world
        self.config = config
        self.source = source
        assert config.app_dir is not None  # (resolved against the scenario's folder)
        self.server_app = self._load(config.server_app, "server_app")
        self._load(config.client_app, "client_app")  # (fails now, not in round 0)
        run_config = dict(config.run_config)
        self.exchanges = Exchanges(world, config, source, run_config, lambda: self.r)
        self.server_context = Context(RUN_ID, SUPERLINK_NODE_ID, {}, RecordDict(), run_config)
        self.grid = ServerGrid(self)
        self._quiet_flower_logs()
        self.thread = AppThread(self._main, "netfl-flower-serverapp")
        self.finished = False
        self._pending: tuple | None = None
        self._answer: Any = None
        self.r = 0
        self._train_exchanges = 0
        self.metrics: dict[str, dict[str, float]] = {}

    @property
    def contexts(self) -> dict[int, Context]:
        """Each node's ``Context`` by node id, kept across rounds (:class:`Exchanges`)."""
        return self.exchanges.contexts

    def _quiet_flower_logs(self) -> None:
        """Flower's strategies log every round at INFO on their own console handler:
        shown with ``--debug`` (netfl's root logger at DEBUG), else only warnings; not
        passed on to netfl's handler as well. Put back by :meth:`close`."""
        from flwr.common.logger import FLOWER_LOGGER, console_handler

        self._log_state = (console_handler.level, FLOWER_LOGGER.propagate)
        debug = logging.getLogger().isEnabledFor(logging.DEBUG)
        console_handler.setLevel(logging.INFO if debug else logging.WARNING)
        FLOWER_LOGGER.propagate = False

    def _load(self, reference: str, kind: str) -> Any:
        try:
            return load_flower_app(reference, str(self.config.app_dir), kind)
        except ValueError as err:
            raise UserError(f"{self.source}: algorithm.{kind}: {err}") from None

    # -- the app's thread ---------------------------------------------------------
    def _main(self) -> None:
        TaskIdentity.task_id = 1
        TaskIdentity.run_id = RUN_ID
        TaskIdentity.node_id = SUPERLINK_NODE_ID
        seed = self.world.streams.torch_seed("flower_server")
        random.seed(seed)  # (Flower's strategies sample nodes with random.sample)
        np.random.seed(seed % (1 << 32))
        import torch

        torch.manual_seed(seed)  # (the ServerApp's own model initialisation)
        serving(self.grid)  # (this thread runs the ServerApp: its helpers' sleeps)
        self.server_app(grid=self.grid, context=self.server_context)

    def node_ids(self) -> list[int]:
        """The nodes a ServerApp sees connected: available devices in coverage."""
        return [NODE_ID_BASE + d.index for d in self.world.available_devices(self.r)]

    # -- the simulation's side ----------------------------------------------------
    def round(self, r: int) -> Generator[simpy.Event, Any, RoundSummary]:
        self.r = r
        group: str | None = None
        seen: dict[str, list[Message]] = {}
        devices: set[int] = set()
        counts = {"errors": 0, "late": 0, "messages": 0}
        while not self.finished:
            if self._pending is None:
                kind, payload = self.thread.resume(self._answer)
                self._answer = None
                if kind == "done":
                    self.finished = True
                    yield from self._stop_exchanges()
                    break
                if kind == "error":
                    self.finished = True
                    raise self._app_error(payload)
                self._pending = payload
            request = self._pending
            if request[0] in ("send", "push") and request[1]:
                key = self._round_key(request[1][0])
                if group is None:
                    group = key
                elif key != group:
                    break  # the next round's first exchange: it waits for round r + 1
            self._pending = None
            self._answer = yield from self._serve(request, counts)
            if request[0] in ("send", "pull"):
                for reply in self._answer:
                    devices.add(reply.metadata.src_node_id)
                    if reply.has_error():
                        counts["errors"] += 1
                    else:
                        seen.setdefault(category(reply), []).append(reply)
        self.metrics = {
            cat: aggregate_metrics(replies, self.config.weight_key) for cat, replies in seen.items()
        }
        extra = {
            f"flower_{cat}_{key}": value
            for cat, values in self.metrics.items()
            for key, value in values.items()
        }
        extra.update({f"flower_{k}": float(v) for k, v in counts.items()})
        return RoundSummary(
            num_clients=len(devices),
            train_loss=self.metrics.get("train", {}).get("train_loss", math.nan),
            extra=extra,
        )

    def _stop_exchanges(self) -> Generator[simpy.Event, Any, None]:
        """The ServerApp returned: the run ends now. Exchanges still under way (replies
        it gave up waiting for) stop here, each transfer and handler recorded with what
        it did and the energy it took until now (outcome ``late``), not lost."""
        activities = self.world.activities
        busy = [d for d in self.exchanges.nodes.values() if activities.busy(d)]
        for device in busy:
            activities.cut(device, "late")
        if busy:  # (the cut processes record themselves at this instant)
            yield self.world.env.timeout(0)

    def _round_key(self, msg: Message) -> str:
        """Which Flower round a message belongs to: its ``group_id`` if set, else the
        ``server-round`` Flower's strategies put into its config record, else the count
        of training exchanges so far (an app of its own that says neither)."""
        if msg.metadata.group_id:
            return f"group {msg.metadata.group_id}"
        if msg.has_content():
            for record in msg.content.config_records.values():
                if "server-round" in record:
                    return f"server-round {record['server-round']}"
        if category(msg) == "train":
            self._train_exchanges += 1
        return f"exchange {self._train_exchanges}"

    def accuracy_loss(self) -> tuple[float, float]:
        """The last round's evaluation replies, aggregated (``accuracy_key``, ``loss_key``)."""
        values = self.metrics.get("evaluate", {})
        return (
            values.get(self.config.accuracy_key, math.nan),
            values.get(self.config.loss_key, math.nan),
        )

    def _app_error(self, err: BaseException) -> AppError:
        import traceback

        first = (str(err).strip().splitlines() or [""])[0]
        return AppError(
            f"{self.source}: algorithm.server_app {self.config.server_app} raised in round "
            f"{self.r} ({type(err).__name__}: {first})",
            "".join(traceback.format_exception(err)),
        )

    def _serve(self, request: tuple, counts: dict[str, int]) -> Generator[simpy.Event, Any, Any]:
        env = self.world.env
        op = request[0]
        if op == "push":
            ids = self.exchanges.push(request[1], set(self.node_ids()))
            counts["messages"] += len(ids)
            return ids
        if op == "send":
            _, messages, timeout = request
            ids = self.exchanges.push(messages, set(self.node_ids()))
            counts["messages"] += len(ids)
            replies, late = yield from self.exchanges.collect(ids, timeout)
            counts["late"] += late
            return replies
        if op == "pull":
            return (yield from self.exchanges.pull(request[1]))
        if op == "wait_nodes":  # the app waits for nodes: time passes until one turns on
            t = self.world.wait_for_return_s()
            if t is not None:
                yield env.timeout(t - env.now)
            elif request[1] >= WAIT_POLLS:
                raise UserError(
                    f"{self.source}: the ServerApp waited for nodes {request[1]} times "
                    f"without sending a message, and no device will turn on: does its "
                    f"strategy wait for more nodes (min_available_nodes) than the "
                    f"{len(self.node_ids())} available?"
                )
            return None
        raise AssertionError(op)

    def close(self) -> None:
        self.thread.stop()
        from flwr.common.logger import FLOWER_LOGGER, console_handler

        console_handler.setLevel(self._log_state[0])
        FLOWER_LOGGER.propagate = self._log_state[1]

    def state_dict(self) -> dict[str, Any]:
        """What netfl holds of the run: each node's Context state (serialised)."""
        return self.exchanges.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.exchanges.load_state_dict(state)
