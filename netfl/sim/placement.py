"""Where the devices stand: the scenario's layouts over a cell or a network's area,
antenna heights, and who is indoors (TR 38.901 floors and O2I loss).

:class:`Placement` is built once per run (:mod:`netfl.sim.build`) and used again when
the world re-drops the devices (:meth:`netfl.sim.world.World.redrop`) and by random
waypoints (:mod:`netfl.sim.device_mobility`), so every drop of a run follows the same rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from netfl.core.nodes import Node
    from netfl.core.rng import Streams
    from netfl.sim.specs import PlacementSpec

__all__ = ["Placement"]


class Placement:
    """The layouts of ``spec`` (:class:`~netfl.sim.specs.PlacementSpec`), drawn from the
    ``placement`` (and ``indoor``) streams; ``deployment`` is a network's (None for a
    single cell)."""

    def __init__(self, spec: PlacementSpec, streams: Streams, deployment: Any = None):
        self.spec = spec
        self.streams = streams
        self.deployment = deployment
        self._heights = self.heights()

    def positions(self, *keys: int) -> np.ndarray:
        """Every device's position [m], shape ``(devices, 2)``, from the scenario's layouts
        (:mod:`netfl.scenario.layout`): random ones draw from the ``placement`` stream of
        ``keys`` (``devices.layout``) or of ``(*keys, group + 1)`` (a group's layout), so
        a scenario without layouts drops exactly as before; explicit ones never move."""
        s = self.spec
        out = np.zeros((s.count, 2))
        for _, layout, devices, group in s.slots:
            stream = keys if group is None else (*keys, group + 1)
            rng = self.streams.generator("placement", *stream) if layout.random else None
            if self.deployment is not None and layout.kind == "uniform_disc":
                if s.network.drop == "per_cell":
                    out[devices] = self.deployment.drop_per_cell(len(devices), rng)
                else:
                    out[devices] = self.drop_over_network(len(devices), rng)
            else:
                out[devices] = layout.positions(len(devices), rng, s.cell_radius_m)
        return out

    def heights(self) -> np.ndarray:
        """Every device's antenna height [m] from its layout (NaN: the law's UE height)."""
        s = self.spec
        out = np.full(s.count, np.nan)
        for _, layout, devices, _ in s.slots:
            out[devices] = layout.heights(len(devices))
        return out

    def place_indoors(self, devices: Sequence[Node], *keys: int) -> None:
        """A network's ``indoor_fraction``: the devices its random drop placed are indoor
        or not, from the ``indoor`` stream of the drop's ``keys`` (TR 38.901 floors,
        heights and O2I loss); the others keep their layout's height, outdoors."""
        net = self.spec.network
        if net is None or net.indoor_fraction == 0.0:
            return
        from channel_models.multicell import indoor_states, o2i_loss_db

        placed = [
            i
            for _, layout, members, _ in self.spec.slots
            if layout.kind == "uniform_disc"
            for i in members
        ]
        if not placed:
            return
        rng = self.streams.generator("indoor", *keys)
        xy = np.array([devices[i].position_m for i in placed])
        drop = indoor_states(xy, rng, net.indoor_fraction, net.high_loss_fraction)
        carrier = self.spec.carrier_hz
        loss = o2i_loss_db(drop, carrier, rng)
        for k, i in enumerate(placed):
            node = devices[i]
            node.height_m = float(drop.height_m[k]) if drop.indoor[k] else float(self._heights[i])
            node.o2i_loss_db = float(loss[k])
            node.o2i_inside_m = float(drop.d_in_m[k])

    def drop_over_network(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` points uniform over the network's area (one site of ``site_positions_m``:
        its disc, drawn as a single cell draws it)."""
        from channel_models.site_layouts import SiteList

        dep = self.deployment
        if isinstance(dep, SiteList) and dep.num_sites == 1:
            from netfl.radio.geometry import drop_uniform_disc

            return dep.site_xy()[0] + drop_uniform_disc(rng, n, dep.radius_m)
        return dep.drop_uniform(n, rng)

    def region_sampler(self) -> Callable[[int, np.random.Generator], np.ndarray]:
        """Uniform points of the area devices move in (random waypoint)."""
        if self.deployment is not None:
            return self.drop_over_network
        from netfl.radio.geometry import drop_uniform_disc

        radius = self.spec.cell_radius_m
        return lambda n, rng: drop_uniform_disc(rng, n, radius)
