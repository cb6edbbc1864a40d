"""Imports point down only (DESIGN.md, "Layers"): a test that fails on any upward import.

Every ``import`` in ``channel_models`` and ``netfl`` — at module level or inside a
function, but not under ``if TYPE_CHECKING:`` — must name a module of the same or
a lower layer. ``channel_models`` imports nothing of netfl.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: lowest layer first; a module belongs to the first prefix it matches
LAYERS: list[list[str]] = [
    ["channel_models"],
    [
        "netfl.errors",
        "netfl.invariants",
        "netfl.checkpoint",
        "netfl.rng",
        "netfl.timeline",
        "netfl.records",
        "netfl.version",
    ],
    ["netfl.compute", "netfl.learning", "netfl.nodes"],
    ["netfl.radio"],
    ["netfl.algorithms", "netfl.scenario", "netfl.scenario_base", "netfl.scenario_cell"],
    [
        "netfl.scenario_io",
        "netfl.world",
        "netfl.accounting",
        "netfl.run_result",
        "netfl.runner",
        "netfl.results",
    ],
    [
        "netfl.report",
        "netfl.sweep_spec",
        "netfl.sweep",
        "netfl.cli_commands",
        "netfl.cli",
        "netfl",
    ],
]


def layer_of(module: str) -> int:
    best, best_len = None, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(tree: ast.AST):
    """Imported module names, skipping ``if TYPE_CHECKING:`` blocks."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in ast.walk(node):
                skip.add(id(sub))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, node.lineno


def upward_imports() -> list[str]:
    bad = []
    for pkg in ("channel_models", "netfl"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            mod = module_name(path)
            here = layer_of(mod)
            for name, line in imports(ast.parse(path.read_text())):
                if not (name.startswith("netfl") or name.startswith("channel_models")):
                    continue
                if mod == "netfl" or name == mod:  # the package's public API re-exports
                    continue
                if mod.startswith("channel_models") and name.startswith("netfl"):
                    bad.append(f"{path.relative_to(ROOT)}:{line}: channel_models imports {name}")
                elif layer_of(name) > here:
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {mod} imports {name} (upward)")
    return bad


def test_no_upward_imports():
    assert upward_imports() == []


def test_the_check_catches_an_upward_import(tmp_path, monkeypatch):
    """Fault injection: a radio module importing the runner is reported."""
    tree = ast.parse("def f():\n    from netfl.runner import run\n")
    found = [n for n, _ in imports(tree) if layer_of(n) > layer_of("netfl.radio.network")]
    assert found == ["netfl.runner"]
    guarded = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import netfl.world\n"
    )
    assert [n for n, _ in imports(guarded) if n.startswith("netfl")] == []
