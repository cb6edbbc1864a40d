"""The network radio is composed of parts that hold their own state behind a declared
interface (issue 34): the geometry, the interference, the handover control, the
backhaul and the moving transfers. The network's side — the network radio, its cells
and its moving transfers — uses of each part only what the part's ``INTERFACE``
declares; the network and its parts use of a cell only what the cell declares
(:data:`netfl.radio.cell_radio.INTERFACE`), and of a cell's carrier only
:data:`netfl.radio.ofdma.CARRIER_INTERFACE`."""

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
    "moving": "netfl.radio.moving_transfers",
}
#: the modules that use cells and their carriers from outside: the network, its parts
#: and the builder (a cell's CUEs)
USERS_OF_CELLS = (
    "multicell_radio.py",
    "moving_transfers.py",
    "interference.py",
    "handover.py",
    "backhaul.py",
    "site_geometry.py",
    "../sim/build.py",
)


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
        "moving": "MovingTransfers",
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


def _is_cell(node: ast.AST) -> bool:
    """A cell, as these modules name one: ``cell``, ``cell_radio``, ``….cell_radio``,
    ``….cells[…]`` (a loop over ``….cells`` names its cell ``cell``: tested below)."""
    return (
        (isinstance(node, ast.Name) and node.id in ("cell", "cell_radio"))
        or (isinstance(node, ast.Attribute) and node.attr == "cell_radio")
        or (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "cells"
        )
    )


def _is_carrier(node: ast.AST) -> bool:
    """A cell's carrier, as these modules name one: ``carrier``, ``….carriers[…]``."""
    return (isinstance(node, ast.Name) and node.id == "carrier") or (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "carriers"
    )


def _used_of(kind) -> dict[str, set[str]]:
    """Name → the modules of :data:`USERS_OF_CELLS` that use it of a cell or carrier."""
    used: dict[str, set[str]] = {}
    for module in USERS_OF_CELLS:
        for node in ast.walk(ast.parse((RADIO / module).read_text())):
            if isinstance(node, ast.Attribute) and kind(node.value):
                used.setdefault(node.attr, set()).add(module)
    return used


@pytest.mark.parametrize(
    ("kind", "where", "declared"),
    [
        (_is_cell, "netfl.radio.cell_radio", "INTERFACE"),
        (_is_carrier, "netfl.radio.ofdma", "CARRIER_INTERFACE"),
    ],
    ids=["cell", "carrier"],
)
def test_the_network_and_its_parts_use_only_a_cells_declared_interface(kind, where, declared):
    """A cell offers the network a small public API (its transfers: promote, begin,
    send, end, record; its link budget; its carriers' rating of path flows); nothing
    else of it, and none of its private members, is reached from outside."""
    from netfl.radio.cell_radio import CellRadio
    from netfl.radio.ofdma import OfdmaCarrier

    interface = set(getattr(importlib.import_module(where), declared))
    used = _used_of(kind)
    assert used, "the network never uses a cell"
    beyond = {name: sorted(m) for name, m in used.items() if name not in interface}
    assert not beyond, f"used beyond the declared interface: {beyond}"
    assert not any(name.startswith("_") for name in used)
    owner = CellRadio if kind is _is_cell else OfdmaCarrier
    methods = {n for n in interface if callable(getattr(owner, n, None))}
    assert methods <= {n for n in dir(owner) if not n.startswith("_")}


def test_the_detector_sees_a_cell_and_a_carrier():
    """The detector of the test above finds a use of each kind and a private one."""
    tree = ast.parse("cell.send(x); self.cells[c].begin(l); carrier.withdraw(f); cell._rng")
    names = [
        (n.attr, _is_cell(n.value), _is_carrier(n.value))
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
    ]
    assert ("send", True, False) in names and ("begin", True, False) in names
    assert ("withdraw", False, True) in names and ("_rng", True, False) in names


def test_loops_over_the_cells_name_their_cell_cell():
    """The detector above knows a cell by its name: every loop over a ``cells`` list in
    those modules (a comprehension too) calls its variable ``cell``."""
    for module in USERS_OF_CELLS:
        for node in ast.walk(ast.parse((RADIO / module).read_text())):
            loops = (
                [(node.target, node.iter)]
                if isinstance(node, ast.For)
                else [(g.target, g.iter) for g in node.generators]
                if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp)
                else []
            )
            for target, it in loops:
                if isinstance(it, ast.Call) and getattr(it.func, "id", "") == "enumerate":
                    it, target = it.args[0], target.elts[-1]
                if isinstance(it, ast.Attribute) and it.attr == "cells":
                    assert isinstance(target, ast.Name) and target.id == "cell", (
                        f"{module}:{node.lineno}: a loop over the cells names its cell "
                        f"{ast.unparse(target)}"
                    )
