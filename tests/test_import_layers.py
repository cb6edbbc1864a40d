"""Imports point down only (docs/architecture.md, "Layers"): tests that fail on an
upward import, a circle of imports, or two packages importing each other.

Every import in ``channel_models`` and ``netfl`` counts — at module level, inside a
function, relative, a lazy re-export (``netfl._lazy``) — as an import of the module
that defines the name (``from netfl.learning import TrainTask`` imports
``netfl.learning.tasks``, not the package). It must name a module of the same or a
lower layer (``if TYPE_CHECKING:`` imports aside); ``channel_models`` imports nothing
of netfl. Circles and two-way package pairs count ``if TYPE_CHECKING:`` imports too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
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
        "channel_models.pathloss_laws",
        "channel_models.profile_catalog",
        "channel_models.profile_specs",
        "channel_models.tr38901",
        "channel_models.power_control",
        "channel_models.protocol_overhead",
        "channel_models.registry",
        "channel_models.resource_groups",
        "channel_models.site_layouts",
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
        "netfl.core.availability",
        "netfl.core.bounded_reading",
        "netfl.core.usercode",
        "netfl.core.meter",
        "netfl.core.nodes",
    ],
    [  # mechanisms without a clock: compute profiles and meters, torch learning
        "netfl.compute",
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
    ],
    [  # update codecs: what an update is on air (torch tensors, no clock)
        "netfl.codecs",
        "netfl.codecs.update_codec",
        "netfl.codecs.float_cast",
        "netfl.codecs.identity_codec",
        "netfl.codecs.qsgd",
        "netfl.codecs.sign_sgd",
        "netfl.codecs.sparsify",
        "netfl.codecs.uniform_quant",
    ],
    [  # radio access as SimPy resources
        "netfl.radio",
        "netfl.radio.along_path",
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
        "netfl.radio.fixed_rate_radio",
        "netfl.radio.ofdma",
        "netfl.radio.ofdma_flow",
        "netfl.radio.link_fading",
        "netfl.radio.ofdma_radio",
        "netfl.radio.completion_search",
        "netfl.radio.rb_power",
        "netfl.radio.mobility_models",
        "netfl.radio.schedulers",
        "netfl.radio.schedulers.base",
        "netfl.radio.schedulers.fcfs",
        "netfl.radio.schedulers.proportional_fair",
        "netfl.radio.schedulers.round_robin",
        "netfl.radio.schedulers.shares",
        "netfl.radio.sharing",
        "netfl.radio.uplink_mac",
    ],
    [  # resource policies: decisions on what the radio and compute engine can tell
        "netfl.policies",
        "netfl.policies.resource_policy",
        "netfl.policies.best_channel",
        "netfl.policies.control",
        "netfl.policies.fedcs",
        "netfl.policies.min_energy",
        "netfl.policies.proportional_fair_selection",
        "netfl.policies.random_selection",
        "netfl.policies.round_robin_turns",
        "netfl.policies.states",
    ],
    [  # the scenario schema and files (no algorithm: the registry is above)
        "netfl.scenario",
        "netfl.scenario.strict",
        "netfl.scenario.data_section",
        "netfl.scenario.availability_section",
        "netfl.scenario.cell",
        "netfl.scenario.link_resolution",
        "netfl.scenario.files",
        "netfl.scenario.reading",
        "netfl.scenario.registries",
        "netfl.scenario.layout",
        "netfl.scenario.layout_fit",
        "netfl.scenario.network_section",
        "netfl.scenario.plausibility",
        "netfl.scenario.schema",
        "netfl.scenario.devices_section",
        "netfl.scenario.policy_section",
        "netfl.scenario.codec_section",
    ],
    [  # FL algorithms (against the round context)
        "netfl.algorithms",
        "netfl.algorithms.algorithm",
        "netfl.algorithms.context",
        "netfl.algorithms.dfl",
        "netfl.algorithms.ecofed",
        "netfl.algorithms.fedavg",
        "netfl.algorithms.feddif",
        "netfl.algorithms.feddif_state",
        "netfl.algorithms.feddif_auction",
        "netfl.algorithms.feddif_config",
        "netfl.algorithms.fedmd",
        "netfl.algorithms.fedswap",
        "netfl.algorithms.fedzkt",
        "netfl.algorithms.app_thread",
        "netfl.algorithms.asynchronous",
        "netfl.algorithms.fedasync",
        "netfl.algorithms.fedbuff",
        "netfl.algorithms.flower_bridge",
        "netfl.algorithms.flower_config",
        "netfl.algorithms.flower_grid",
        "netfl.algorithms.flower_exchanges",
        "netfl.algorithms.flower_server_grid",
        "netfl.algorithms.flower_messages",
        "netfl.algorithms.hetero",
        "netfl.algorithms.hierfavg",
        "netfl.algorithms.hooks",
        "netfl.algorithms.update_coding",
        "netfl.algorithms.over_the_air",
        "netfl.algorithms.split_fl",
        "netfl.algorithms.link_probe",
    ],
    [  # a scenario with its algorithm: plugins, validation, the scenario reference
        "netfl.loading",
        "netfl.loading.plugins",
        "netfl.loading.reference",
        "netfl.loading.knob_checks",
        "netfl.loading.scenarios",
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
        "netfl.sim.specs",
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

#: the top-level packages, which import each other one way only (``netfl/__init__``'s
#: re-exports and the modules beside the packages — ``errors``, ``version`` — aside)
PACKAGES = (
    "netfl.core",
    "netfl.compute",
    "netfl.learning",
    "netfl.codecs",
    "netfl.radio",
    "netfl.policies",
    "netfl.scenario",
    "netfl.algorithms",
    "netfl.loading",
    "netfl.sim",
    "netfl.output",
    "netfl.sweep",
    "netfl.cli",
)


def layer_of(module: str) -> int:
    """The layer of ``module`` (a module, or a name inside one)."""
    name = module
    while name and name not in LAYER_OF:
        name = name.rpartition(".")[0]
    assert name, f"{module} is in no layer: add it to LAYERS"
    return LAYER_OF[name]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass(frozen=True)
class Source:
    """One module's parsed text; ``package``: it is a package's ``__init__``."""

    tree: ast.Module
    package: bool = False


def sources() -> dict[str, Source]:
    """Every module of ``channel_models`` and ``netfl``, parsed."""
    return {
        module_name(path): Source(ast.parse(path.read_text()), path.name == "__init__.py")
        for pkg in ("channel_models", "netfl")
        for path in sorted((ROOT / pkg).rglob("*.py"))
    }


def _typing_only(tree: ast.AST) -> set[int]:
    """The nodes under ``if TYPE_CHECKING:`` (not its ``else``)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(sub) for stmt in node.body for sub in ast.walk(stmt)}
    return out


