"""User-facing errors.

Anything a user can get wrong (a scenario key, a profile name, a data root)
raises :class:`UserError`; the CLI prints its one-line message and exits with
code 2, without a traceback unless ``--debug`` is given.
"""

from __future__ import annotations


class UserError(Exception):
    """An error caused by user input; ``str(err)`` is one complete line."""


class RegistrationError(ValueError):
    """Something a plugin registers that cannot be (no algorithm, a bad name, a name
    taken): :mod:`netfl.loading.plugins` reports it as one line naming the plugin."""


def one_line(text: str, limit: int = 600) -> str:
    """``text`` as one printable line (control characters escaped), at most ``limit``
    characters."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    return text if len(text) <= limit else text[: limit - 1] + "…"


class SignalInterrupt(KeyboardInterrupt):
    """Ctrl-C or SIGTERM as the CLI's handlers raise it: an interrupt of the run, never
    a failure of user code (which may itself raise a bare ``KeyboardInterrupt``)."""


class UserCodeError(Exception):
    """A researcher's own code that netfl runs failed: a plugin's algorithm, model, data
    set, partition or profile, an entry point, a Flower app (:mod:`netfl.core.usercode`).

    ``str(err)`` is one line naming the code (plugin file, function, line), what netfl
    was doing (the round) and the exception; ``trace`` holds the traceback's text (the
    CLI shows it with ``--debug``). The CLI exits with code 1 (2 is for bad input); the
    finished rounds are written, marked ``failed``, and ``netfl run --resume`` continues
    once the code is fixed.
    """

    def __init__(self, message: str, trace: str = ""):
        super().__init__(message)
        self._trace = trace

    @property
    def trace(self) -> str:
        # (SimPy re-raises a failed process's exception as a copy made of its args,
        # the original as its __cause__)
        return self._trace or getattr(self.__cause__, "trace", "")


class ScenarioError(UserError):
    """A scenario file is invalid.

    Parameters
    ----------
    source : str
        The file (or ``"<string>"``) the scenario came from.
    problems : list of (key_path, message)
        Each problem names a dotted key path (``"devices.count"``) and says
        what is wrong and, where there is a fixed set, the valid choices.
    """

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.source = source
        self.problems = problems
        super().__init__(self.lines()[0] if problems else source)

    def lines(self) -> list[str]:
        """One line per problem: ``file: key.path: message`` (control characters of
        keys or messages escaped, so that a problem is always one line)."""
        return [
            f"{self.source}: {one_line(path)}: {one_line(msg)}"
            if path
            else f"{self.source}: {one_line(msg)}"
            for path, msg in self.problems
        ]

    def __str__(self) -> str:
        lines = self.lines()
        if len(lines) <= 1:
            return lines[0] if lines else self.source
        return "\n".join(lines)


class NumericalFault(UserError):
    """A device's update holds NaN/Inf values and ``training.on_nonfinite`` is ``abort``."""


class LinkBudgetError(UserError):
    """A transfer can never be delivered: its SNR gives no rate even at a fading peak."""


class WorkerLost(RuntimeError):
    """A parallel executor's worker process or Ray actor died while it held jobs (killed,
    e.g. by the out-of-memory killer, or crashed): neither the user's input nor a bug in
    the run. The CLI writes the finished rounds marked incomplete and prints one line."""


class AppError(UserCodeError):
    """A Flower ServerApp or ClientApp that netfl runs failed: ``str(err)`` is one line
    naming the app, the round and the device (a :class:`UserCodeError`)."""
