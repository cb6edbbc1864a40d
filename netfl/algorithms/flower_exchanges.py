"""The messages of a Flower ServerApp on the simulated network, one SimPy process each
(the nodes' side of :class:`~netfl.algorithms.flower_grid.FlowerBridge`; imports ``flwr``).

**A message's life** (:meth:`Exchanges._exchange`): the message is sent to its device
as a downlink transfer of its serialised size (Flower's protobuf,
``message_to_proto(...).ByteSize()``), the device's ``ClientApp`` answers it as a
compute step of the FLOPs the handler performed (its torch work runs through the
executor seam: :mod:`netfl.learning.flower_client`; the handler's job is submitted when
the message is pushed to an idle device), and the reply goes back as an uplink transfer
of its serialised size. A device handles its messages one at a time, as a Flower
SuperNode does. A reply that arrives after the ServerApp stopped waiting for it is
dropped (the device still spent the time and energy); one from a device that left on
the way is Flower's ``NODE_UNAVAILABLE`` error. Each node keeps its ``Context`` across
rounds (``node_config``: ``partition-id`` = the device's index, ``num-partitions``;
``run_config`` from the scenario), as Flower's simulation keeps it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator
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

from netfl.algorithms.flower_messages import category, message_bits, num_arrays
from netfl.algorithms.flower_server_grid import NODE_ID_BASE, RUN_ID
from netfl.core.activity import DeviceCut
from netfl.errors import AppError
from netfl.learning.tasks import FlowerClientTask

if TYPE_CHECKING:
    from netfl.algorithms.context import RoundContext
    from netfl.algorithms.flower_config import FlowerConfig
    from netfl.core.nodes import Node

__all__ = ["Exchanges"]


class Exchanges:
    """The nodes (device ``i`` is node ``NODE_ID_BASE + i``), their ``Context`` and the
    messages under way to them: :meth:`push` starts a message's exchange, :meth:`collect`
    and :meth:`pull` wait (in simulated time) for the replies. ``round_of`` gives netfl's
    round now (the handlers' seeds, the error messages)."""

    def __init__(
        self,
        world: RoundContext,
        config: FlowerConfig,
        source: str,
        run_config: dict[str, Any],
        round_of: Callable[[], int],
    ):
        self.world = world
        self.config = config
        self.source = source
        self.round_of = round_of
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
        self._ids = itertools.count(1)
        self._events: dict[str, simpy.Event] = {}
        self._replies: dict[str, Message] = {}
        self._abandoned: set[str] = set()
        self._prepared: dict[str, Any] = {}  # message id → the handler job submitted at push
        self._locks: dict[int, simpy.Resource] = {}
        self._queued: dict[int, int] = {}  # node id → messages pushed and not yet answered
        self._handled = itertools.count()

    def collect(
        self, ids: list[str], timeout: float | None
    ) -> Generator[simpy.Event, Any, tuple[list[Message], int]]:
        """``send_and_receive``'s wait: until every reply of ``ids`` has arrived, or
        ``timeout`` simulated seconds; returns the replies there, in the order sent, and
        how many it gave up on (each dropped when it arrives)."""
        env = self.world.env
        waiting = [self._events[i] for i in ids if not self._events[i].triggered]
        if waiting:
            done = simpy.AllOf(env, waiting)
            yield done if timeout is None else simpy.AnyOf(env, [done, env.timeout(timeout)])
        late = [i for i in ids if i not in self._replies]
        self._abandoned.update(late)
        return [self._replies.pop(i) for i in ids if i in self._replies], len(late)

    def pull(self, message_ids: list[str]) -> Generator[simpy.Event, Any, list[Message]]:
        """``pull_messages``: the replies of ``message_ids`` there now, waiting (in
        simulated time) until at least one is when none is."""
        env = self.world.env
        ids = [i for i in message_ids if i in self._events]
        if not any(i in self._replies for i in ids):
            waiting = [self._events[i] for i in ids if not self._events[i].triggered]
            if waiting:
                yield simpy.AnyOf(env, waiting)
        return [self._replies.pop(i) for i in ids if i in self._replies]

    def push(self, messages: list[Message], on: set[int]) -> list[str]:
        """Start each message's exchange with its node; returns their ids. A message to a
        node not ``on`` (off, out of coverage, or none) is answered at once with Flower's
        ``NODE_UNAVAILABLE`` error."""
        env = self.world.env
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
                seed=world.streams.torch_seed(
                    "torch", self.round_of(), device.index, next(self._handled)
                ),
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
                    f"{device.name} in round {self.round_of()} ({result.error})",
                    result.trace,
                )
            reply = result.reply
            if not isinstance(reply, Message):
                raise AppError(
                    f"{self.source}: algorithm.client_app {self.config.client_app} returned "
                    f"{type(reply).__name__} on {device.name} in round {self.round_of()}, not a Message"
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
                f"(the ClientApp's {kind} reply on {device.name} in round {self.round_of()} has none)"
            )
        n = float(first[key])
        if kind == "train":
            epochs = self.config.run_config.get(self.config.epochs_key, 1)
            return flops.train_per_sample * n * float(epochs)
        return flops.inference_per_sample * n

    def state_dict(self) -> dict[str, Any]:
        """Each node's Context state (serialised)."""
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
