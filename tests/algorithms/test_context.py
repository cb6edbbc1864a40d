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
from netfl.loading.scenarios import parse_scenario
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


#: dB agreement of two computations of one SNR (float rounding only)
SNR_DB_TOL = 1e-9


def _cell(profile: str, **link) -> World:
    """Eight devices out to 800 m of a single OFDMA cell (some power-limited uplinks)."""
    scenario = tiny_scenario(
        cell={"radius_m": 800, "link": {"mode": "ofdma", "channel_profile": profile, **link}},
        devices={"count": 8},
    )
    return World(parse_scenario(scenario))


def _db(x):
    import numpy as np

    return 10.0 * np.log10(x)


@pytest.mark.parametrize(
    "profile, link",
    [("nr_fr1_uma", {}), ("lte_20mhz", {}), ("lte_20mhz", {"cqi_sinr": "allocation"})],
)
def test_allocation_states_of_one_rb_are_the_coverage_tables_snrs(profile, link):
    """``allocation_states(num_rbs=1)`` is the definition the ``coverage`` table uses,
    both directions, bit for bit up to the dB conversion; γ̃ is the radio's expectation
    over fading at that SNR."""
    import numpy as np

    world = _cell(profile, **link)
    devices = world.all_devices
    cov = world.coverage.table().set_index("device").loc[[d.name for d in devices]]
    up, up_se = world.radio.allocation_states(devices, [world.bs])
    down, _ = world.radio.allocation_states([world.bs], devices)
    assert up.shape == up_se.shape == (len(devices), 1) and down.shape == (1, len(devices))
    np.testing.assert_allclose(_db(up[:, 0]), cov["uplink_snr_db"], rtol=0, atol=SNR_DB_TOL)
    np.testing.assert_allclose(_db(down[0]), cov["downlink_snr_db"], rtol=0, atol=SNR_DB_TOL)
    np.testing.assert_array_equal(up_se, world.radio.expected_efficiency(up, "uplink"))
    # the same device on both sides of a pair is no link
    d2d, _ = world.radio.allocation_states(devices[:3], devices[:3])
    assert np.all(np.diag(d2d) == 0.0) and np.all(d2d[~np.eye(3, dtype=bool)] > 0.0)


def test_planning_and_allocation_snrs_differ_by_the_stated_terms():
    """The two SNR definitions of :class:`LinkStates`, checked against the formulas:
    equal on the downlink and on a full-carrier wideband uplink; under open-loop power
    control the one-RB SNR is the planning SNR capped at P_CMAX·β/(N0·F·B_RB) (some
    devices of the drop are power-limited, some not); with ``cqi_sinr: allocation``
    it is the planning SNR plus 10·log10(B/B_RB) dB; and a transfer of M RBs is rated
    at min(psd, one RB / M)."""
    import numpy as np

    world = _cell("nr_fr1_uma")
    radio, devices, p = world.radio, world.all_devices, world.radio.profile
    plan, _ = radio.link_states(devices, [world.bs])
    one, _ = radio.allocation_states(devices, [world.bs])
    beta = np.array([10.0 ** (-radio.link_loss_db(d, world.bs) / 10.0) for d in devices])
    cap = p.ue_tx_power_w * beta / p.noise_w("bs", p.rb_bandwidth_hz)
    np.testing.assert_allclose(_db(one[:, 0]), _db(np.minimum(plan[:, 0], cap)), atol=1e-9)
    limited = plan[:, 0] > cap
    assert limited.any() and not limited.all()
    assert np.all(_db(one[limited, 0]) < _db(plan[limited, 0]))
    ten, _ = radio.allocation_states(devices, [world.bs], num_rbs=10.0)
    np.testing.assert_allclose(ten[:, 0], np.minimum(plan[:, 0], cap / 10.0), rtol=1e-12)
    down_plan, _ = radio.link_states([world.bs], devices)
    down_one, _ = radio.allocation_states([world.bs], devices)
    np.testing.assert_allclose(_db(down_plan), _db(down_one), atol=SNR_DB_TOL)

    wideband = _cell("lte_20mhz")
    plan, _ = wideband.radio.link_states(wideband.all_devices, [wideband.bs])
    one, _ = wideband.radio.allocation_states(wideband.all_devices, [wideband.bs])
    np.testing.assert_allclose(_db(one), _db(plan), atol=SNR_DB_TOL)

    allocation = _cell("lte_20mhz", cqi_sinr="allocation")
    p = allocation.radio.profile
    plan2, _ = allocation.radio.link_states(allocation.all_devices, [allocation.bs])
    one2, _ = allocation.radio.allocation_states(allocation.all_devices, [allocation.bs])
    np.testing.assert_allclose(_db(plan2), _db(plan), atol=SNR_DB_TOL)  # (same drop)
    term_db = 10.0 * np.log10(p.spread_bandwidth_hz / p.rb_bandwidth_hz)
    assert term_db == pytest.approx(10.0 * np.log10(p.num_rbs))  # (power_spread: rbs)
    np.testing.assert_allclose(_db(one2), _db(plan2) + term_db, atol=1e-9)


def test_link_state_queries_refuse_mixed_directions_and_bad_allocations():
    world = _cell("lte_20mhz")
    mixed = [world.bs, world.all_devices[0]]
    for query in (world.radio.link_states, world.radio.allocation_states):
        with pytest.raises(ValueError, match="one direction"):
            query(mixed, [world.all_devices[1]])
    with pytest.raises(ValueError, match="num_rbs must be positive"):
        world.radio.allocation_states(world.all_devices, [world.bs], num_rbs=0.0)
