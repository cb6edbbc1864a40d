"""Checkpoints at round boundaries, and resuming from them.

A checkpoint (``RUN_DIR/.checkpoint/state.pt``, written atomically: temp file +
rename) holds what the next round needs that cannot be recomputed cheaply: the
algorithm's ``state_dict`` (models, soft targets, generator, replay buffer, …)
and the result rows so far (accuracies included). What can be recomputed is:
the simulated world — clock, radio and CUE state, fading, energy meters,
transfer and compute records — depends only on the scenario and its seeded
streams, never on learned values, so resuming *replays* the finished rounds
without any torch work (timing only, the fast path) and then loads the
algorithm state. The result equals an uninterrupted run's: byte-identical
tables in timing mode, identical accuracies in learning mode.

Loading uses ``torch.load(weights_only=True)``: tensors and plain containers,
never arbitrary objects (numpy values are stored as tensors with a marker).
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from netfl.errors import UserError

__all__ = [
    "CHECKPOINT_DIR",
    "save_checkpoint",
    "encode_checkpoint",
    "write_checkpoint",
    "load_checkpoint",
    "checkpoint_path",
    "scenario_fingerprint",
    "signals_deferred",
]

CHECKPOINT_DIR = ".checkpoint"
_ND = "__ndarray__"


def checkpoint_path(run_dir: str | Path) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR / "state.pt"


def _safe(obj: Any) -> Any:
    """Plain containers, tensors and Python scalars only (``weights_only`` loadable)."""
    if isinstance(obj, np.ndarray):
        import torch

        return {_ND: torch.from_numpy(np.ascontiguousarray(obj))}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        return {k: _safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_safe(v) for v in obj)
    return obj


def _restore(obj: Any) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {_ND}:
            return obj[_ND].numpy()
        return {k: _restore(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_restore(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_restore(v) for v in obj)
    return obj


@contextmanager
def signals_deferred():
    """Hold Ctrl-C/SIGTERM until the block ends (delivered right after): a signal in the
    middle of ``torch.save`` would break its zip writer instead of stopping the run.

    The Python handlers are swapped for ones that only note the signal. Masking it
    would not do: a mask holds a signal for the calling thread only, the kernel may
    hand it to another (torch's worker threads), and Python still runs the handler in
    the main thread at its next bytecode — inside ``torch.save``.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # (handlers can only be set from the main thread; none run elsewhere)
        return
    seen: list[int] = []
    old = {
        s: signal.signal(s, lambda signum, _frame: seen.append(signum))
        for s in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
        for s in dict.fromkeys(seen):
            signal.raise_signal(s)  # now, to the handlers the run had


def save_checkpoint(run_dir: str | Path, state: dict[str, Any]) -> Path:
    """Write ``state`` atomically to the run directory's checkpoint (signals deferred)."""
    with signals_deferred():
        return _save(run_dir, state)


def encode_checkpoint(state: dict[str, Any]) -> bytes:
    """``state`` as the bytes of a checkpoint file (a copy: later changes to the
    algorithm's tensors do not reach it); :func:`write_checkpoint` writes them."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(_safe(state), buffer)
    return buffer.getvalue()


def write_checkpoint(run_dir: str | Path, data: bytes) -> Path:
    """Write checkpoint bytes (:func:`encode_checkpoint`) atomically (signals deferred)."""
    with signals_deferred():
        return _write(run_dir, data)


def _save(run_dir: str | Path, state: dict[str, Any]) -> Path:
    return _write(run_dir, encode_checkpoint(state))


def _write(run_dir: str | Path, data: bytes) -> Path:
    path = checkpoint_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".state.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def scenario_fingerprint(scenario: Any) -> str:
    """SHA-256 of the resolved scenario (every default filled in, keys sorted): a
    checkpoint records it, and resuming refuses a checkpoint of another scenario."""
    import hashlib
    import json

    from netfl.loading.scenarios import resolved

    text = json.dumps(resolved(scenario), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


#: what a checkpoint must hold to be resumed from
_KEYS = {"next_round": int, "rows": list, "algorithm": dict}


def load_checkpoint(run_dir: str | Path, fingerprint: str | None = None) -> dict[str, Any]:
    """The last checkpoint of ``run_dir`` (``FileNotFoundError`` if none); a file that
    cannot be read back (damaged after it was written) is a one-line ``UserError``. With
    ``fingerprint`` (a resume: :func:`scenario_fingerprint` of the run's scenario) so is
    one that lacks what a resume needs, or that was written for another scenario."""
    path = checkpoint_path(run_dir)
    if not path.is_file():
        raise FileNotFoundError(path)
    import torch

    again = f"run the scenario again ({path.parent / 'scenario.yaml'} holds it)"
    try:
        state = _restore(torch.load(path, weights_only=True))
    except Exception as err:  # noqa: BLE001 - whatever a damaged file makes torch raise
        raise UserError(
            f"--resume: the checkpoint {path} cannot be read ({type(err).__name__}): it was "
            f"damaged after it was written; {again}"
        ) from None
    if fingerprint is None:
        return state
    bad = (
        ["a mapping"]
        if not isinstance(state, dict)
        else [k for k, kind in _KEYS.items() if not isinstance(state.get(k), kind)]
    )
    if bad or state["next_round"] < 0:
        raise UserError(
            f"--resume: the checkpoint {path} is damaged (no valid "
            f"{', '.join(bad) or 'next_round'}); {again}"
        )
    theirs = state.get("scenario_sha256")
    if theirs is not None and theirs != fingerprint:
        raise UserError(
            f"--resume: the checkpoint {path} belongs to another scenario than "
            f"{path.parent / 'scenario.yaml'} (another algorithm, seed or setting); "
            f"{again}, or resume the run that wrote it"
        )
    return state
