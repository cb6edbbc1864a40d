"""The round context is the whole contract between an algorithm and the simulation:
the world implements it, algorithms read nothing else of it, device jobs go through
one helper, and every task type has a registered runner."""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path

import pytest

from netfl.algorithms.context import RoundContext
from netfl.learning import executor as ex
from netfl.learning import tasks
from netfl.scenario.files import parse_scenario
from netfl.sim.world import World
from tests.conftest import tiny_scenario

ALGORITHMS_DIR = Path(__file__).resolve().parents[2] / "netfl" / "algorithms"

#: what the protocol names: its annotated attributes and its methods
MEMBERS = set(RoundContext.__annotations__) | {
    name
    for name in vars(RoundContext)
    if not name.startswith("_") and callable(getattr(RoundContext, name))
}


def context_reads(tree: ast.AST) -> set[tuple[str, int]]:
    """Attributes read of an algorithm's context: ``self.world.X`` and ``world.X``
    (the local alias ``world = self.world`` every module uses)."""
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        is_ctx = (isinstance(base, ast.Name) and base.id == "world") or (
            isinstance(base, ast.Attribute)
            and base.attr == "world"
            and isinstance(base.value, ast.Name)
            and base.value.id == "self"
        )
        if is_ctx:
            found.add((node.attr, node.lineno))
    return found


def test_world_implements_the_round_context():
    world = World(parse_scenario(tiny_scenario()))
    assert isinstance(world, RoundContext)
    for name in MEMBERS:
        assert hasattr(world, name), name


def test_algorithms_read_only_members_of_the_context():
    stray = []
    for path in sorted(ALGORITHMS_DIR.glob("*.py")):
        for attr, line in context_reads(ast.parse(path.read_text())):
            if attr not in MEMBERS:
                stray.append(f"{path.name}:{line}: world.{attr}")
    assert stray == []


def test_the_scan_catches_a_stray_read():
    """Fault injection: reading a world attribute the context does not name is caught."""
    tree = ast.parse(
        "def f(self):\n    world = self.world\n    return world.recorder, self.world.env\n"
    )
    reads = {a for a, _ in context_reads(tree)}
    assert reads == {"recorder", "env"}
    assert "recorder" not in MEMBERS and "env" in MEMBERS


def test_algorithms_do_not_import_the_simulation():
    """Not even for type checking: the context is the type algorithms know."""
    for path in sorted(ALGORITHMS_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not [n for n in names if n.startswith("netfl.sim")], path.name


def test_submit_device_job_fills_model_data_config_and_seed():
    scenario = parse_scenario(tiny_scenario(learning={"mode": "learn"}))
    world = World(scenario)
    submitted = []

    class Recording:
        def submit(self, task):
            submitted.append(task)
            return "future"

        def close(self):
            pass

    world.executor = Recording()
    dev = world.devices[2]
    state = world.init_model_state()
    assert world.submit_device_job(tasks.TrainTask, 5, dev, state=state) == "future"
    world.submit_device_job(
        tasks.TrainTask, 5, dev, seed_key=(1,), state=state, proximal_weight=0.5
    )
    world.submit_device_job(tasks.TrainTask, 5, dev, seed=7, state=state)
    a, b, c = submitted
    assert a.model == world.model.spec.name
    assert a.indices is world.partitions[2]
    assert a.config == world.train_config
    assert a.seed == world.streams.torch_seed("torch", 5, 2)
    assert b.seed == world.streams.torch_seed("torch", 5, 2, 1) != a.seed
    assert b.proximal_weight == 0.5
    assert c.seed == 7


def test_submit_device_job_is_none_in_timing_mode():
    world = World(parse_scenario(tiny_scenario()))
    assert world.submit_device_job(tasks.TrainTask, 0, world.devices[0], state=None) is None


def test_every_task_type_has_one_runner():
    union = set(typing.get_args(tasks.Task))
    assert union == set(ex.TASK_RUNNERS)
    assert all(dataclasses.is_dataclass(t) for t in union)
    with pytest.raises(ValueError, match="has a runner already"):
        ex.runs(tasks.TrainTask, ex.LearningContext._run_train)


def test_an_unknown_task_type_is_refused_by_name():
    @dataclasses.dataclass
    class Mystery:
        model: str

    context = ex.LearningContext(None, None, (1, 8, 8), 10, {})
    with pytest.raises(TypeError, match=r"no runner for Mystery \(registered: .*TrainTask"):
        context.run(Mystery("x"))


def test_radio_capabilities_are_protocols_the_radios_meet():
    """Algorithms check a radio's extra capabilities with ``isinstance`` against the
    context's protocols, never with ``hasattr``: OFDMA radios (a cell's, a network's)
    give link states; only a single cell's gives its carriers; fixed-rate links neither."""
    import ast
    from pathlib import Path

    from netfl.algorithms.context import CellCarriers, LinkStates
    from netfl.radio import FixedRateRadio
    from netfl.radio.multicell_radio import MultiCellRadio
    from netfl.radio.ofdma_radio import OfdmaRadio

    assert issubclass(OfdmaRadio, LinkStates) and issubclass(OfdmaRadio, CellCarriers)
    assert issubclass(MultiCellRadio, LinkStates) and not issubclass(MultiCellRadio, CellCarriers)
    assert not issubclass(FixedRateRadio, LinkStates)
    assert not issubclass(FixedRateRadio, CellCarriers)
    root = Path(__file__).resolve().parents[2] / "netfl" / "algorithms"
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "hasattr":
                assert "radio" not in ast.unparse(node), f"{path.name}: {ast.unparse(node)}"
