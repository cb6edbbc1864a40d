"""netfl's implementation of Flower's ``Grid``: a ServerApp's messages on the simulated
network (the engine of :mod:`netfl.algorithms.flower_bridge`; imports ``flwr``).

**Two threads, one at a time.** A Flower ``ServerApp`` is ordinary blocking code: its
strategy calls ``grid.send_and_receive(...)`` and waits. It runs in a thread of its own
(:class:`~netfl.algorithms.app_thread.AppThread`) that hands every call which needs simulated time to the SimPy
process of the round and blocks until the answer comes back, so exactly one side runs
at any moment and the run is as deterministic as a single thread.

**A message's life** (one SimPy process per message, :meth:`FlowerBridge._exchange`):
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

import itertools
import logging
import math
import random
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy
from flwr.app import Context, Error, Message, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID, ErrorCode
from flwr.common.serde import (
    context_from_proto,
    context_to_proto,
    message_from_proto,
    message_to_proto,
)
from flwr.supercore.task_identity import TaskIdentity

from netfl.algorithms.algorithm import RoundSummary
from netfl.algorithms.app_thread import AppThread
from netfl.algorithms.flower_messages import (
    aggregate_metrics,
    category,
    message_bits,
    num_arrays,
)
from netfl.algorithms.flower_server_grid import (
    NODE_ID_BASE,
    RUN_ID,
    WAIT_POLLS,
    ServerGrid,
    serving,
)
from netfl.core.activity import DeviceCut
from netfl.errors import AppError, UserError
from netfl.learning.flower_client import load_flower_app
from netfl.learning.tasks import FlowerClientTask

if TYPE_CHECKING:
    from netfl.algorithms.context import RoundContext
    from netfl.algorithms.flower_config import FlowerConfig
    from netfl.core.nodes import Node

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
        n = len(world.all_devices)
        self.nodes: dict[int, Node] = {NODE_ID_BASE + d.index: d for d in world.all_devices}
        self.contexts = {
            nid: Context(
                RUN_ID,
                nid,
                {"partition-id": d.index, "num-partitions": n},
                RecordDict(),
                dict(run_config),
            )
            for nid, d in self.nodes.items()
        }
        n_test = len(world.dataset.test_y_np)
        edges = np.linspace(0, n_test, n + 1).round().astype(int)
        self.test_rows = {
            d.index: (int(edges[d.index]), int(edges[d.index + 1])) for d in self.nodes.values()
        }
        self.server_context = Context(RUN_ID, SUPERLINK_NODE_ID, {}, RecordDict(), run_config)
        self.grid = ServerGrid(self)
        self._quiet_flower_logs()
        self.thread = AppThread(self._main, "netfl-flower-serverapp")
        self.finished = False
        self._pending: tuple | None = None
        self._answer: Any = None
        self._ids = itertools.count(1)
        self._events: dict[str, simpy.Event] = {}
        self._replies: dict[str, Message] = {}
        self._abandoned: set[str] = set()
        self._prepared: dict[str, Any] = {}  # message id → the handler job submitted at push
        self._locks: dict[int, simpy.Resource] = {}
        self._queued: dict[int, int] = {}  # node id → messages pushed and not yet answered
        self._handled = itertools.count()
        self.r = 0
        self._train_exchanges = 0
        self.metrics: dict[str, dict[str, float]] = {}

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
        busy = [d for d in self.nodes.values() if activities.busy(d)]
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
            ids = self._push(request[1])
            counts["messages"] += len(ids)
            return ids
        if op == "send":
            _, messages, timeout = request
            ids = self._push(messages)
            counts["messages"] += len(ids)
            waiting = [self._events[i] for i in ids if not self._events[i].triggered]
            if waiting:
                done = simpy.AllOf(env, waiting)
                yield done if timeout is None else simpy.AnyOf(env, [done, env.timeout(timeout)])
            late = [i for i in ids if i not in self._replies]
            counts["late"] += len(late)
            self._abandoned.update(late)
            return [self._replies.pop(i) for i in ids if i in self._replies]
        if op == "pull":
            ids = [i for i in request[1] if i in self._events]
            if not any(i in self._replies for i in ids):
                waiting = [self._events[i] for i in ids if not self._events[i].triggered]
                if waiting:
                    yield simpy.AnyOf(env, waiting)
            return [self._replies.pop(i) for i in ids if i in self._replies]
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

    def _push(self, messages: list[Message]) -> list[str]:
        env = self.world.env
        on = set(self.node_ids())
        ids = []
        for msg in messages:
            if not isinstance(msg, Message) or msg.metadata.reply_to_message_id:
                raise AppError(
                    f"{self.source}: the ServerApp pushed {type(msg).__name__} that is no new "
                    "Flower Message"
                )
            mid = f"{next(self._ids):016x}"
            meta = msg.metadata
            meta.__dict__["_message_id"] = mid
            meta.__dict__["_run_id"] = RUN_ID
            meta.__dict__["_src_node_id"] = SUPERLINK_NODE_ID
            event = env.event()
            self._events[mid] = event
            ids.append(mid)
            nid = meta.dst_node_id
            if nid not in on:
                reason = (
                    "the device is off or out of coverage" if nid in self.nodes else "no such node"
                )
                self._replies[mid] = Message(
                    Error(code=ErrorCode.NODE_UNAVAILABLE, reason=reason), reply_to=msg
                )
                event.succeed()
                continue
            self.world.activities.restore([self.nodes[nid]])  # (on now: back if it had left)
            if not self._queued.get(nid):  # the device is idle: its job may start now
                self._prepared[mid] = self._submit(msg, nid)
            self._queued[nid] = self._queued.get(nid, 0) + 1
            env.process(self._exchange(msg, nid, mid, event))
        return ids

    def _submit(self, msg: Message, nid: int) -> Any:
        device = self.nodes[nid]
        world = self.world
        assert world.executor is not None
        return world.executor.submit(
            FlowerClientTask(
                client_app=self.config.client_app,
                app_dir=str(self.config.app_dir),
                # copies, as a node receives them over the wire (whatever the executor): a
                # handler cannot change the server's message (shared by every node's) nor
                # the node's context before its step is done (:meth:`_handle` keeps it then)
                message=message_from_proto(message_to_proto(msg)),
                context=context_from_proto(context_to_proto(self.contexts[nid])),
                indices=world.partitions[device.index],
                test_rows=self.test_rows[device.index],
                seed=world.streams.torch_seed("torch", self.r, device.index, next(self._handled)),
                count_flops=self.config.compute == "counted",
            )
        )

    def _exchange(
        self, msg: Message, nid: int, mid: str, event: simpy.Event
    ) -> Generator[simpy.Event, Any, None]:
        """One message's life: down, handled (the device's compute step), the reply up.
        A device that leaves meanwhile (its transfer or step cut there) answers with
        Flower's ``NODE_UNAVAILABLE`` error, as Flower does for a node that is lost; a
        handler cut before its compute step ends leaves the node's context as it was
        (one cut during the reply's upload had run: the node keeps its changes)."""
        device = self.nodes[nid]
        handled = [False]  # (its compute step is over: the device takes the next message)
        try:
            reply = yield from self._handle(msg, nid, mid, device, handled)
        except DeviceCut as cut:
            if not handled[0]:
                self._queued[nid] -= 1
            self._prepared.pop(mid, None)
            reply = Message(
                Error(
                    code=ErrorCode.NODE_UNAVAILABLE,
                    reason=f"the device {cut.reason} at {cut.at_s:.6g} s",
                ),
                reply_to=msg,
            )
        if mid in self._abandoned:
            self._abandoned.discard(mid)
        else:
            self._replies[mid] = reply
        event.succeed()

    def _handle(
        self, msg: Message, nid: int, mid: str, device: Node, handled: list[bool]
    ) -> Generator[simpy.Event, Any, Message]:
        world = self.world
        kind = category(msg)
        yield world.radio.transfer(
            world.bs, device, message_bits(msg), f"{kind}_down", num_models=num_arrays(msg)
        )
        lock = self._locks.setdefault(nid, simpy.Resource(world.env, capacity=1))
        with lock.request() as turn:
            yield turn
            job = self._prepared.pop(mid, None) or self._submit(msg, nid)
            result = job.result()
            if result.error is not None:
                raise AppError(
                    f"{self.source}: algorithm.client_app {self.config.client_app} raised on "
                    f"{device.name} in round {self.r} ({result.error})",
                    result.trace,
                )
            reply = result.reply
            if not isinstance(reply, Message):
                raise AppError(
                    f"{self.source}: algorithm.client_app {self.config.client_app} returned "
                    f"{type(reply).__name__} on {device.name} in round {self.r}, not a Message"
                )
            yield world.compute.run(device, self._flops(result, kind, device), kind)
            self.contexts[nid] = result.context
        self._queued[nid] -= 1
        handled[0] = True
        reply.metadata.__dict__["_message_id"] = f"{next(self._ids):016x}"
        yield world.radio.transfer(
            device, world.bs, message_bits(reply), f"{kind}_up", num_models=num_arrays(reply)
        )
        return reply

    def _flops(self, result: Any, kind: str, device: Node) -> float:
        """The handler call's cost: its counted FLOPs, or (``compute: model``) the
        scenario model's FLOPs per sample × the reply's ``weight_key`` (× the run
        config's ``epochs_key`` when training)."""
        if self.config.compute == "counted":
            return result.flops
        flops = self.world.model.flops
        reply = result.reply
        records = reply.content.metric_records if reply.has_content() else {}
        first = next(iter(records.values()), {})
        key = self.config.weight_key
        if key not in first:
            raise AppError(
                f"{self.source}: algorithm.compute: model needs the reply's {key!r} metric "
                f"(the ClientApp's {kind} reply on {device.name} in round {self.r} has none)"
            )
        n = float(first[key])
        if kind == "train":
            epochs = self.config.run_config.get(self.config.epochs_key, 1)
            return flops.train_per_sample * n * float(epochs)
        return flops.inference_per_sample * n

    def close(self) -> None:
        self.thread.stop()
        from flwr.common.logger import FLOWER_LOGGER, console_handler

        console_handler.setLevel(self._log_state[0])
        FLOWER_LOGGER.propagate = self._log_state[1]

    def state_dict(self) -> dict[str, Any]:
        """What netfl holds of the run: each node's Context state (serialised)."""
        from flwr.common.serde import recorddict_to_proto

        return {
            "node_state": {
                nid: recorddict_to_proto(ctx.state).SerializeToString()
                for nid, ctx in self.contexts.items()
            }
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        from flwr.common.serde import recorddict_from_proto
        from flwr.proto.recorddict_pb2 import RecordDict as ProtoRecordDict

        for nid, blob in state["node_state"].items():
            proto = ProtoRecordDict()
            proto.ParseFromString(blob)
            self.contexts[nid].state = recorddict_from_proto(proto)
