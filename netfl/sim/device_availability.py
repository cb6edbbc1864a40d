"""Which devices can take part in a round (``devices.availability``; issue 33, item 3):
each device's availability model, built from the scenario and the ``availability``
(Markov, per device) and ``availability_round`` (Bernoulli, per round) streams, asked
at each round's start (:mod:`netfl.core.onoff`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from netfl.core.onoff import bernoulli_round
from netfl.core.usercode import user_code_error

if TYPE_CHECKING:
    import simpy

    from netfl.core.activity import Activities
    from netfl.core.availability import OnOff
    from netfl.core.nodes import Node
    from netfl.core.rng import Streams
    from netfl.scenario.availability_section import AvailabilitySection

__all__ = ["DeviceAvailability"]


class DeviceAvailability:
    """The availability of every device (``sections``: each device's
    ``devices.availability``): ``always`` unless its section says otherwise.
    A Markov process draws from the device's own ``availability`` stream (so turning
    it on for one group shifts no other draw); Bernoulli rounds draw one uniform per
    device from the round's ``availability_round`` stream."""

    def __init__(
        self,
        sections: list[AvailabilitySection],
        env: simpy.Environment,
        streams: Streams,
        devices: list[Node],
        activities: Activities,
    ):
        from netfl.core.availability import AVAILABILITY_MODELS

        self.env, self.streams, self.activities = env, streams, activities
        self.varies = any(a.varies for a in sections)
        self.p = np.ones(len(sections))
        self.timed: dict[str, OnOff] = {}  # device name → its availability in time
        for node, a in zip(devices, sections, strict=True):
            kind, settings = AVAILABILITY_MODELS[a.model], a.settings()
            p = kind.round_probability(settings)
            if not 0.0 <= p <= 1.0:
                raise user_code_error(
                    kind, f"availability model {a.model!r}: round_probability gave {p!r}"
                )
            self.p[node.index] = p
            process = kind.process(
                settings,
                node.index,
                node.name,
                lambda i=node.index: streams.generator("availability", i),
            )
            if process is not None:
                self.timed[node.name] = process
        self.bernoulli = bool((self.p < 1.0).any())
        self._departures: dict[str, float] = {}  # device → the off instant it is watched for

    def off_at(self, device: Node) -> float | None:
        """When ``device``, on now, turns off (None: not before the next round's start,
        as far as its model says — Bernoulli and ``always`` devices stay for the round)."""
        model = self.timed.get(device.name)
        return None if model is None else model.next_off(self.env.now)

    def watch_departures(self, devices: list[Node]) -> None:
        """Cut each of ``devices`` that is on now where its on-period ends: a transfer or
        compute step it runs then stops there (``Activities.cut``, reason ``left``).
        One watcher per off instant."""
        env = self.env
        for d in devices:
            t = self.off_at(d)
            if t is None or self._departures.get(d.name) == t:
                continue
            self._departures[d.name] = t
            env.process(self._depart(d, t))

    def _depart(self, device: Node, t: float):
        yield self.env.timeout(max(t - self.env.now, 0.0))
        self.activities.cut(device, "left")

    def available(self, r: int, devices: list[Node]) -> list[Node]:
        """The devices among ``devices`` that are on at round ``r``'s start (now)."""
        if not self.varies:
            return devices
        now = self.env.now
        on = (
            # (a stream of its own: Markov device k draws from ("availability", k))
            bernoulli_round(self.p, self.streams.generator("availability_round", r))
            if self.bernoulli
            else np.ones(len(self.p), dtype=bool)
        )
        return [
            d
            for d in devices
            if on[d.index] and (d.name not in self.timed or self.timed[d.name].is_on(now))
        ]

    def next_on_s(self, devices: list[Node]) -> float | None:
        """The first instant after now at which one of ``devices`` with a timed model
        (Markov, trace) turns on; None if none will (or none is timed)."""
        now = self.env.now
        best = None
        for d in devices:
            model = self.timed.get(d.name)
            t = None if model is None or model.is_on(now) else model.next_on(now)
            if t is not None:
                best = t if best is None else min(best, t)
        return best