def _lazy_tables(tree: ast.Module) -> dict[str, str]:
    """A module's lazy re-exports (``netfl._lazy``): ``{name: "module"}`` tables at
    module level."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and isinstance(value, ast.Constant)
                    and isinstance(value.value, str)
                    and value.value.startswith(("netfl.", "channel_models."))
                ):
                    out[key.value] = value.value
    return out


def raw_imports(module: str, source: Source):
    """``(from, name, line, typing_only)`` of every import of ``module`` — at module
    level, inside functions, relative, and its lazy re-exports (``name`` is None for
    ``import from``)."""
    skip = _typing_only(source.tree)
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno, id(node) in skip
        elif isinstance(node, ast.ImportFrom):
            origin = node.module or ""
            if node.level:  # relative: from the module's package upward
                base = module if source.package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                origin = f"{base}.{origin}" if origin else base
            for alias in node.names:
                yield origin, alias.name, node.lineno, id(node) in skip
    for name, origin in _lazy_tables(source.tree).items():
        yield origin, name, 0, False


def _reexports(source: Source) -> dict[str, tuple[str, str]]:
    """What a package's ``__init__`` takes from elsewhere: ``name → (module, name)``."""
    out = {}
    for node in source.tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                out[alias.asname or alias.name] = (node.module, alias.name)
    for name, origin in _lazy_tables(source.tree).items():
        out.setdefault(name, (origin, name))
    return out


