"""The network radio is composed of parts that hold their own state behind a declared
interface (issue 34): the geometry, the interference, the handover control and the
backhaul. The network's side — the network radio, its cells and its moving transfers —
uses of each part only what the part's ``INTERFACE`` declares."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import netfl.radio

RADIO = Path(netfl.radio.__file__).parent
#: the network's side: modules that compose or reach the parts through the network
NETWORK_SIDE = ("multicell_radio.py", "cell_radio.py", "moving_transfers.py")
#: attribute of the network holding each part → the part's module
PARTS = {
    "geometry": "netfl.radio.site_geometry",
    "interference": "netfl.radio.interference",
    "handover": "netfl.radio.handover",
    "backhaul": "netfl.radio.backhaul",
}


def _accesses() -> list[tuple[str, str, str]]:
    """Every ``<x>.<part>.<name>`` (``self.geometry.wrap``, ``net.handover.track``,
    ``self.network.interference.eta``) on the network's side: ``(module, part, name)``."""
    found = []
    for module in NETWORK_SIDE:
        tree = ast.parse((RADIO / module).read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr in PARTS
            ):
                found.append((module, node.value.attr, node.attr))
    return found


def _uses(part: str) -> set[str]:
    return {name for _, p, name in _accesses() if p == part}


@pytest.mark.parametrize("part", sorted(PARTS))
def test_the_network_uses_only_a_parts_declared_interface(part):
    interface = set(importlib.import_module(PARTS[part]).INTERFACE)
    used = _uses(part)
    assert used, f"the network never uses its {part}"
    assert used <= interface, f"{part}: used beyond its interface: {sorted(used - interface)}"
    cls = {
        "geometry": "SiteGeometry",
        "interference": "Interference",
        "handover": "HandoverControl",
        "backhaul": "Backhaul",
    }[part]
    obj = getattr(importlib.import_module(PARTS[part]), cls)
    public = {n for n in dir(obj) if not n.startswith("_")}
    methods = {n for n in interface if callable(getattr(obj, n, None))}
    assert methods <= public  # (declared methods exist and are public)


def test_no_network_module_reaches_into_a_parts_private_members():
    for module, part, name in _accesses():
        assert not name.startswith("_"), f"{module}: .{part}.{name}"


def test_the_network_radio_has_no_mixins_and_no_dead_bodies():
    from netfl.radio.multicell_radio import MultiCellRadio
    from netfl.radio.radio import Radio

    assert MultiCellRadio.__bases__ == (Radio,)
    assert "_deliver" not in vars(MultiCellRadio) and "_deliver_multicast" not in vars(
        MultiCellRadio
    )
