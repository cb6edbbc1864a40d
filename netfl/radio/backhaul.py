"""The wired part of a network (issue 23): each site's backhaul link to the FL server,
one per direction, processor-shared at its capacity, then its latency. A part the
network radio composes (:class:`~netfl.radio.multicell_radio.MultiCellRadio`); the
network records each hop through its one record path."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy

from netfl.radio.sharing import ProcessorSharing

__all__ = ["INTERFACE", "Backhaul", "BackhaulHop"]

#: what the network radio uses of its backhaul (tested)
INTERFACE = ("start",)


class BackhaulHop:
    """One crossing of a site's backhaul link: :meth:`wait` yields until its bits have
    crossed and the latency has passed; :meth:`cancel` takes what has not crossed off
    the link (its sender left)."""

    def __init__(
        self, env: simpy.Environment, link: ProcessorSharing, size_bits: float, latency_s: float
    ):
        self.env, self.link, self.latency_s = env, link, latency_s
        self.flow = link.add(size_bits)

    def wait(self) -> Generator[simpy.Event, Any, None]:
        yield self.flow.done
        if self.latency_s > 0:
            yield self.env.timeout(self.latency_s)

    def cancel(self) -> None:
        if any(f is self.flow for f in self.link.flows):
            self.link.withdraw(self.flow)

    @property
    def delivered_bits(self) -> float:
        """The bits that have crossed (all of them once :meth:`wait` is done)."""
        return self.flow.size_bits - self.flow.remaining_bits


class Backhaul:
    """Each of ``num_sites`` sites' links to the server, per direction (``uplink``:
    towards the server), at ``capacity_bps`` each, with ``latency_s``."""

    def __init__(
        self, env: simpy.Environment, num_sites: int, capacity_bps: float, latency_s: float
    ):
        self.env = env
        self.latency_s = float(latency_s)
        self.links = {
            (site, d): ProcessorSharing(env, capacity_bps)
            for site in range(num_sites)
            for d in ("uplink", "downlink")
        }

    def start(self, site: int, direction: str, size_bits: float) -> BackhaulHop:
        """``size_bits`` start crossing ``site``'s link in ``direction``."""
        return BackhaulHop(self.env, self.links[site, direction], size_bits, self.latency_s)
