"""What the hooks of FedAvg's round answer (:class:`~netfl.algorithms.fedavg.FedAvg`).

The round calls, in turn, ``select_clients`` (who takes part), ``configure_client``
(a :class:`ClientConfig`: one client's settings, where a resource policy plugs in),
``local_update`` (its training), ``payload`` (a :class:`Payload`: the update as it goes
on air, where an update codec plugs in) and ``aggregator`` (an :class:`Aggregator`
that folds the updates as they arrive, or None: ``server_update`` gets them all).
A client's outcome is its update or the cut that stopped it (:func:`is_cut`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from netfl.core.activity import DeviceCut

if TYPE_CHECKING:
    from netfl.learning.train import TrainResult

__all__ = ["Aggregator", "ClientConfig", "Payload", "is_cut", "cut_counts"]


def is_cut(outcome: object) -> bool:
    """Whether a client's outcome is the cut that stopped it (it left, was late, or its
    update was lost in an outage)."""
    return isinstance(outcome, DeviceCut)


def cut_counts(outcomes: list) -> dict[str, float]:
    """``rounds.csv`` columns of a round's client outcomes: how many arrived, left, were
    late, had their update lost in an outage."""
    reasons = [o.reason for o in outcomes if is_cut(o)]
    return {
        "clients_arrived": float(len(outcomes) - len(reasons)),
        "clients_left": float(reasons.count("left")),
        "clients_late": float(reasons.count("late")),
        "clients_outage": float(reasons.count("outage")),
    }


@dataclass(frozen=True)
class ClientConfig:
    """One client's settings for its part of a round (``FedAvg.configure_client``)."""

    #: local epochs of its update (FedAvg: ``training.local_epochs``)
    epochs: int
    #: the most of the uplink bandwidth its transfers may hold, in (0, 1] (None: as
    #: without a policy)
    share: float | None = None
    #: its uplink transmit power [W], within its power class (None: the class's)
    power_w: float | None = None
    #: its CPU frequency [Hz] under a DVFS compute profile (None: the maximum)
    frequency_hz: float | None = None


@dataclass(frozen=True)
class Payload:
    """A client's update as it goes on air (``FedAvg.payload``)."""

    #: its size on air [bit] (FedAvg: ``model_bits(device)``)
    bits: float
    #: what the server receives: the update itself, or as a codec decoded it (None in
    #: timing mode)
    result: TrainResult | None


class Aggregator(Protocol):
    """Folds a round's updates as they arrive (``FedAvg.aggregator``), indexed by the
    client's place in the round's client list; FedAvg's is
    :class:`~netfl.learning.params.OrderedAverage`."""

    def add(self, index: int, state: dict[str, Any]) -> None:
        """Client ``index``'s update arrived with this state."""

    def drop(self, index: int) -> None:
        """Client ``index``'s update will not arrive (cut, or not finite)."""

    def result(self) -> dict[str, Any] | None:
        """The aggregate once every client was added or dropped (None: all dropped)."""
