"""The algorithm protocol, the round summary and the name registry.

An algorithm is a class with a validated ``Config`` and a ``round`` process
(docs/architecture.md, "The algorithm protocol"), constructed with a
:class:`~netfl.algorithms.context.RoundContext` (all it may use of the
simulation). Inside ``round`` it yields
``world.radio.transfer(...)``, ``world.compute.run(...)`` and
``simpy.AllOf(...)`` and calls :mod:`netfl.learning` for the real math; the
runner owns evaluation, stop rules and recording.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import simpy
from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from channel_models.registry import lookup
from netfl.errors import RegistrationError

if TYPE_CHECKING:
    from netfl.algorithms.context import RoundContext

__all__ = [
    "Algorithm",
    "AlgorithmConfig",
    "RoundSummary",
    "ALGORITHMS",
    "register",
    "get_algorithm",
    "honours",
    "RegistrationError",
]


class AlgorithmConfig(BaseModel):
    """Base of algorithm configs: strict (unknown keys, NaN/inf, and booleans where
    numbers belong are errors)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool(cls, value: Any, info: ValidationInfo) -> Any:
        from netfl.scenario.schema import no_bool_for_numbers

        return no_bool_for_numbers(cls, value, info)


@dataclass
class RoundSummary:
    """What a round reports beyond the records the radio and compute append.

    ``extra`` holds algorithm-specific columns of ``rounds.csv`` (numbers only).
    """

    num_clients: int
    train_loss: float = float("nan")
    extra: dict[str, float] = field(default_factory=dict)


def honours(*options: str) -> Callable[[Callable], Callable]:
    """Declare the scenario options a ``round`` honours (a decorator of ``round``).

    The declaration belongs to the round that is written, so a subclass that inherits
    that round inherits it, and one that replaces ``round`` claims only what it declares
    again (none if undecorated) — e.g. ``@honours("deadline_s")`` on a round that calls
    FedAvg's (``super().round(r)``) and so keeps its deadline. The scenario checks read
    it with :meth:`Algorithm.round_honours`.

    Parameters
    ----------
    *options : str
        Option names, e.g. ``"deadline_s"`` (``algorithm.deadline_s``).
    """

    def declare(round_: Callable) -> Callable:
        round_.honours = frozenset(options)  # type: ignore[attr-defined]
        return round_

    return declare


class Algorithm(ABC):
    """Base class of FL algorithms (see :class:`netfl.algorithms.fedavg.FedAvg`)."""

    name: ClassVar[str]
    Config: ClassVar[type[AlgorithmConfig]]
    #: devices may run different architectures (``devices.models``, ``devices.groups[].model``)
    heterogeneous_models: ClassVar[bool] = False
    #: its rounds take part only devices available at their start (``devices.availability``)
    supports_availability: ClassVar[bool] = False

    def __init__(self, world: RoundContext, config: AlgorithmConfig):
        #: the simulation as this algorithm may use it (a :class:`~netfl.sim.world.World`)
        self.world = world
        self.config = config

    @property
    def finished(self) -> bool:
        """True once the algorithm has no further round to run (a Flower ServerApp that
        returned); the runner then stops before ``training.rounds``."""
        return False

    def close(self) -> None:  # noqa: B027 (a hook: most algorithms hold nothing)
        """Release what the algorithm holds beyond the run (a Flower ServerApp's thread)."""

    @classmethod
    def round_honours(cls) -> frozenset[str]:
        """The options this class's ``round`` declares it honours (:func:`honours`;
        none if its round declares nothing)."""
        return frozenset(getattr(cls.round, "honours", ()))

    @classmethod
    def resolve_options(cls, options: dict[str, Any], base_dir: Any) -> dict[str, Any]:
        """The scenario's ``algorithm`` options with file names made absolute against
        ``base_dir`` (the scenario file's folder), before its Config validates them."""
        return options

    @classmethod
    def directions(cls, options: dict[str, Any]) -> frozenset[str]:
        """The link directions a device must be served in to take part (a run stops with
        one line when no device is): both for FL; a download-only test needs the downlink."""
        return frozenset({"uplink", "downlink"})

    @classmethod
    def check_scenario(cls, scenario: Any) -> list[tuple[str, str]]:
        """Problems ``(key path, message)`` of a scenario this algorithm cannot run
        (beyond its Config), reported with the file name when the scenario is parsed."""
        return []

    @classmethod
    def unread_model_keys(cls, scenario: Any, keys: set[str], why: str) -> list[tuple[str, str]]:
        """Problems for the ``model`` keys among ``keys`` that a scenario sets and this
        algorithm never reads (``why``), so that they are not silently ignored."""
        return [(f"model.{key}", f"{cls.name} {why}") for key in scenario.model.given(keys)]

    def info(self) -> dict[str, Any]:
        """Facts of the run for its manifest (e.g. EcoFed's pre-training cost)."""
        return {}

    def evaluation_columns(self) -> dict[str, float]:
        """Further ``rounds.csv`` columns of the last :meth:`evaluate` (e.g. the mean
        accuracy of the device models); NaN on rounds without evaluation."""
        return {}

    def tables(self) -> dict[str, Any]:
        """Further tables of the run (``pandas.DataFrame`` by name) written as parquet."""
        return {}

    @abstractmethod
    def round(self, r: int) -> Generator[simpy.Event, Any, RoundSummary]:
        """The SimPy process of round ``r`` (0-based)."""

    @abstractmethod
    def evaluate(self) -> tuple[float, float]:
        """Accuracy and loss of the current model(s) on the server's test set."""

    @abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume at a round boundary."""

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""


ALGORITHMS: dict[str, type[Algorithm]] = {}


#: an algorithm's name: what a scenario's ``algorithm.name`` says
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def register(cls: type[Algorithm]) -> type[Algorithm]:
    """Class decorator adding an algorithm to the registry under ``cls.name``; a
    plugin's algorithms are registered the same way (:mod:`netfl.loading.plugins`).
    :class:`RegistrationError` says what is wrong with the class."""
    if not (isinstance(cls, type) and issubclass(cls, Algorithm)):
        raise RegistrationError(
            f"{getattr(cls, '__name__', cls)!r} is no netfl algorithm (subclass "
            "netfl.Algorithm, or netfl.FedAvg to change one step of it)"
        )
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not _NAME.match(name):
        raise RegistrationError(
            f"{cls.__name__} needs a class attribute name: lower-case letters, digits and _ "
            f"(got {name!r})"
        )
    config = getattr(cls, "Config", None)
    if not (isinstance(config, type) and issubclass(config, AlgorithmConfig)):
        raise RegistrationError(
            f"{cls.__name__}.Config must subclass netfl.algorithms.AlgorithmConfig "
            f"(or an algorithm's Config, e.g. FedAvgConfig)"
        )
    if name in ALGORITHMS:
        raise RegistrationError(f"algorithm {name!r} registered twice")
    ALGORITHMS[name] = cls
    return cls


def get_algorithm(name: str) -> type[Algorithm]:
    """Look an algorithm up by name; ``KeyError`` lists the valid names."""
    return lookup(ALGORITHMS, name, "algorithm")
