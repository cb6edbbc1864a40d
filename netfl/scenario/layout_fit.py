"""The devices' layouts checked against the cell or the network they are dropped in
(the scenario's cross-section check of ``devices.layout`` and the groups' layouts):
CSV layouts read (relative to the scenario file's folder), explicit layouts holding as
many positions as devices, every position inside the cell — or, in a network, in one
of its cells, and random kinds other than ``uniform_disc`` refused there."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from netfl.scenario.layout import LayoutSection
    from netfl.scenario.network_section import NetworkSection

    #: ``(key path, layout, device indices, group index)``: ``Scenario.layout_slots``
    Slot = tuple[str, LayoutSection, list[int], int | None]

__all__ = ["fit_layouts"]


def fit_layouts(
    slots: list[Slot], radius: float, network: NetworkSection | None, base_dir: Path | None
) -> dict[int | None, LayoutSection]:
    """``ValueError`` naming the layout's key path when a layout of ``slots`` does not
    fit the cell of radius ``radius`` or the ``network``; returns the CSV layouts
    replaced by the positions they hold, by group index (None: ``devices.layout``)."""
    out: dict[int | None, LayoutSection] = {}
    for path, layout, devices, group in slots:
        count = len(devices)
        if layout.kind == "csv":
            try:
                layout = layout.resolve_file(base_dir)
            except ValueError as err:
                raise ValueError(f"{path}.file: {err}") from None
            out[group] = layout
        n = layout.fixed_count()
        if n is not None and n != count:
            raise ValueError(f"{path}: {n} positions for {count} devices")
        if network is not None:
            _in_network(network, radius, path, layout, count)
            continue
        if layout.kind == "annulus" and (layout.inner_m or 0.0) >= radius:
            raise ValueError(
                f"{path}.inner_m: {layout.inner_m:g} m lies outside the cell "
                f"(cell.radius_m: {radius:g}): the ring would be empty"
            )
        far = layout.max_extent_m(count, radius)
        if far > radius * (1 + 1e-12):
            raise ValueError(
                f"{path}: a device {far:g} m from the BS is outside the cell "
                f"(cell.radius_m: {radius:g})"
            )
    return out


def _in_network(
    network: NetworkSection, radius: float, path: str, layout: LayoutSection, count: int
) -> None:
    """With a ``network``: ``uniform_disc`` drops over the whole deployment; other
    random kinds are relative to one BS (refused); explicit positions lie in a cell."""
    if layout.kind == "uniform_disc":
        return
    if layout.random:
        raise ValueError(
            f"{path}: kind {layout.kind} is drawn around one BS; with a network use "
            "uniform_disc (over the whole deployment) or explicit positions"
        )
    dep = network.deployment(radius, 25.0)
    pts = layout.positions(count, np.random.default_rng(0), radius)
    outside = (~dep.contains(pts)).nonzero()[0]
    if outside.size:
        i = int(outside[0])
        raise ValueError(
            f"{path}: device {i} at ({pts[i, 0]:g}, {pts[i, 1]:g}) m is outside every "
            "cell of the network"
        )