def resolve(origin: str, name: str | None, mods: dict[str, Source]) -> str | None:
    """The module that defines what ``from origin import name`` (or ``import origin``)
    imports: a package's name resolves to the submodule it re-exports or is (``from
    netfl.learning import TrainTask`` → ``netfl.learning.tasks``); None outside ours."""
    seen = set()
    while name is not None and origin in mods and mods[origin].package:
        if (origin, name) in seen:
            break
        seen.add((origin, name))
        found = _reexports(mods[origin]).get(name)
        if found is not None and found[0] != origin:
            origin, name = found
        elif f"{origin}.{name}" in mods:
            return f"{origin}.{name}"
        else:
            break
    while origin and origin not in mods:
        origin = origin.rpartition(".")[0]
    return origin or None


def import_graph(mods: dict[str, Source] | None = None) -> dict[tuple[str, str], list[str]]:
    """``(importer, imported) → ["line", ...]`` between our modules (a line ends in
    ``(typing)`` under ``if TYPE_CHECKING:``); ``netfl/__init__``'s re-exports aside."""
    mods = sources() if mods is None else mods
    edges: dict[tuple[str, str], list[str]] = {}
    for mod, source in mods.items():
        if mod == "netfl":  # (the public API re-exports everything)
            continue
        for origin, name, line, typing in raw_imports(mod, source):
            target = resolve(origin, name, mods)
            if target is not None and target not in (mod, "netfl"):
                edges.setdefault((mod, target), []).append(f"{line}" + " (typing)" * typing)
    return edges


def upward_imports(edges: dict[tuple[str, str], list[str]] | None = None) -> list[str]:
    """Imports of a higher layer (``if TYPE_CHECKING:`` ones aside), and any netfl
    import in ``channel_models``."""
    bad = []
    for (mod, name), lines in sorted((import_graph() if edges is None else edges).items()):
        lines = [line for line in lines if not line.endswith("(typing)")]
        if not lines:
            continue
        where = f"{mod}:{','.join(lines)}"
        if mod.startswith("channel_models") and name.startswith("netfl"):
            bad.append(f"{where}: channel_models imports {name}")
        elif layer_of(name) > layer_of(mod):
            bad.append(f"{where}: {mod} imports {name} (upward)")
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


def _planted(**texts: str) -> dict[str, Source]:
    """Synthetic modules: ``netfl__learning="..."`` is ``netfl.learning``, a package
    when its name ends in ``__init``."""
    out = {}
    for key, text in texts.items():
        package = key.endswith("___init")
        name = key.removesuffix("___init").replace("__", ".")
        out[name] = Source(ast.parse(text), package)
    return out


def test_the_check_catches_an_upward_import():
    """Fault injection: a radio module importing the runner inside a function is
    reported; one under ``if TYPE_CHECKING:`` is not."""
    mods = _planted(
        netfl__radio__radio="def f():\n    from netfl.sim.runner import run\n",
        netfl__radio__cues=(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import netfl.sim.world\n"
        ),
        netfl__sim__runner="def run(): ...\n",
        netfl__sim__world="",
    )
    assert upward_imports(import_graph(mods)) == [
        "netfl.radio.radio:2: netfl.radio.radio imports netfl.sim.runner (upward)"
    ]


def test_a_name_resolves_to_the_module_that_defines_it():
    """``from PACKAGE import NAME`` is an import of the submodule NAME comes from —
    eagerly re-exported, lazily (``netfl._lazy``), or a submodule itself — and a
    relative import is one too."""
    mods = _planted(
        netfl__learning___init=(
            "from netfl.learning.partition import partition\n"
            '_EXPORTS = {"TrainTask": "netfl.learning.tasks"}\n'
        ),
        netfl__learning__partition="def partition(): ...\n",
        netfl__learning__tasks="class TrainTask: ...\n",
        netfl__learning__train="from . import tasks\nfrom .partition import partition\n",
        netfl__algorithms__fedavg=(
            "def f():\n    from netfl.learning import TrainTask, partition\n"
            "    import netfl.learning.train\n"
        ),
    )
    graph = import_graph(mods)
    assert sorted(b for a, b in graph if a == "netfl.algorithms.fedavg") == [
        "netfl.learning.partition",
        "netfl.learning.tasks",
        "netfl.learning.train",
    ]
    assert sorted(b for a, b in graph if a == "netfl.learning.train") == [
        "netfl.learning.partition",
        "netfl.learning.tasks",
    ]


