"""The round context: exactly what an algorithm may use of the simulation.

An algorithm is constructed with a :class:`RoundContext` and reaches the simulation
only through it (docs/architecture.md, "The algorithm protocol"). :class:`netfl.sim.world.World`
implements it; a test checks that every attribute an algorithm module reads of its
context is a member named here, so this class is the whole contract: a tool can
follow a transfer from ``context.radio.transfer`` into the radio, and a new member
is a deliberate change of this file.

Members, by what they are for:

========== ===================================================================
clock      ``env`` (the SimPy environment: ``env.now``, ``env.process``)
radio      ``radio`` (``transfer``, ``broadcast``; on OFDMA links also the
           :class:`LinkStates` and, in a single cell, :class:`CellCarriers`
           capabilities, checked with ``isinstance``),
           ``redrop`` (re-drop devices, FedDif's mobility between diffusion rounds)
compute    ``compute`` (``run(node, flops, kind)``: charged time and energy)
executor   ``executor`` (where torch jobs run), ``submit_device_job`` (one device's
           job, seeded per round and device), ``learn`` (False in timing mode),
           ``torch_device``
data       ``dataset``, ``partitions``, ``num_samples``
models     ``model``, ``models``, ``device_model``, ``init_model_state``,
           ``train_config``, ``evaluate``, ``evaluate_many``
nodes      ``bs``, ``devices`` (those in coverage: a starved device — no rate at the
           lowest CQI either way — takes no part), ``all_devices``,
           ``downlink_devices`` (those whose downlink is served), ``edge_of`` (the BS node
           of a device's serving cell: an edge server; ``bs`` in a single cell),
           ``available_devices`` (those on at a round's start, ``devices.availability``)
           and ``next_available_s`` (when the next one off turns on),
           ``activities`` (``cut(device, reason)``: stop a device's transfer or
           compute step now — a deadline — and ``is_cut``; departures cut by themselves)
rng        ``streams`` (named child streams: ``generator``, ``torch_seed``)
records    ``keep_finite`` (drops and records NaN/Inf updates)
scenario   ``scenario`` (read-only) and ``source`` (the file, for error messages)
========== ===================================================================
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np
    import simpy
    import torch

    from netfl.compute.engine import ComputeEngine
    from netfl.compute.flops import ModelFlops
    from netfl.core.activity import Activities
    from netfl.core.nodes import Node
    from netfl.core.rng import Streams
    from netfl.learning.datasets import Dataset
    from netfl.learning.models import ModelSpec
    from netfl.learning.tasks import Executor, TrainConfig
    from netfl.radio.radio import Radio
    from netfl.scenario.schema import Scenario

__all__ = ["RoundContext", "ModelInfo", "JobT", "LinkStates", "CellCarriers"]

JobT = TypeVar("JobT")


@dataclass(frozen=True)
class ModelInfo:
    """What the simulator needs to know of a model: its size and FLOPs.

    ``name`` is the model's catalogue name; ``size_bits`` what one copy of the
    parameters costs on air [bit]; ``flops`` the per-sample forward and training
    FLOPs. ``spec`` (the builder and loss) is looked up when first used, so a
    timing-only run never imports torch.
    """

    name: str
    num_params: int
    size_bits: float
    flops: ModelFlops

    @property
    def spec(self) -> ModelSpec:
        from netfl.learning.models import get_model_spec

        return get_model_spec(self.name)


@runtime_checkable
class LinkStates(Protocol):
    """What an OFDMA radio — a cell's or a network's — tells an algorithm that picks
    links by their quality (FedDif's auction): every link's mean SNR and expected
    spectral efficiency, and the D2D bandwidth pools of senders (FedDif (9), (16f))."""

    def link_states(
        self, srcs: Sequence[Node], dsts: Sequence[Node]
    ) -> tuple[np.ndarray, np.ndarray]: ...

    def d2d_budget(self, senders: Sequence[Node]) -> tuple[np.ndarray, np.ndarray]: ...


@runtime_checkable
class CellCarriers(Protocol):
    """A single cell's OFDMA radio: its carriers by direction (e.g. to hold RBs for
    devices that take no part, as a link probe does)."""

    def carrier_for(self, direction: str) -> Any: ...


@runtime_checkable
class RoundContext(Protocol):
    """What an algorithm may use (see the module docstring for the table)."""

    # clock, nodes, radio, compute
    env: simpy.Environment
    activities: Activities
    bs: Node
    devices: list[Node]  # those in coverage (World.update_coverage)
    all_devices: list[Node]  # every device, starved ones included
    downlink_devices: list[Node]  # those whose downlink is served (downlink-only traffic)
    radio: Radio
    compute: ComputeEngine
    # scenario, learning switch, executor
    scenario: Scenario
    source: str
    learn: bool
    executor: Executor | None
    torch_device: torch.device | None  # None in timing mode
    # data and models
    dataset: Dataset
    partitions: list[np.ndarray]
    model: ModelInfo
    models: dict[str, ModelInfo]
    train_config: TrainConfig
    # randomness
    streams: Streams

    def num_samples(self, device: Node) -> int:
        """How many training samples ``device`` holds."""
        ...

    def device_model(self, device: Node) -> ModelInfo:
        """The architecture ``device`` runs (``model`` unless models are per device)."""
        ...

    def init_model_state(self, name: str | None = None, *keys: int) -> dict[str, torch.Tensor]:
        """Seeded initial parameters of model ``name`` (default: the global model)."""
        ...

    def submit_device_job(
        self,
        task_type: type[JobT],
        r: int,
        device: Node,
        *,
        seed_key: tuple[int, ...] = (),
        seed: int | None = None,
        config: TrainConfig | None = None,
        **fields: Any,
    ) -> Future[Any] | None:
        """Submit ``device``'s job of round ``r`` to the executor (``None`` in timing mode)."""
        ...

    def evaluate(
        self, state: dict[str, torch.Tensor], name: str | None = None
    ) -> tuple[float, float]:
        """Accuracy and loss of ``state`` on the server's test set (not charged in time)."""
        ...

    def evaluate_many(
        self, items: list[tuple[dict[str, torch.Tensor], str | None]]
    ) -> list[tuple[float, float]]:
        """:meth:`evaluate` of every ``(state, model name)``."""
        ...

    def keep_finite(self, items: list, names: list[str]) -> list:
        """The items whose tensors are all finite; the others are recorded as faults."""
        ...

    def edge_of(self, device: Node) -> Node: ...

    def available_devices(self, r: int) -> list[Node]:
        """The devices in coverage that are on at round ``r``'s start."""
        ...

    def next_available_s(self) -> float | None:
        """The first instant after now at which a device that is off turns on (timed
        availability models; None otherwise)."""
        ...

    def redrop(self, *keys: int) -> None:
        """Re-drop every device over the cell from the ``placement`` stream of ``keys``."""
        ...
