"""Partitioners: split sample indices over devices.

Every partitioner takes the label vector, the number of devices and a seeded
``numpy`` generator and returns one index array per device; together they use
every sample exactly once.

- ``iid``: a seeded permutation cut into near-equal parts.
- ``dirichlet(alpha)``: for each class, proportions over devices drawn from
  Dir(alpha·1) (FedDif Sec. VI-A; FedZKT Sec. IV-A); redrawn until every
  device holds at least ``min_samples``.
- ``shards(shards_per_device)``: label-sorted samples cut into
  ``num_devices × k`` shards, k random shards per device (McMahan et al.;
  EcoFed Sec. 4.1).
- ``dominant_label(fraction)``: equal-size devices, ``fraction`` of each
  device's samples from its dominant label, the rest spread evenly over the
  other labels (DFL Sec. V-A); refused when a label has too few samples for the
  devices it dominates, or a device ends more than 2 points short of ``fraction``.
- ``classes_per_device(classes)``: each device holds ``c`` classes; a class's
  samples are split evenly among its holders (FedZKT's quantity-based label
  imbalance).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

from channel_models.registry import lookup

__all__ = ["PARTITIONERS", "PARTITION_PARAMS", "BUILTIN_SCHEMES", "partition", "PartitionError"]


class PartitionError(ValueError):
    """The partition cannot be made with these parameters."""


def iid(labels: np.ndarray, num_devices: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Seeded permutation cut into near-equal parts."""
    return [np.sort(p) for p in np.array_split(rng.permutation(len(labels)), num_devices)]


def dirichlet(
    labels: np.ndarray,
    num_devices: int,
    rng: np.random.Generator,
    alpha: float = 0.5,
    min_samples: int = 1,
    max_tries: int = 1000,
) -> list[np.ndarray]:
    """Per class, shares over devices ~ Dir(alpha); redrawn until every device has min_samples."""
    classes = np.unique(labels)
    for _ in range(max_tries):
        parts: list[list[np.ndarray]] = [[] for _ in range(num_devices)]
        for c in classes:
            idx = rng.permutation(np.flatnonzero(labels == c))
            props = rng.dirichlet(np.full(num_devices, alpha))
            cuts = (np.cumsum(props)[:-1] * len(idx)).astype(int)
            for d, chunk in enumerate(np.split(idx, cuts)):
                parts[d].append(chunk)
        out = [np.sort(np.concatenate(p)) for p in parts]
        if min(len(p) for p in out) >= min_samples:
            return out
    raise PartitionError(
        f"dirichlet(alpha={alpha}) left a device with fewer than {min_samples} samples "
        f"in {max_tries} draws; raise alpha or lower min_samples"
    )


def shards(
    labels: np.ndarray, num_devices: int, rng: np.random.Generator, shards_per_device: int = 2
) -> list[np.ndarray]:
    """Label-sorted samples in num_devices x k shards; k random shards per device."""
    num_shards = num_devices * shards_per_device
    if num_shards > len(labels):
        raise PartitionError(f"{num_shards} shards need at least as many samples ({len(labels)})")
    order = np.argsort(labels, kind="stable")
    pieces = np.array_split(order, num_shards)
    assignment = rng.permutation(num_shards).reshape(num_devices, shards_per_device)
    return [np.sort(np.concatenate([pieces[s] for s in row])) for row in assignment]


def dominant_label(
    labels: np.ndarray, num_devices: int, rng: np.random.Generator, fraction: float = 0.8
) -> list[np.ndarray]:
    """Equal-size devices; `fraction` from one label, the rest spread evenly.
    ``PartitionError`` when a label has too few samples for the devices it dominates
    (they would silently get less than ``fraction`` of it)."""
    classes = np.unique(labels)
    num_classes = len(classes)
    pools = {c: list(rng.permutation(np.flatnonzero(labels == c))) for c in classes}
    per_device = len(labels) // num_devices
    dominant = classes[rng.permutation(num_devices) % num_classes]
    n_dom = int(round(fraction * per_device))
    for c in classes:
        holders = int((dominant == c).sum())
        if n_dom * holders > len(pools[c]):
            raise PartitionError(
                f"dominant_label: fraction {fraction:g} of {per_device} samples per device "
                f"needs {n_dom} of label {c} for each of the {holders} devices it dominates "
                f"({n_dom * holders}), and it has {len(pools[c])}; use a smaller fraction, "
                f"or more devices than labels ({num_classes})"
            )
    parts: list[list[int]] = [[] for _ in range(num_devices)]
    for d in range(num_devices):
        others = [c for c in classes if c != dominant[d]]
        quota = {dominant[d]: n_dom}
        rest = per_device - n_dom
        for i, c in enumerate(others):
            # the remainder's extra samples rotate with d so no label is over-asked
            extra = (i - d) % len(others) < rest % len(others)
            quota[c] = rest // len(others) + int(extra)
        for c, q in quota.items():
            take = min(q, len(pools[c]))
            parts[d].extend(pools[c][:take])
            del pools[c][:take]
    # Samples left over (label imbalance or rounding) go to the currently
    # smallest devices, so every sample is used once and sizes stay equal.
    heap = [(len(p), d) for d, p in enumerate(parts)]
    heapq.heapify(heap)
    for c in classes:
        for i in pools[c]:
            size, d = heapq.heappop(heap)
            parts[d].append(i)
            heapq.heappush(heap, (size + 1, d))
    # a label the devices before took for their rest can leave a later device short of
    # its dominant share: within DOMINANT_SLACK of the fraction, or refused
    shares = [np.mean(labels[p] == dominant[d]) if p else 0.0 for d, p in enumerate(parts)]
    if min(shares) < fraction - DOMINANT_SLACK:
        d = int(np.argmin(shares))
        raise PartitionError(
            f"dominant_label: device {d} gets {shares[d]:.2f} of its samples from its "
            f"dominant label {dominant[d]}, not {fraction:g} (the label ran short); use a "
            "smaller fraction, or fewer devices per label"
        )
    return [np.sort(np.asarray(p, dtype=int)) for p in parts]


