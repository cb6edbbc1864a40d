"""Plugins: a researcher's own algorithms, registered before a scenario is validated.

Two ways in, both without editing netfl:

- the scenario key ``plugins: [...]``: module names (importable, e.g. an installed
  package's) or ``.py`` files, relative to the scenario file's folder. The run's
  resolved ``scenario.yaml`` names the files by absolute path, so a resume, a sweep
  worker (a forked pool's or a Ray task's, which imports them again) and a re-run of
  the run directory load the same code;
- the entry-point group ``netfl.algorithms`` of an installed distribution
  (``[project.entry-points."netfl.algorithms"] fedprox = "my_pkg:FedProx"``): loaded
  when a scenario names that algorithm, and by ``netfl list``. Light verbs stay light:
  nothing is imported unless named.

A plugin module registers its algorithms with :func:`netfl.register` (an entry point's
class is registered for it), and may register models, data sets, partition schemes and
compute/link profiles (:mod:`netfl.scenario.registries`). Every problem is one line naming
``plugins[i]`` (or the entry point): a module that is not found, an exception raised
inside the plugin (its first line), a name that clashes with a built-in or another
plugin, a class that is no :class:`~netfl.algorithms.Algorithm`; what a failed plugin
registered is taken back out. :func:`origin` says where each entry came from.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from netfl.algorithms import ALGORITHMS
from netfl.algorithms.algorithm import register
from netfl.core.usercode import add_user_code, failure, is_signal, loading
from netfl.errors import RegistrationError
from netfl.scenario.registries import forget
from netfl.scenario.registries import registries as _other_registries
from netfl.scenario.strict import resolve_plugin_spec

__all__ = [
    "ENTRY_POINT_GROUP",
    "MAX_PLUGINS",
    "PluginError",
    "PluginCodeError",
    "load_plugins",
    "load_entry_point",
    "load_all_entry_points",
    "load_plugin_entry_points",
    "origin",
]

ENTRY_POINT_GROUP = "netfl.algorithms"
#: installed modules that register what a scenario names besides algorithms (models,
#: data sets, schedulers, path-loss and fading laws, mobility and availability models):
#: ``[project.entry-points."netfl.plugins"] NAME = "my_pkg.module"``, imported once per
#: process before a scenario is validated
PLUGIN_GROUP = "netfl.plugins"
MAX_PLUGINS = 32

#: where each entry that is no built-in came from: (kind, name) → "plugin SPEC" / "entry point …"
_ORIGIN: dict[tuple[str, str], str] = {}
#: plugins loaded in this process: resolved spec → the algorithm names it registered
_LOADED: dict[str, list[str]] = {}


class PluginError(ValueError):
    """A plugin that cannot be loaded; ``key`` is the scenario key it came from."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key

    def __reduce__(self):  # (pickled back from a pool's or Ray's worker)
        return (type(self), (self.key, str(self)))


class PluginCodeError(PluginError):
    """A plugin whose own code failed while it was imported (it raised, or called
    ``sys.exit``): user code's failure, not bad input; ``trace`` is its traceback."""

    def __init__(self, key: str, message: str, trace: str = ""):
        super().__init__(key, message)
        self.trace = trace

    def __reduce__(self):
        return (type(self), (self.key, str(self), self.trace))


def registries() -> dict[str, dict[str, Any]]:
    """Every registry a plugin may add to, by kind: the algorithms' and the others
    (:func:`netfl.scenario.registries.registries`)."""
    return {"algorithm": ALGORITHMS, **_other_registries()}


def _add_package(module_name: str, label: str) -> None:
    """Frames of ``module_name``'s top-level package (its file, or its folder) are user
    code named ``label`` — found before it is imported, so that an error at its import
    names its line."""
    try:
        found = importlib.util.find_spec(module_name.split(".")[0])
    except (ImportError, ValueError):
        return
    if found is not None and found.origin and found.has_location:
        path = Path(found.origin)
        add_user_code(path.parent if path.name == "__init__.py" else path, label)


def _claim_code(entry: tuple[str, str], label: str) -> None:
    """The file that defines what a plugin registered (a helper module beside it, say)
    is user code too."""
    import inspect

    kind, name = entry
    value = registries()[kind].get(name)
    value = getattr(value, "__wrapped__", value)
    if not callable(value):  # (a profile: data, no code)
        return
    try:
        where = inspect.getfile(value)
    except (TypeError, OSError):
        return
    add_user_code(where, label)


