"""Imports point down only (docs/architecture.md, "Layers"): a test that fails on any upward import.

Every ``import`` in ``channel_models`` and ``netfl`` — at module level or inside a
function, but not under ``if TYPE_CHECKING:`` — must name a module of the same or
a lower layer. ``channel_models`` imports nothing of netfl.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: lowest layer first; every module of ``channel_models`` and ``netfl`` is named here
#: (a module in no layer, or a layer naming a module that does not exist, fails)
LAYERS: list[list[str]] = [
    [  # pure physics: numpy/scipy only
        "channel_models",
        "channel_models.block_aggregation",
        "channel_models.bs_antenna",
        "channel_models.channel_profiles",
        "channel_models.departure_rays",
        "channel_models.duplex",
        "channel_models.fading",
        "channel_models.link_abstraction",
        "channel_models.link_budget",
        "channel_models.link_profiles",
        "channel_models.lte",
        "channel_models.mobility",
        "channel_models.multicell",
        "channel_models.nr",
        "channel_models.numerology",
        "channel_models.overheads",
        "channel_models.value_ranges",
        "channel_models.pathloss",
        "channel_models.power_control",
        "channel_models.protocol_overhead",
        "channel_models.registry",
        "channel_models.resource_groups",
        "channel_models.units",
    ],
    [  # foundations
        "netfl.errors",
        "netfl.version",
        "netfl._lazy",
        "netfl.core",
        "netfl.core.rng",
        "netfl.core.records",
        "netfl.core.timeline",
        "netfl.core.invariants",
        "netfl.core.threads",
        "netfl.core.gc_policy",
        "netfl.core.activity",
        "netfl.core.onoff",
        "netfl.core.usercode",
    ],
    [  # mechanisms without a clock: compute profiles and meters, torch learning
        "netfl.compute",
        "netfl.compute.meter",
        "netfl.compute.engine",
        "netfl.compute.flops",
        "netfl.compute.profiles",
        "netfl.learning",
        "netfl.learning.batched",
        "netfl.learning.catalog",
        "netfl.learning.consensus",
        "netfl.learning.datasets",
        "netfl.learning.distill",
        "netfl.learning.executor",
        "netfl.learning.flower_client",
        "netfl.learning.models",
        "netfl.learning.parallel",
        "netfl.learning.params",
        "netfl.learning.partition",
        "netfl.learning.pretrain",
        "netfl.learning.split_model",
        "netfl.learning.split_train",
        "netfl.learning.tasks",
        "netfl.flower",
        "netfl.learning.train",
        "netfl.learning.transport",
        "netfl.learning.zkt",
        "netfl.core.nodes",
    ],
    [  # radio access as SimPy resources
        "netfl.radio",
        "netfl.radio.backhaul",
        "netfl.radio.block_grid",
        "netfl.radio.cell_radio",
        "netfl.radio.columns",
        "netfl.radio.cues",
        "netfl.radio.radio_energy",
        "netfl.radio.geometry",
        "netfl.radio.handover",
        "netfl.radio.interference",
        "netfl.radio.path_gains",
        "netfl.radio.site_geometry",
        "netfl.radio.moving_transfers",
        "netfl.radio.multicell_radio",
        "netfl.radio.radio",
        "netfl.radio.ofdma",
        "netfl.radio.ofdma_radio",
        "netfl.radio.proportional_fair",
        "netfl.radio.schedulers",
        "netfl.radio.sharing",
        "netfl.radio.uplink_mac",
    ],
    [  # FL algorithms (against the round context) and the scenario schema and files
        "netfl.algorithms",
        "netfl.algorithms.algorithm",
        "netfl.algorithms.context",
        "netfl.algorithms.dfl",
        "netfl.algorithms.ecofed",
        "netfl.algorithms.fedavg",
        "netfl.algorithms.feddif",
        "netfl.algorithms.feddif_state",
        "netfl.algorithms.fedmd",
        "netfl.algorithms.fedswap",
        "netfl.algorithms.fedzkt",
        "netfl.algorithms.app_thread",
        "netfl.algorithms.asynchronous",
        "netfl.algorithms.fedasync",
        "netfl.algorithms.fedbuff",
        "netfl.algorithms.flower_bridge",
        "netfl.algorithms.flower_grid",
        "netfl.algorithms.flower_server_grid",
        "netfl.algorithms.flower_messages",
        "netfl.algorithms.hetero",
        "netfl.algorithms.hierfavg",
        "netfl.algorithms.split_fl",
        "netfl.algorithms.link_probe",
        "netfl.scenario",
        "netfl.scenario.strict",
        "netfl.scenario.data_section",
        "netfl.scenario.availability_section",
        "netfl.scenario.cell",
        "netfl.scenario.link_resolution",
        "netfl.scenario.files",
        "netfl.scenario.reading",
        "netfl.scenario.plugins",
        "netfl.scenario.reference",
        "netfl.scenario.registries",
        "netfl.scenario.layout",
        "netfl.scenario.layout_fit",
        "netfl.scenario.network_section",
        "netfl.scenario.plausibility",
        "netfl.scenario.schema",
    ],
    [  # one simulation: world, runner, records into rows, checkpoints, result
        "netfl.sim",
        "netfl.sim.accounting",
        "netfl.sim.checkpoint",
        "netfl.sim.data",
        "netfl.sim.device_mobility",
        "netfl.sim.device_availability",
        "netfl.sim.build",
        "netfl.sim.placement",
        "netfl.sim.model_facts",
        "netfl.sim.result",
        "netfl.sim.runner",
        "netfl.sim.world",
        "netfl.sim.coverage",
        "netfl.sim.critical_path",
        "netfl.sim.faults",
        "netfl.sim.evaluation",
    ],
    [  # run directories and figures
        "netfl.output",
        "netfl.output.figures",
        "netfl.output.run_directory",
        "netfl.output.rundir",
        "netfl.output.saving",
        "netfl.output.timeline_figures",
        "netfl.output.timing_report",
    ],
    [  # user-facing verbs and the public API
        "netfl.sweep",
        "netfl.sweep.report",
        "netfl.sweep.report_page",
        "netfl.sweep.stragglers",
        "netfl.sweep.run",
        "netfl.sweep.labels",
        "netfl.sweep.spec",
        "netfl.cli",
        "netfl.cli.app",
        "netfl.cli.commands",
        "netfl.cli.describe",
        "netfl",
        "netfl.__main__",
    ],
]

LAYER_OF: dict[str, int] = {m: i for i, layer in enumerate(LAYERS) for m in layer}


def layer_of(module: str) -> int:
    """The layer of ``module`` (an imported name may be an object inside a module:
    ``from netfl.learning import TrainTask`` names the package, which is listed)."""
    if module in LAYER_OF:
        return LAYER_OF[module]
    parent = module.rpartition(".")[0]
    assert parent and parent in LAYER_OF, f"{module} is in no layer: add it to LAYERS"
    return LAYER_OF[parent]


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


def all_modules() -> list[str]:
    return sorted(
        module_name(path)
        for pkg in ("channel_models", "netfl")
        for path in (ROOT / pkg).rglob("*.py")
    )


def test_every_module_is_placed_once():
    """A new module fails until it is listed; a listed module must exist."""
    listed = [m for layer in LAYERS for m in layer]
    assert len(listed) == len(set(listed)), "a module is listed twice"
    assert sorted(set(all_modules()) - set(listed)) == [], "modules in no layer"
    assert sorted(set(listed) - set(all_modules())) == [], "listed modules that do not exist"


def test_no_upward_imports():
    assert upward_imports() == []


def test_the_check_catches_an_upward_import(tmp_path, monkeypatch):
    """Fault injection: a radio module importing the runner is reported."""
    tree = ast.parse("def f():\n    from netfl.sim.runner import run\n")
    found = [n for n, _ in imports(tree) if layer_of(n) > layer_of("netfl.radio.radio")]
    assert found == ["netfl.sim.runner"]
    guarded = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import netfl.sim.world\n"
    )
    assert [n for n, _ in imports(guarded) if n.startswith("netfl")] == []


def import_cycles() -> list[list[str]]:
    """Modules that import each other, directly or through others (strongly connected
    components of the import graph; ``if TYPE_CHECKING:`` imports do not count)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    mods = all_modules()
    index = {m: i for i, m in enumerate(mods)}

    def owner(name: str) -> str | None:
        while name and name not in index:
            name = name.rpartition(".")[0]
        return name or None

    edges = set()
    for pkg in ("channel_models", "netfl"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            mod = module_name(path)
            if mod in ("netfl", "channel_models"):  # (the public API's re-exports)
                continue
            for name, _ in imports(ast.parse(path.read_text())):
                target = owner(name)
                if target is not None and target not in (mod, "netfl", "channel_models"):
                    edges.add((index[mod], index[target]))
    rows, cols = zip(*edges, strict=True)
    graph = csr_matrix(([1] * len(rows), (rows, cols)), shape=(len(mods), len(mods)))
    _, labels = connected_components(graph, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for mod, label in zip(mods, labels, strict=True):
        groups.setdefault(int(label), []).append(mod)
    return sorted(sorted(g) for g in groups.values() if len(g) > 1)


def test_no_import_cycle_inside_any_layer():
    """No two modules need each other (docs/architecture.md, "Layers"): a module that calls back
    into its caller takes what it needs as arguments (e.g. the world's builders and
    mobility take the placement, not the world)."""
    assert import_cycles() == []


def test_no_two_modules_share_a_name():
    """A module's name says what it holds wherever it is read (``radio.py`` holds the
    base ``Radio``; the scenario's sections are ``*_section.py``): no file name repeats
    across the packages (package ``__init__`` files aside)."""
    from collections import Counter

    names = Counter(
        path.name
        for pkg in ("channel_models", "netfl")
        for path in (ROOT / pkg).rglob("*.py")
        if path.name != "__init__.py"
    )
    assert sorted(n for n, k in names.items() if k > 1) == []
