"""A model's size and FLOPs, cached on disk by model signature.

Counting them builds the model and runs ``torch.utils.flop_counter`` (and imports
torch: about 2 s of a process's start). They are functions of the model's signature
— its name, the input shape and the number of classes — and of the code that builds
and counts it, so they are kept in netfl's disk cache (``$NETFL_CACHE_DIR``, default
``~/.cache/netfl``; an empty value turns it off) under a key that holds the signature,
torch's version and a hash of the model and FLOP-counting sources: a timing-only run
of a model counted before imports no torch at all, and any change of that code counts
again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from netfl.compute.flops import ModelFlops
from netfl.errors import UserCodeError
from netfl.learning.datasets import cache_dir
from netfl.version import torch_version

__all__ = ["model_facts", "FACTS_FILE"]

log = logging.getLogger(__name__)

FACTS_FILE = "model_facts.json"

_MEMORY: dict[str, tuple[int, ModelFlops]] = {}


@cache
def _code_hash() -> str:
    """Hash of the sources that define the numbers: the model zoo and the FLOP counter."""
    import netfl.compute.flops as flops_module

    h = hashlib.sha256()
    here = Path(flops_module.__file__).resolve()
    for path in (here, here.parents[1] / "learning" / "models.py"):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _key(name: str, input_shape: tuple[int, ...], num_classes: int) -> str:
    shape = "x".join(str(d) for d in input_shape)
    return (
        f"{name}|{shape}|{num_classes}|torch {torch_version()}|code {_code_hash()}"
        f"{_plugin_hash(name)}"
    )


def _plugin_hash(name: str) -> str:
    """A plugin model's code (the file of its builder's module): an edited plugin is
    counted again, never read from the cache (empty for a built-in)."""
    import inspect

    from netfl.learning.catalog import MODEL_BUILDERS

    builder = MODEL_BUILDERS.get(name)
    if builder is None:
        return ""
    builder = getattr(builder, "__wrapped__", builder)  # (the plugin's own function)
    try:
        source = Path(inspect.getfile(builder)).read_bytes()
    except (TypeError, OSError):  # (no file: never cached across processes)
        source = repr(builder).encode() + str(id(builder)).encode()
    return f"|plugin {hashlib.sha256(source).hexdigest()[:16]}"


def _count(name: str, input_shape: tuple[int, ...], num_classes: int) -> tuple[int, ModelFlops]:
    import torch

    from netfl.compute.flops import measure_flops
    from netfl.learning.models import get_model_spec, num_parameters

    spec = get_model_spec(name)
    with torch.random.fork_rng():
        model = spec.build(input_shape, num_classes)
        num_params = num_parameters(model)
        _check_outputs(name, model, input_shape, num_classes)
    flops = measure_flops(
        (name, input_shape, num_classes),
        lambda: spec.build(input_shape, num_classes),
        input_shape,
        spec.loss_fn(),
        num_classes,
    )
    return num_params, flops


def _check_outputs(name: str, model: Any, input_shape: tuple[int, ...], num_classes: int) -> None:
    """A plugin's model must map a batch ``(B, *input_shape)`` to ``(B, num_classes)``
    logits: else one :class:`~netfl.errors.UserCodeError` naming the plugin (before a
    round, not as a loss function's shape error inside one)."""
    from netfl.learning.catalog import MODEL_BUILDERS

    builder = MODEL_BUILDERS.get(name)
    if builder is None:  # (a built-in)
        return
    import torch

    from netfl.core.usercode import calling

    label = getattr(builder, "label", "user code")
    with calling(label, f"model {name!r} forward"), torch.no_grad():
        was = model.training
        out = model.eval()(torch.zeros(2, *input_shape))
        model.train(was)
    shape = tuple(out.shape) if isinstance(out, torch.Tensor) else None
    if shape != (2, num_classes):
        got = f"outputs of shape {shape}" if shape is not None else f"a {type(out).__name__}"
        raise UserCodeError(
            f"{label}: model {name!r} gives {got} for a batch of 2 inputs of shape "
            f"{input_shape}, not (2, {num_classes}): one logit per class of the data set"
        )


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}  # missing or damaged: counted again, rewritten whole


def _write(path: Path, key: str, num_params: int, flops: ModelFlops) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _read(path)
        data[key] = {
            "num_params": num_params,
            "inference_per_sample": flops.inference_per_sample,
            "train_per_sample": flops.train_per_sample,
        }
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".facts-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=0, sort_keys=True)
        os.replace(tmp, path)  # atomic: a reader sees the old file or the new one
    except OSError as err:  # a read-only cache is no error: counted again next time
        log.debug("model facts not cached in %s: %s", path, err)


def model_facts(
    name: str, input_shape: tuple[int, ...], num_classes: int
) -> tuple[int, ModelFlops]:
    """``(number of parameters, per-sample FLOPs)`` of model ``name`` on inputs of
    ``input_shape`` (no batch dimension) with ``num_classes`` outputs: from this
    process's memory, netfl's disk cache, or counted (and cached)."""
    input_shape = tuple(int(d) for d in input_shape)
    key = _key(name, input_shape, num_classes)
    if key in _MEMORY:
        return _MEMORY[key]
    folder = cache_dir()
    entry = _read(folder / FACTS_FILE).get(key) if folder is not None else None
    try:
        facts = (
            int(entry["num_params"]),
            ModelFlops(float(entry["inference_per_sample"]), float(entry["train_per_sample"])),
        )
    except (TypeError, KeyError, ValueError):
        facts = _count(name, input_shape, num_classes)
        if folder is not None:
            _write(folder / FACTS_FILE, key, *facts)
    _MEMORY[key] = facts
    return facts
