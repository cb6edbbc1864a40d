"""What the Flower bridge reads of a Flower ``Message``: its size on air, the arrays it
carries, its category, and its replies' metrics aggregated as Flower's strategies do
(:mod:`netfl.algorithms.flower_grid`; imports ``flwr``)."""

from __future__ import annotations

import numpy as np
from flwr.app import Message
from flwr.common.serde import message_to_proto
from flwr.serverapp.strategy.strategy_utils import aggregate_metricrecords

__all__ = ["message_bits", "num_arrays", "category", "aggregate_metrics"]


def message_bits(message: Message) -> float:
    """A message's size on air: its Flower protobuf serialisation [bit]."""
    return 8.0 * message_to_proto(message).ByteSize()


def num_arrays(message: Message) -> int:
    return len(message.content.array_records) if message.has_content() else 0


def category(message: Message) -> str:
    """``train``, ``evaluate``, ``query`` (a message type ``category.action``)."""
    return message.metadata.message_type.split(".")[0]


def aggregate_metrics(replies: list[Message], weight_key: str) -> dict[str, float]:
    """The replies' scalar metrics aggregated as Flower's strategies do: weighted by
    ``weight_key`` (``aggregate_metricrecords``) where every reply has it, else their
    plain mean."""
    records = [m.content for m in replies if m.has_content() and m.content.metric_records]
    if not records:
        return {}
    firsts = [next(iter(rd.metric_records.values())) for rd in records]
    if all(weight_key in mr for mr in firsts) and sum(float(mr[weight_key]) for mr in firsts) > 0:
        merged = aggregate_metricrecords(records, weight_key)
        return {k: float(v) for k, v in merged.items() if isinstance(v, int | float)}
    sums: dict[str, list[float]] = {}
    for mr in firsts:
        for k, v in mr.items():
            if isinstance(v, int | float):
                sums.setdefault(k, []).append(float(v))
    return {k: float(np.mean(v)) for k, v in sums.items()}