def _code_error(key: str, spec: str, err: BaseException) -> PluginCodeError:
    found = failure(err, "import", f"plugin {spec}")
    return PluginCodeError(key, str(found), found.trace)


def origin(name: str, kind: str = "algorithm") -> str:
    """Where the ``kind`` entry ``name`` came from: ``built-in``, ``plugin SPEC`` or
    ``entry point NAME = VALUE (DIST)``."""
    return _ORIGIN.get((kind, name), "built-in")


def _snapshot() -> dict[str, set[str]]:
    return {kind: set(registry) for kind, registry in registries().items()}


def _added(before: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The entries registered since ``before``: ``(kind, name)``."""
    return [
        (kind, name)
        for kind, registry in registries().items()
        for name in sorted(set(registry) - before[kind])
    ]


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:200]}" if text else type(err).__name__


def _import(spec: str) -> Any:
    """Import a module name or a ``.py`` file (under a name derived from its path, kept
    in ``sys.modules`` so that its classes pickle by reference in this process)."""
    if not spec.endswith(".py"):
        _add_package(spec, f"plugin {spec}")
        return importlib.import_module(spec)
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"no plugin file {spec}")
    add_user_code(path, f"plugin {spec}")
    name = f"netfl_plugin_{path.stem}_{hashlib.sha256(spec.encode()).hexdigest()[:8]}"
    if name in sys.modules:
        return sys.modules[name]
    if str(path.parent) not in sys.path:  # (a plugin may import a helper file beside it)
        sys.path.append(str(path.parent))
    module_spec = importlib.util.spec_from_file_location(name, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _forget(before: dict[str, set[str]]) -> None:
    """Take what a failed plugin registered out of the registries (a fixed file loads
    again in the same process)."""
    for kind, name in _added(before):
        if kind == "algorithm":
            ALGORITHMS.pop(name, None)
        else:
            forget(kind, name)
        _ORIGIN.pop((kind, name), None)


def _load_one(spec: str, key: str) -> list[str]:
    if spec in _LOADED:
        return _LOADED[spec]
    before = _snapshot()
    try:
        try:
            with loading(f"plugin {spec}"):
                _import(spec)
        except BaseException:
            _forget(before)
            raise
    except RegistrationError as err:
        raise PluginError(key, _clash(str(err), spec)) from None
    except ModuleNotFoundError as err:
        if err.name and spec.split(".")[0] == err.name.split(".")[0]:
            raise PluginError(
                key,
                f"no module named {spec!r} (a module on the Python path, or a .py file "
                "relative to the scenario file)",
            ) from None
        raise PluginError(key, f"{spec} raised {_first_line(err)}") from None
    except FileNotFoundError as err:
        raise PluginError(key, str(err)) from None
    except BaseException as err:  # noqa: BLE001 - a user's plugin failed (sys.exit too)
        if is_signal(err):
            raise
        raise _code_error(key, spec, err) from None
    added = _added(before)
    for entry in added:
        _ORIGIN[entry] = f"plugin {spec}"
        _claim_code(entry, f"plugin {spec}")
    _LOADED[spec] = [name for kind, name in added if kind == "algorithm"]
    return _LOADED[spec]


def _clash(message: str, where: str) -> str:
    if "registered twice" in message:
        kind, name = message.split(" '")[0], message.split("'")[1]
        whose = origin(name, kind)
        return (
            f"{where}: {kind} {name!r} is already "
            f"{whose if whose != 'built-in' else 'a built-in'}; give yours another name"
        )
    return f"{where}: {message}"


def load_plugins(specs: list[Any], base_dir: Path | None = None) -> list[str]:
    """Import the plugins of a scenario's ``plugins`` list (once per process); returns
    the resolved specs. :class:`PluginError` names ``plugins[i]``."""
    if not isinstance(specs, list):
        raise PluginError("plugins", "expected a list of module names or .py files")
    if len(specs) > MAX_PLUGINS:
        raise PluginError("plugins", f"{len(specs)} plugins; at most {MAX_PLUGINS}")
    out = []
    for i, spec in enumerate(specs):
        key = f"plugins[{i}]"
        if not isinstance(spec, str) or not spec.strip() or len(spec) > 500:
            raise PluginError(key, "expected a module name or a .py file")
        resolved = resolve_plugin_spec(spec.strip(), base_dir)
        _load_one(resolved, key)
        out.append(resolved)
    return out


def _entry_points() -> list[Any]:
    from importlib.metadata import entry_points

    return list(entry_points(group=ENTRY_POINT_GROUP))


def _dist_name(ep: Any) -> str | None:
    try:
        return ep.dist.name if ep.dist is not None else None
    except Exception:  # noqa: BLE001 - metadata without a Name
        return None


def _load_entry(ep: Any) -> None:
    dist = _dist_name(ep)
    where = f"entry point {ep.name} = {ep.value}" + (f" ({dist})" if dist else "")
    snapshot = _snapshot()
    try:
        _register_entry(ep, where, snapshot["algorithm"])
    except PluginError:
        _forget(snapshot)  # (whatever it registered before failing goes)
        raise
    for entry in [*_added(snapshot), ("algorithm", ep.name)]:
        _ORIGIN.setdefault(entry, where)


def _register_entry(ep: Any, where: str, before: set[str]) -> None:
    key = "algorithm.name"
    _add_package(ep.value.split(":")[0], where)
    try:
        with loading(where):
            cls = ep.load()
    except RegistrationError as err:
        raise PluginError(key, _clash(str(err), where)) from None
    except BaseException as err:  # noqa: BLE001 - a user's plugin failed (sys.exit too)
        if is_signal(err):
            raise
        raise _code_error(key, where, err) from None
    if ALGORITHMS.get(ep.name) is cls and ep.name in before:
        return  # the same class, loaded before (as a plugin file or this entry point)
    if ep.name in before:
        raise PluginError(key, _clash(f"algorithm '{ep.name}' registered twice", where))
    if ep.name not in ALGORITHMS:
        if getattr(cls, "name", None) != ep.name:
            raise PluginError(
                key, f"{where}: the class's name is {getattr(cls, 'name', None)!r}, not {ep.name!r}"
            )
        try:
            register(cls)
        except RegistrationError as err:
            raise PluginError(key, _clash(str(err), where)) from None


def load_entry_point(name: str) -> bool:
    """Load the ``netfl.algorithms`` entry point called ``name`` if one is installed
    (whether it was)."""
    for ep in _entry_points():
        if ep.name == name:
            _load_entry(ep)
            return True
    return False


def load_all_entry_points() -> list[str]:
    """Load every installed ``netfl.algorithms`` and ``netfl.plugins`` entry point; one
    line per failure."""
    problems = []
    for ep in _entry_points():
        try:
            _load_entry(ep)
        except PluginError as err:
            problems.append(f"{err.key}: {err}")
    try:
        load_plugin_entry_points()
    except PluginError as err:
        problems.append(f"{err.key}: {err}")
    return problems


#: ``netfl.plugins`` entry points imported in this process, by ``NAME = VALUE``
_PLUGIN_ENTRIES: set[str] = set()


def load_plugin_entry_points() -> None:
    """Import every installed ``netfl.plugins`` entry point's module once per process
    (what it registers is marked with its origin); :class:`PluginError` (or
    :class:`PluginCodeError`) names the entry point that failed."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=PLUGIN_GROUP):
        key = f"{ep.name} = {ep.value}"
        if key in _PLUGIN_ENTRIES:
            continue
        dist = _dist_name(ep)
        where = f"entry point {key}" + (f" ({dist})" if dist else "")
        _add_package(ep.value.split(":")[0], where)
        snapshot = _snapshot()
        try:
            with loading(where):
                ep.load()
        except RegistrationError as err:
            _forget(snapshot)
            raise PluginError(f"entry point {ep.name}", _clash(str(err), where)) from None
        except BaseException as err:  # noqa: BLE001 - a user's plugin failed (sys.exit too)
            if is_signal(err):
                raise
            _forget(snapshot)
            raise _code_error(f"entry point {ep.name}", where, err) from None
        _PLUGIN_ENTRIES.add(key)
        for entry in _added(snapshot):
            _ORIGIN.setdefault(entry, where)
