"""Pre-training a model's device part for EcoFed, run by netfl itself or loaded from a file.

EcoFed (arXiv 2304.05495, Sec. 2) initialises the device part from weights
pre-trained on another data set and freezes it. netfl downloads nothing:
:func:`pretrain` trains the whole model centrally on a configurable data set
(e.g. ``digits``, ``synthetic`` of the FL data's shape, CIFAR-100 from a local
root) and caches the result on disk under a hash of everything that
determines it; :func:`load_weights` reads a local file with
``torch.load(..., weights_only=True)``.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from netfl.learning.datasets import Dataset, cache_dir
from netfl.learning.models import ModelSpec
from netfl.learning.train import CPU, TrainConfig, evaluate, train_local

__all__ = ["PretrainResult", "pretrain", "load_weights"]


@dataclass
class PretrainResult:
    """Pre-trained weights and what producing them cost."""

    state: dict[str, torch.Tensor]
    num_samples: int
    num_steps: int
    train_accuracy: float
    wall_s: float
    cached: bool
    key: str


def _key(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]


def pretrain(
    spec: ModelSpec,
    init_state: dict[str, torch.Tensor],
    data: Dataset,
    data_key: dict,
    config: TrainConfig,
    seed: int,
    device: torch.device = CPU,
    use_cache: bool = True,
) -> PretrainResult:
    """Train the whole model from ``init_state`` on ``data`` for ``config.epochs``.

    Cached under ``cache_dir()/pretrain/KEY.pt``, KEY a hash of the model, the
    data set's description ``data_key``, the SGD configuration, the seed and the
    initial weights; a cached result reports ``cached=True`` and the wall time
    of the original run.
    """
    init_digest = hashlib.sha256()
    for name in sorted(init_state):
        init_digest.update(name.encode())
        init_digest.update(init_state[name].detach().cpu().numpy().tobytes())
    key = _key(
        {
            "model": spec.name,
            "shape": list(data.input_shape),
            "classes": data.num_classes,
            "data": data_key,
            "config": vars(config),
            "seed": seed,
            "init": init_digest.hexdigest(),
            "torch": torch.__version__,
        }
    )
    folder = cache_dir()
    path = folder / "pretrain" / f"{key}.pt" if folder is not None and use_cache else None
    if path is not None and path.is_file():
        try:
            blob = torch.load(path, weights_only=True)
            return PretrainResult(
                blob["state"],
                int(blob["num_samples"]),
                int(blob["num_steps"]),
                float(blob["train_accuracy"]),
                float(blob["wall_s"]),
                True,
                key,
            )
        except Exception:  # noqa: BLE001 - empty or truncated cache file: train again, rewrite
            pass
    model = spec.build(data.input_shape, data.num_classes)
    t0 = time.perf_counter()
    res = train_local(
        model, init_state, data.train_x, data.train_y, config, seed, spec.loss_fn(), device
    )
    wall = time.perf_counter() - t0
    acc, _ = evaluate(model, res.state, data.train_x, data.train_y, spec.loss_fn(), 1000, device)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        torch.save(
            {
                "state": res.state,
                "num_samples": res.num_samples,
                "num_steps": res.num_steps,
                "train_accuracy": acc,
                "wall_s": wall,
            },
            tmp,
        )
        tmp.replace(path)
    return PretrainResult(res.state, res.num_samples, res.num_steps, acc, wall, False, key)


def load_weights(path: str | Path) -> dict[str, torch.Tensor]:
    """A state dict from a local file (tensors only: ``weights_only=True``)."""
    state = torch.load(Path(path), weights_only=True, map_location="cpu")
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError(f"{path} does not hold a state dict of tensors")
    return state
