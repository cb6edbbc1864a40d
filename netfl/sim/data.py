"""A run's data: the data set and every device's sample indices, built from the scenario's
``data`` section, seed and device count — without torch (``netfl validate`` builds them
to check a data root and a partition, and a timing run needs only the labels).

Both are kept for later runs in this process (least recently used dropped first).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from netfl.core.rng import Streams
from netfl.errors import UserError
from netfl.learning.datasets import DataRootError, load_dataset
from netfl.learning.partition import PartitionError, partition
from netfl.sim.specs import DataSpec

__all__ = ["build_data"]


#: data sets and partitions built in this process, by what defines them: a sweep worker
#: running many variants of one data section builds them once (least recently used
#: dropped first; at most 2 data sets — CIFAR-100 holds 0.6 GB — and 16 partitions)
_DATA_CACHE: OrderedDict[tuple, Any] = OrderedDict()
_PARTITION_CACHE: OrderedDict[tuple, Any] = OrderedDict()
_CACHE_SIZES = {"data": 2, "partition": 16}


def _cached(cache: OrderedDict, key: tuple, build: Callable[[], Any]) -> Any:
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = build()
    cache[key] = value
    while len(cache) > _CACHE_SIZES[key[0]]:
        cache.popitem(last=False)
    return value


def build_data(spec: DataSpec, streams: Streams, source: str = "scenario"):
    """The data set and every device's sample indices; a problem (missing root, a
    split that cannot give every device a sample) is a one-line ``UserError``.
    ``netfl validate`` runs it too: it needs no simulation.

    Both are functions of the ``data`` section, seed and device count (``spec``:
    :func:`netfl.sim.specs.data_spec`), and are kept for later runs in this process
    (shared: nothing may write to them).
    """
    d = spec.data
    options = d.synthetic.model_dump() if d.dataset == "synthetic" else {}
    from netfl.learning.datasets import DATASETS
    from netfl.learning.partition import PARTITIONERS

    # (the loader and the split themselves are part of the keys: a plugin registered
    # again, e.g. fixed in a notebook, loads and splits anew)
    loader = DATASETS.get(d.dataset)
    data_key = ("data", d.dataset, loader, d.root, d.test_fraction, spec.seed, repr(options))
    try:
        dataset = _cached(
            _DATA_CACHE,
            data_key,
            lambda: load_dataset(d.dataset, d.root, d.test_fraction, spec.seed, **options),
        )
    except DataRootError as err:
        raise UserError(f"{source}: data.root: {err}") from None
    n_train, n_test = len(dataset.train_y_np), len(dataset.test_y_np)
    if not (n_train and n_test):  # (nothing to train on, or nothing to evaluate)
        raise UserError(
            f"{source}: data.test_fraction: {d.test_fraction:g} of data set "
            f"{d.dataset!r} gives {n_train} training and {n_test} test samples; both "
            "need at least one"
        )
    split = PARTITIONERS.get(d.partition.scheme)
    part_key = (
        "partition",
        *data_key[1:],
        split,
        d.partition.model_dump_json(),
        spec.num_devices,
    )
    parts = _cached(_PARTITION_CACHE, part_key, lambda: _partition(spec, dataset, streams, source))
    return dataset, parts


def _partition(spec: DataSpec, dataset, streams: Streams, source: str) -> list[np.ndarray]:
    d = spec.data
    rng = streams.generator("partition")
    try:
        parts = partition(
            d.partition.scheme,
            dataset.train_y_np,
            spec.num_devices,
            rng,
            **d.partition.params(),
        )
    except PartitionError as err:
        raise UserError(f"{source}: data.partition: {err}") from None
    empty = [i for i, p in enumerate(parts) if len(p) == 0]
    if empty:
        raise UserError(
            f"{source}: data.partition: {len(empty)} devices get no samples "
            f"({len(dataset.train_y_np)} samples for {len(parts)} devices)"
        )
    return parts
