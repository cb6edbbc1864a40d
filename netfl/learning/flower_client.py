"""A Flower ``ClientApp``'s handler as a device's job (the executor seam).

The bridge (:mod:`netfl.algorithms.flower_bridge`) hands each message that reaches a device to
the executor as a :class:`~netfl.learning.tasks.FlowerClientTask`; this runner imports
the app (Flower's own ``load_app``, with the app's folder on ``sys.path``), calls it with
the message and the node's ``Context``, and returns the reply, the context as the
handler left it and the FLOPs the call performed, counted with the formulas of
``torch.utils.flop_counter`` (matrix products and convolutions, forward and backward:
those netfl counts for its own models). The device's
compute step is charged those FLOPs on its compute profile.

Seeds: the handler runs with torch's, NumPy's and Python's global generators seeded
from the job's seed, and the generators are put back afterwards, so a ServerApp's own
draws (Flower's strategies sample nodes with ``random.sample``) never depend on what
the clients drew. While the handler runs, :func:`netfl.flower.node_data` hands it the
device's partition of the scenario's data set.
"""

from __future__ import annotations

import importlib
import random
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from netfl.core.usercode import failure, is_signal
from netfl.errors import UserCodeError

if TYPE_CHECKING:
    from netfl.learning.tasks import FlowerClientTask

__all__ = ["FlowerClientResult", "run_flower_client", "active_node", "load_flower_app"]


@dataclass
class FlowerClientResult:
    """What a ``ClientApp`` call gave: its reply and the node's context afterwards,
    the FLOPs it performed, or (``error``) the first line of what it raised and
    (``trace``) the traceback's text."""

    reply: Any
    context: Any
    flops: float
    error: str | None = None
    trace: str = ""


