"""Where netfl calls a researcher's own code, and what it says when that code fails.

netfl runs code it did not write: plugin files and modules (algorithms, models, data
sets, partitions, profiles), entry points and Flower apps. The plugin loader names
each such file or folder here (:func:`add_user_code`); a failure is then told apart
from a bug of netfl's by the frames it passed through:

- :func:`calling` wraps a call that is known to be user code (a plugin's model
  builder, data-set loader, partition): whatever it raises — ``SystemExit``,
  ``KeyboardInterrupt`` and ``GeneratorExit`` included — becomes one
  :class:`~netfl.errors.UserCodeError`;
- :func:`attributed` wraps a call that may run user code (an algorithm's round, which
  may be a plugin's or may call a plugin's model): an exception whose traceback passes
  through a user-code file becomes a :class:`~netfl.errors.UserCodeError` naming the
  deepest such frame (file, function, line); any other goes on as it was (a netfl bug,
  or a :class:`~netfl.errors.UserError` about the input).

A Ctrl-C or SIGTERM is never a failure: the CLI's handlers raise
:class:`~netfl.errors.SignalInterrupt` (a ``KeyboardInterrupt``), which passes. A bare
``KeyboardInterrupt`` raised by user code under those handlers is a failure; without
them (netfl used as a library, Python's own SIGINT handler) it is taken for a Ctrl-C.

What cannot be caught in the process is documented, not handled: ``os._exit`` in a
plain ``netfl run`` ends the process at once (a sweep's worker that does so is
reported failed by the sweep, which finds no complete manifest).
"""

from __future__ import annotations

import functools
import inspect
import signal
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from netfl.errors import SignalInterrupt, UserCodeError, UserError, one_line

__all__ = [
    "add_user_code",
    "user_code_labels",
    "is_signal",
    "calling",
    "attributed",
    "failure",
    "user_code_error",
    "loading",
    "current_label",
    "UserCallable",
]

#: the folder of netfl's own packages (never user code)
_NETFL_ROOT = Path(__file__).resolve().parents[2]
_OWN_PACKAGES = ("netfl", "channel_models")
#: resolved file or folder → how errors name it ("plugin my_alg.py")
_USER_CODE: dict[str, str] = {}


def add_user_code(path: str | Path, label: str) -> None:
    """Frames in ``path`` (a ``.py`` file, or a folder: a package, a Flower app's
    directory) are user code, named ``label`` in errors. A folder that holds netfl's
    own code (an app beside a checkout) is not: only its other files would be, and
    naming them one by one is not worth it."""
    where = Path(path).resolve()
    if where.is_dir() and _NETFL_ROOT.is_relative_to(where):
        return
    if any(where.is_relative_to(_NETFL_ROOT / own) for own in _OWN_PACKAGES):
        return  # (netfl's own code is never user code)
    _USER_CODE[str(where)] = label


def user_code_labels() -> dict[str, str]:
    """The user-code files and folders known in this process, and their labels."""
    return dict(_USER_CODE)


def is_signal(err: BaseException) -> bool:
    """Whether ``err`` stands for a Ctrl-C or SIGTERM rather than user code's raise."""
    if isinstance(err, SignalInterrupt):
        return True
    if not isinstance(err, KeyboardInterrupt):
        return False
    # a bare KeyboardInterrupt is Ctrl-C's only under Python's own SIGINT handler (netfl
    # used as a library); under the CLI's (which raises SignalInterrupt) or with SIGINT
    # ignored (a pool worker, nohup) it can only be user code's
    return signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _label_of(filename: str) -> str | None:
    try:
        path = Path(filename).resolve()
    except (OSError, RuntimeError):
        return None
    text = str(path)
    for where, label in _USER_CODE.items():
        if text == where or text.startswith(where.rstrip("/") + "/"):
            return label
    return None


