"""What a Flower ``ClientApp`` running on netfl's network may ask of netfl.

An unmodified Flower app loads its own data by ``context.node_config["partition-id"]``
and ``["num-partitions"]`` (netfl sets both, as Flower's simulation does: the partition
id is the device's index). An app that wants the scenario's own data set and partition
(so that it trains on exactly what netfl's built-in algorithms train on) calls
:func:`node_data` inside its handler::

    from netfl.flower import node_data

    @app.train()
    def train(msg, context):
        trainset, _ = node_data(context)
        ...

The scenario key ``algorithm: {name: flower, server_app: ..., client_app: ...}`` runs
the apps (:mod:`netfl.algorithms.flower_bridge`; ``examples/flower/``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["node_data"]


def node_data(context: Any) -> tuple[Any, Any]:
    """The running device's training partition and its share of the test set, as two
    ``torch.utils.data.TensorDataset`` of ``(x, y)`` (the test set is split into
    ``num-partitions`` contiguous shares, so evaluation replies weighted by their
    ``num-examples`` average to the accuracy on the whole test set).

    Only inside a ``ClientApp`` handler that netfl runs; ``RuntimeError`` elsewhere.
    """
    import torch
    from torch.utils.data import TensorDataset

    from netfl.learning.flower_client import active_node

    node = active_node()
    if node is None:
        raise RuntimeError(
            "netfl.flower.node_data: only inside a ClientApp handler that netfl runs "
            "(algorithm: {name: flower})"
        )
    ctx = node.context
    idx = torch.from_numpy(node.indices.astype("int64"))
    train = TensorDataset(ctx.train_x[idx], ctx.train_y[idx])
    start, stop = node.test_rows
    assert ctx.test_x is not None and ctx.test_y is not None
    test = TensorDataset(ctx.test_x[start:stop], ctx.test_y[start:stop])
    return train, test