class WorkerData(Protocol):
    """What a handler's device data is cut from: the worker's training and test tensors
    (its :class:`~netfl.learning.executor.LearningContext`, which runs this module's
    jobs)."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor | None
    test_y: torch.Tensor | None


@dataclass(frozen=True)
class ActiveNode:
    """The device whose handler is running: its training rows and its test rows."""

    context: WorkerData
    indices: np.ndarray
    test_rows: tuple[int, int]


_ACTIVE: list[ActiveNode] = []
_APPS: dict[tuple[str, str], Any] = {}


def active_node() -> ActiveNode | None:
    """The device whose ``ClientApp`` handler runs now in this process (or None)."""
    return _ACTIVE[-1] if _ACTIVE else None


def load_flower_app(reference: str, app_dir: str, kind: str) -> Any:
    """The ``ServerApp``/``ClientApp`` (``kind``) that ``module:attribute`` names, imported
    with ``app_dir`` first on ``sys.path`` (as ``flwr run`` does with an app's folder);
    ``ValueError`` says what is wrong in one line (not found, not an app), and
    :class:`~netfl.errors.UserCodeError` that the app's module failed at its import
    (raised, ``sys.exit``)."""
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp
    from flwr.supercore.object_ref import load_app

    expected = {"server_app": ServerApp, "client_app": ClientApp}[kind]
    key = (reference, app_dir)
    where = Path(app_dir).resolve()
    try:
        if key in _APPS:
            app, modules = _APPS[key]
            _install(modules)  # (another app folder's modules of those names may be loaded)
        else:
            _unload_other_apps(where)
            app = load_app(reference, ValueError, app_dir)
            modules = _app_modules(where)
    except ModuleNotFoundError as err:
        raise ValueError(
            f"{reference!r}: no module {err.name!r} (looked in {app_dir} too)"
        ) from None
    except ValueError as err:
        raise ValueError(f"{reference!r}: {str(err).strip().splitlines()[0]}") from None
    except BaseException as err:  # raised while importing the app's module (sys.exit too)
        if is_signal(err):
            raise
        # (the app's own code failed: exit 1, not the input's exit 2)
        raise failure(
            err, f"algorithm.{kind} {reference!r} import", f"Flower app {app_dir}"
        ) from err
    if not isinstance(app, expected):
        raise ValueError(f"{reference!r} is a {type(app).__name__}, not a flwr {expected.__name__}")
    _APPS[key] = (app, modules)
    return app


#: the folders apps were imported from in this process
_APP_DIRS: set[Path] = set()


def _package_modules(top: str) -> dict[str, Any]:
    """The imported modules of package (or module) ``top``: its own and its children."""
    return {n: m for n, m in sys.modules.items() if n == top or n.startswith(top + ".")}


def _names_in(where: Path) -> list[str]:
    """The top-level modules and packages a folder holds (namespace packages too)."""
    if not where.is_dir():
        return []
    return [
        p.stem if p.suffix == ".py" else p.name
        for p in where.iterdir()
        if (p.suffix == ".py" and p.stem.isidentifier()) or (p.is_dir() and p.name.isidentifier())
    ]


def _origins(module: Any) -> set[Path]:
    """The folders a top-level module (or package: each of a namespace package's
    portions) was imported from."""
    paths = list(getattr(module, "__path__", None) or [])
    if paths:
        return {Path(p).resolve().parent for p in paths}
    file = getattr(module, "__file__", None)
    return {Path(file).resolve().parent} if file else set()


def _app_modules(where: Path) -> dict[str, Any]:
    """The loaded modules (and their children) imported from app folder ``where``."""
    out: dict[str, Any] = {}
    for name in _names_in(where):
        loaded = sys.modules.get(name)
        if loaded is not None and where in _origins(loaded):
            out.update(_package_modules(name))
    return out


def _install(modules: dict[str, Any]) -> None:
    """Make ``modules`` (an app folder's) the ones importing their names gives."""
    tops = {name.split(".")[0] for name in modules}
    for top in tops:
        current = _package_modules(top)
        if current != {n: m for n, m in modules.items() if n.split(".")[0] == top}:
            for name in current:
                del sys.modules[name]
    sys.modules.update(modules)


def _unload_other_apps(where: Path) -> None:
    """Before an app is imported from ``where``: a module of a name ``where`` holds that
    was loaded from another app's folder (two versions of one app, a sweep over
    ``app_dir``; helper modules beside it too) is unloaded, and ``where`` put first on
    ``sys.path``, so the import reads this folder's code (Python would reuse the
    other's). Modules from anywhere else (netfl, installed packages) stay."""
    for name in _names_in(where):
        loaded = sys.modules.get(name)
        if loaded is not None and (_origins(loaded) - {where}) & _APP_DIRS:
            for module in _package_modules(name):
                del sys.modules[module]
    importlib.invalidate_caches()
    if str(where) in sys.path:
        sys.path.remove(str(where))
    sys.path.insert(0, str(where))
    _APP_DIRS.add(where)


class FlopCount(TorchDispatchMode):
    """Sums the FLOPs of the torch operations run inside it with torch's own formulas
    (``torch.utils.flop_counter.flop_registry``: matrix products, convolutions, attention,
    forward and backward), as ``FlopCounterMode`` does, without its per-module breakdown
    (which costs a module hook per call: 2.1× a 2NN's training time against 1.4× here)."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        formula = flop_registry.get(func._overloadpacket)
        if formula is not None:
            self.total += formula(*args, **kwargs, out_val=out)
        return out


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run a block with torch's, NumPy's and Python's global generators seeded from
    ``seed``; put them back as they were afterwards."""
    saved = (torch.get_rng_state(), np.random.get_state(), random.getstate())
    torch.manual_seed(seed)
    np.random.seed(seed % (1 << 32))
    random.seed(seed)
    try:
        yield
    finally:
        torch.set_rng_state(saved[0])
        np.random.set_state(saved[1])
        random.setstate(saved[2])


def run_flower_client(context: WorkerData, task: FlowerClientTask) -> FlowerClientResult:
    """Call the ``ClientApp`` with the task's message and context (see the module
    docstring); an exception inside it comes back as ``error``, not raised, so the
    simulation can name the device and round."""
    try:
        app = load_flower_app(task.client_app, task.app_dir, "client_app")
    except (ValueError, UserCodeError) as err:
        return FlowerClientResult(None, task.context, 0.0, f"client_app {err}")
    _ACTIVE.append(ActiveNode(context, np.asarray(task.indices), task.test_rows))
    try:
        counter = FlopCount()
        with seeded(task.seed), counter if task.count_flops else nullcontext():
            reply = app(task.message, task.context)
    except BaseException as err:  # (sys.exit, KeyboardInterrupt from the app: failures)
        if is_signal(err):
            raise
        first = (str(err).strip().splitlines() or [""])[0]
        if isinstance(err, SystemExit):
            first = f"exit code {err.code!r}"
        return FlowerClientResult(
            None, task.context, 0.0, f"{type(err).__name__}: {first}", traceback.format_exc()
        )
    finally:
        _ACTIVE.pop()
    return FlowerClientResult(reply, task.context, float(counter.total))