def cycles(edges) -> list[list[str]]:
    """Modules that import each other, directly or through others: the strongly
    connected components of more than one module (Tarjan's algorithm)."""
    succ: dict[str, list[str]] = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
        succ.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in sorted(succ):
        if root in index:
            continue
        work = [(root, iter(succ[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        out.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(succ[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(out)


def import_cycles() -> list[list[str]]:
    """Circles of the import graph: every import counts, ``if TYPE_CHECKING:`` ones
    too (two modules that name each other's types cannot be read apart either)."""
    return cycles(import_graph())


def test_no_import_cycle():
    """No two modules need each other (docs/architecture.md, "Layers"): a module that calls back
    into its caller takes what it needs as arguments (e.g. the world's builders and
    mobility take the placement, not the world)."""
    assert import_cycles() == []


def test_the_cycle_check_catches_a_planted_circle():
    """Fault injection: a circle closed by a name taken from a package (lazily
    re-exported), inside a function, or under ``if TYPE_CHECKING:`` is found."""
    mods = _planted(
        netfl__learning___init='_EXPORTS = {"TrainConfig": "netfl.learning.tasks"}\n',
        netfl__learning__tasks=(
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from netfl.learning.zkt import ZKTServerConfig\n"
        ),
        netfl__learning__zkt="def f():\n    from netfl.learning.train import CPU\n",
        netfl__learning__train="from netfl.learning import TrainConfig\n",
        netfl__learning__models="from netfl.learning import TrainConfig\n",
    )
    assert cycles(import_graph(mods)) == [
        ["netfl.learning.tasks", "netfl.learning.train", "netfl.learning.zkt"]
    ]
    assert cycles([("a", "b"), ("b", "c"), ("c", "b"), ("d", "d")]) == [["b", "c"]]


def package_of(module: str) -> str | None:
    return next((p for p in PACKAGES if module == p or module.startswith(p + ".")), None)


def two_way_pairs(edges) -> list[str]:
    """Top-level packages that import each other (each way's first import named);
    every import counts, ``if TYPE_CHECKING:`` ones too."""
    way: dict[tuple[str, str], tuple[str, str]] = {}
    for a, b in sorted(edges):
        pa, pb = package_of(a), package_of(b)
        if pa and pb and pa != pb:
            way.setdefault((pa, pb), (a, b))
    return [
        f"{pa} <-> {pb}: {' -> '.join(way[pa, pb])}; {' -> '.join(way[pb, pa])}"
        for pa, pb in sorted(way)
        if pa < pb and (pb, pa) in way
    ]


def test_no_two_packages_import_each_other():
    """Packages depend one way (docs/architecture.md, "Layers"): what needs both of two
    packages lives above them (a scenario with its algorithm: ``netfl/loading/``)."""
    assert two_way_pairs(import_graph()) == []


def test_the_pair_check_catches_a_planted_pair():
    """Fault injection: ``core`` taking a name from ``compute``'s package (which
    re-exports it) while ``compute`` imports ``core`` is a pair; one way is not."""
    mods = _planted(
        netfl__compute___init="from netfl.compute.meter import EnergyMeter\n",
        netfl__compute__meter="class EnergyMeter: ...\n",
        netfl__compute__engine="from netfl.core.records import Recorder\n",
        netfl__core__records="class Recorder: ...\n",
        netfl__core__nodes="def f():\n    from netfl.compute import EnergyMeter\n",
    )
    assert two_way_pairs(import_graph(mods)) == [
        "netfl.compute <-> netfl.core: netfl.compute.engine -> netfl.core.records; "
        "netfl.core.nodes -> netfl.compute.meter"
    ]
    del mods["netfl.core.nodes"]
    assert two_way_pairs(import_graph(mods)) == []


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