#: how far a device's dominant share may fall below ``fraction`` (a label shared out)
DOMINANT_SLACK = 0.02


def classes_per_device(
    labels: np.ndarray, num_devices: int, rng: np.random.Generator, classes: int = 2
) -> list[np.ndarray]:
    """Each device holds `classes` classes; a class is split evenly among its holders."""
    all_classes = rng.permutation(np.unique(labels))
    num_classes = len(all_classes)
    if classes > num_classes:
        raise PartitionError(f"classes={classes} exceeds the {num_classes} classes in the data")
    if num_devices * classes < num_classes:
        raise PartitionError(
            f"{num_devices} devices x {classes} classes cannot cover all {num_classes} classes"
        )
    held = [
        [all_classes[(d * classes + j) % num_classes] for j in range(classes)]
        for d in range(num_devices)
    ]
    holders = {c: [d for d in range(num_devices) if c in held[d]] for c in all_classes}
    parts: list[list[np.ndarray]] = [[] for _ in range(num_devices)]
    for c, devs in holders.items():
        idx = rng.permutation(np.flatnonzero(labels == c))
        for d, chunk in zip(devs, np.array_split(idx, len(devs)), strict=True):
            parts[d].append(chunk)
    return [np.sort(np.concatenate(p)) for p in parts]


PARTITIONERS: dict[str, Callable[..., list[np.ndarray]]] = {
    "iid": iid,
    "dirichlet": dirichlet,
    "shards": shards,
    "dominant_label": dominant_label,
    "classes_per_device": classes_per_device,
}


#: the parameters each scheme takes (a plugin's: from ``data.partition.options``)
PARTITION_PARAMS: dict[str, set[str]] = {
    "iid": set(),
    "dirichlet": {"alpha", "min_samples"},
    "shards": {"shards_per_device"},
    "dominant_label": {"fraction"},
    "classes_per_device": {"classes"},
}
BUILTIN_SCHEMES = tuple(PARTITIONERS)


def partition(
    scheme: str,
    labels: np.ndarray,
    num_devices: int,
    rng: np.random.Generator,
    **params: float,
) -> list[np.ndarray]:
    """Split ``range(len(labels))`` over ``num_devices`` by ``scheme``.

    A split that cannot give every device a sample (or ``min_samples``) is refused
    at once, before any scheme draws (a Dirichlet split would otherwise redraw in vain).
    """
    need = int(params.get("min_samples", 1) or 1) * num_devices
    if need > len(labels):
        raise PartitionError(
            f"{len(labels)} training samples cannot give {num_devices} devices "
            f"{int(params.get('min_samples', 1) or 1)} each; use fewer devices"
        )
    labels = np.asarray(labels)
    parts = lookup(PARTITIONERS, scheme, "partition scheme")(labels, num_devices, rng, **params)
    if scheme not in BUILTIN_SCHEMES:
        parts = _checked(scheme, parts, len(labels), num_devices)
    return parts


def _checked(scheme: str, parts: object, num_samples: int, num_devices: int) -> list[np.ndarray]:
    """A plugin scheme's split: one integer index array per device, disjoint, within
    the training set (else :class:`PartitionError` says what is wrong)."""
    if not isinstance(parts, (list, tuple)) or len(parts) != num_devices:
        raise PartitionError(f"scheme {scheme!r} must return {num_devices} index arrays")
    out = [np.asarray(p) for p in parts]
    if any(p.ndim != 1 or (p.size and p.dtype.kind not in "iu") for p in out):
        raise PartitionError(f"scheme {scheme!r} must return 1-D integer index arrays")
    flat = np.concatenate([p.astype(np.int64) for p in out]) if out else np.array([], int)
    if flat.size and (flat.min() < 0 or flat.max() >= num_samples):
        raise PartitionError(f"scheme {scheme!r} gave indices outside 0..{num_samples - 1}")
    if np.unique(flat).size != flat.size:
        raise PartitionError(f"scheme {scheme!r} gave a sample to two devices")
    if any(p.size == 0 for p in out):
        raise PartitionError(f"scheme {scheme!r} left a device without samples")
    return [np.sort(p.astype(np.int64)) for p in out]
