"""The resource policy: each round's decision of who takes part and with what.

A policy answers :meth:`ResourcePolicy.decide` at a round's start with a
:class:`Decision`: the participants among the candidates and, per participant, a
:class:`Allocation` — its uplink bandwidth share, transmit power and CPU frequency (each
None: as without a policy) and the time the policy expects its part of the round to
take. The algorithm's round honours it (FedAvg's ``select_clients`` and
``configure_client``): the radio caps the device's uplink at the share and rates it at
the power (:meth:`netfl.radio.radio.Radio.grant`), the compute engine runs it at the
frequency (:meth:`netfl.compute.engine.ComputeEngine.set_frequency`).

The registry :data:`POLICIES` holds the built-ins — one module each — and plugins'
(:func:`register_policy`, ``netfl.register_policy``); the scenario's ``policy`` section
names one and its ``options`` (its pydantic ``Config``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from channel_models.registry import register_class
from netfl.errors import RegistrationError

if TYPE_CHECKING:
    from netfl.core.nodes import Node
    from netfl.core.rng import Streams
    from netfl.policies.states import DeviceStates

__all__ = [
    "POLICIES",
    "Allocation",
    "Decision",
    "PolicyConfig",
    "ResourcePolicy",
    "RoundWork",
    "register_policy",
    "step_times_s",
    "download_time_s",
]


class PolicyConfig(BaseModel):
    """Base of a policy's options: strict (an unknown key is an error)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


@dataclass(frozen=True)
class Allocation:
    """What a participant is given for the round (None: as without a policy)."""

    #: the most of the uplink bandwidth its transfers may hold, in (0, 1]
    share: float | None = None
    #: its uplink transmit power [W], at most its power class (OFDMA links)
    power_w: float | None = None
    #: its CPU frequency [Hz], within its DVFS profile's range
    frequency_hz: float | None = None
    #: the time the policy expects its part of the round to take, from the round's
    #: start [s] (NaN: no estimate); recorded beside the actual time
    expected_time_s: float = math.nan


@dataclass(frozen=True)
class Decision:
    """A round's participants (in the order they are given) and their allocations by
    device name (a participant without one gets ``Allocation()``)."""

    participants: list[Node]
    allocations: Mapping[str, Allocation] = field(default_factory=dict)

    def allocation(self, device: Node) -> Allocation:
        return self.allocations.get(device.name, Allocation())


@dataclass(frozen=True)
class RoundWork:
    """What one client's part of the round moves and computes, for estimates.

    ``download_bits``, ``upload_bits`` [bit], ``train_flops`` [FLOP] and
    ``train_samples`` (samples × local epochs: Yang et al.'s D_k per iteration times the
    iterations) are functions of the device; ``multicast``: the download goes once to
    every participant at the weakest one's rate; ``deadline_s``: the round's deadline
    from its start (None: none).
    """

    download_bits: Callable[[Node], float]
    upload_bits: Callable[[Node], float]
    train_flops: Callable[[Node], float]
    train_samples: Callable[[Node], float]
    multicast: bool = False
    deadline_s: float | None = None


class ResourcePolicy(ABC):
    """A way of deciding a round (:mod:`netfl.policies.resource_policy`).

    Constructed once per run with its validated ``config`` (None where ``Config`` is),
    the :class:`~netfl.policies.states.DeviceStates` and the run's random ``streams``;
    :meth:`decide` may draw only from streams keyed by the round (e.g.
    ``streams.generator("sampling", r)``) so that a run resumed from a checkpoint draws
    the same. A policy that keeps state across rounds (a pointer, averages) returns it
    from :meth:`state_dict` — it is in every checkpoint.
    """

    #: ``policy.name``
    name: ClassVar[str]
    description: ClassVar[str] = ""
    #: its options (``policy.options``): a subclass of :class:`PolicyConfig`, or None
    Config: ClassVar[type[PolicyConfig] | None] = None
    #: it fits the round to ``algorithm.deadline_s`` (the scenario must give one)
    needs_deadline: ClassVar[bool] = False
    #: it sounds the channel of the block now (``states.block_snr_db``: the scenario
    #: must draw fading per link)
    needs_block_snr: ClassVar[bool] = False

    def __init__(self, config: Any, states: DeviceStates, streams: Streams):
        self.config = config
        self.states = states
        self.streams = streams

    @abstractmethod
    def decide(self, r: int, candidates: Sequence[Node], count: int, work: RoundWork) -> Decision:
        """Round ``r``'s participants among ``candidates`` (those available at its start,
        in device order) and their allocations.

        Parameters
        ----------
        r : int
            The round.
        candidates : sequence of Node
            The devices that may take part.
        count : int
            How many the algorithm asks for (FedAvg: ``max(min_clients, round(fraction ·
            N))``, at most ``len(candidates)``); a policy may choose fewer (one that
            fits a deadline).
        work : RoundWork
            What a client's part of the round costs.
        """

    def state_dict(self) -> dict[str, Any]:
        """What the policy keeps across rounds (none by default)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:  # noqa: B027 (stateless default)
        """Restore :meth:`state_dict`."""


#: every policy by name (built-ins: :mod:`netfl.policies`; plugins add theirs)
POLICIES: dict[str, type[ResourcePolicy]] = {}


def register_policy(cls: type[ResourcePolicy]) -> type[ResourcePolicy]:
    """Add a policy class to :data:`POLICIES` (a class decorator; a plugin's:
    ``netfl.register_policy``); :class:`~netfl.errors.RegistrationError` says what is
    wrong with it."""
    try:
        return register_class(POLICIES, cls, ResourcePolicy, "resource policy", PolicyConfig)
    except ValueError as err:
        raise RegistrationError(str(err)) from None


def step_times_s(
    states: DeviceStates,
    device: Node,
    work: RoundWork,
    share: float = 1.0,
    power_w: float | None = None,
    frequency_hz: float | None = None,
    down_share: float = 1.0,
) -> tuple[float, float, float]:
    """``(download, update, upload)`` times of ``device``'s part now [s]: the download
    at ``down_share`` of the downlink, the update at ``frequency_hz`` (None: its
    current), the upload at ``share`` of the uplink and ``power_w``
    (:class:`~netfl.policies.states.DeviceStates`' expectations: means over the fading,
    no queueing)."""
    down = states.expected_time_s(device, work.download_bits(device), "downlink", down_share)
    update = states.compute_time_s(
        device, work.train_flops(device), work.train_samples(device), frequency_hz
    )
    up = states.expected_time_s(device, work.upload_bits(device), "uplink", share, power_w)
    return down, update, up


def download_time_s(
    states: DeviceStates,
    devices: Sequence[Node],
    work: RoundWork,
    memo: dict[tuple[str, int], float] | None = None,
) -> float:
    """The expected time to send the round's download to ``devices`` [s]: multicast, one
    transmission at the weakest one's rate; unicast, each at an equal share of the
    downlink (concurrent: the last ends when the slowest has its share's airtime), or on
    dedicated links each at its own rate.
    ``memo`` keeps each device's time per number of receivers across calls."""
    if not devices:
        return 0.0
    n = 1 if work.multicast or not states.shares_bandwidth("downlink") else len(devices)
    memo = {} if memo is None else memo
    worst = 0.0
    for d in devices:
        t = memo.get((d.name, n))
        if t is None:
            t = memo[(d.name, n)] = states.expected_time_s(
                d, work.download_bits(d), "downlink", 1.0 / n
            )
        worst = max(worst, t)
    return worst