def _chain(err: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or err.__context__  # type: ignore[assignment]


def _user_frame(err: BaseException) -> tuple[str, str, str, int] | None:
    """The deepest frame of user code in ``err``'s traceback (or of an exception it was
    raised from): ``(label, file name, function, line)``."""
    for exc in _chain(err):
        tb: TracebackType | None = exc.__traceback__
        found = None
        for frame, lineno in traceback.walk_tb(tb):
            label = _label_of(frame.f_code.co_filename)
            if label is not None:
                found = (label, Path(frame.f_code.co_filename).name, frame.f_code.co_name, lineno)
        if found is not None:
            return found
    return None


def _describe(err: BaseException) -> str:
    text = one_line(str(err).strip().splitlines()[0] if str(err).strip() else "", 300)
    if isinstance(err, SystemExit):
        text = f"exit code {err.code!r}" if err.code is not None else "exit code None"
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def failure(err: BaseException, what: str, label: str | None = None) -> UserCodeError:
    """``err`` raised by user code, as one line: ``label: what (file:line in function)
    raised Type: message``, with the traceback's text kept for ``--debug``."""
    where = _user_frame(err)
    at = f" ({where[1]}:{where[3]} in {where[2]})" if where else ""
    who = label or (where[0] if where else "user code")
    trace = "".join(traceback.format_exception(err))
    return UserCodeError(f"{who}: {what}{at} raised {_describe(err)}", trace)


@contextmanager
def calling(label: str, what: str) -> Iterator[None]:
    """Call user code known as ``label`` (e.g. ``"plugin my_data.py"``) doing ``what``
    (``"data set 'mine' loader"``): anything it raises but a signal's interrupt, a
    :class:`~netfl.errors.UserError` or a :class:`~netfl.errors.UserCodeError` becomes
    one :class:`~netfl.errors.UserCodeError`."""
    try:
        yield
    except (UserError, UserCodeError):
        raise
    except BaseException as err:  # noqa: BLE001 - SystemExit & co. from user code too
        if is_signal(err):
            raise
        raise failure(err, what, label) from err


def user_code_error(obj: Any, message: str) -> Exception:
    """What to raise when ``obj`` (a class, a function) answered netfl wrongly: a
    :class:`~netfl.errors.UserCodeError` ``LABEL: message`` when it is user code, else
    an ``AssertionError`` (a netfl bug)."""
    try:
        label = _label_of(inspect.getfile(obj))
    except (TypeError, OSError):
        label = None
    if label is None:
        return AssertionError(message)
    return UserCodeError(f"{label}: {message}")


@contextmanager
def attributed(what: str) -> Iterator[None]:
    """Run code that may call user code (``what``: ``"algorithm 'mine' round 2"``): an
    exception that passed through a user-code file becomes a
    :class:`~netfl.errors.UserCodeError` naming it; others go on unchanged."""
    try:
        yield
    except (UserError, UserCodeError):
        raise
    except BaseException as err:  # noqa: BLE001 - SystemExit & co. from user code too
        if is_signal(err) or _user_frame(err) is None:
            raise
        raise failure(err, what) from err


#: the plugin being imported now (what its registrations are labelled with)
_LOADING: list[str] = []


@contextmanager
def loading(label: str) -> Iterator[None]:
    """A plugin known as ``label`` is being imported: what it registers is its code."""
    _LOADING.append(label)
    try:
        yield
    finally:
        _LOADING.pop()


def current_label(default: str) -> str:
    """The label of the plugin being imported, else ``default`` (a registration made
    by a script that uses netfl as a library)."""
    return _LOADING[-1] if _LOADING else default


class UserCallable:
    """A function a plugin registered (a model builder, a data-set loader, a partition),
    called under :func:`calling`; ``check(result, *args)`` returns what is wrong with
    its result ("" if nothing), said as a :class:`~netfl.errors.UserCodeError`.

    Picklable by reference to the wrapped function and the check (module-level
    functions), so pools and Ray workers call it the same way.
    """

    def __init__(self, fn: Callable[..., Any], label: str, what: str, check=None):
        functools.update_wrapper(self, fn)  # (its name and docstring: netfl list shows it)
        self.label, self.what, self.check = label, what, check

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with calling(self.label, self.what):
            out = self.__wrapped__(*args, **kwargs)
        problem = self.check(out, *args, **kwargs) if self.check is not None else ""
        if problem:
            raise UserCodeError(f"{self.label}: {self.what} returned {problem}")
        return out

    def __repr__(self) -> str:
        return f"UserCallable({self.__wrapped__!r}, {self.label!r})"
