"""Device layouts in scenario files: each kind places the devices where it says, random
ones are seeded and reproduce today's drop, CSV files are read into positions, and bad
layouts are one-line errors naming the key."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from netfl.errors import ScenarioError
from netfl.loading.scenarios import load_scenario, parse_scenario, resolved
from netfl.sim.world import World
from tests.conftest import tiny_scenario


def _world(devices: dict, cell: dict | None = None, source: str = "<scenario>") -> World:
    data = tiny_scenario(devices=devices, cell=cell or {"radius_m": 300.0})
    return World(parse_scenario(data, source))


def _positions(world: World) -> np.ndarray:
    return np.array([d.position_m for d in world.devices])


def test_the_default_layout_is_todays_uniform_drop():
    from netfl.core.rng import Streams
    from netfl.radio.geometry import drop_uniform_disc

    world = _world({"count": 7})
    expected = drop_uniform_disc(Streams(3).generator("placement", 0), 7, 300.0)
    np.testing.assert_array_equal(_positions(world), expected)


def test_explicit_positions_line_ring_and_grid():
    pts = [[30.0, 0.0], [0.0, 100.0], [-200.0, 5.0]]
    world = _world({"count": 3, "layout": {"kind": "positions", "positions_m": pts}})
    np.testing.assert_array_equal(_positions(world), pts)
    world = _world({"count": 5, "layout": {"kind": "line", "start_m": [30, 0], "end_m": [290, 0]}})
    np.testing.assert_allclose(_positions(world)[:, 0], [30, 95, 160, 225, 290])
    world = _world({"count": 6, "layout": {"kind": "ring", "radius_m": 150}})
    np.testing.assert_allclose(np.hypot(*_positions(world).T), 150.0)
    world = _world({"count": 9, "layout": {"kind": "grid", "spacing_m": 20}})
    np.testing.assert_allclose(np.unique(_positions(world)[:, 0]), [-20, 0, 20])


def test_annulus_layout_stays_in_its_ring_and_is_seeded():
    layout = {"kind": "annulus", "inner_m": 100, "outer_m": 250}
    a = _positions(_world({"count": 50, "layout": layout}))
    b = _positions(_world({"count": 50, "layout": layout}))
    r = np.hypot(*a.T)
    assert r.min() >= 100 and r.max() <= 250
    np.testing.assert_array_equal(a, b)


def test_a_group_layout_places_its_own_devices_and_the_rest_follow_devices_layout():
    devices = {
        "count": 5,
        "groups": [
            {"count": 2},
            {"count": 2, "layout": {"kind": "positions", "positions_m": [[1, 2], [3, 4]]}},
        ],
        "layout": {"kind": "ring", "radius_m": 50, "phase_deg": 0},
    }
    pos = _positions(_world(devices))
    np.testing.assert_allclose(pos[2:4], [[1, 2], [3, 4]])  # the second group: devices 2, 3
    np.testing.assert_allclose(np.hypot(*pos[[0, 1, 4]].T), 50.0)  # the others on the ring


def test_redrop_moves_random_layouts_only():
    world = _world({"count": 4, "layout": {"kind": "line", "start_m": [0, 0], "end_m": [90, 0]}})
    before = _positions(world)
    world.redrop(1, 2)
    np.testing.assert_array_equal(_positions(world), before)
    world = _world({"count": 4})
    before = _positions(world)
    world.redrop(1, 2)
    assert not np.array_equal(_positions(world), before)


def test_csv_layout_is_read_relative_to_the_scenario_and_recorded_in_full(tmp_path):
    (tmp_path / "ues.csv").write_text("name,x_m,y_m\na,10,20\nb,-30.5,40\n")
    data = tiny_scenario(devices={"count": 2, "layout": {"kind": "csv", "file": "ues.csv"}})
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    scenario = load_scenario(path)
    assert scenario.devices.layout.kind == "positions"
    np.testing.assert_array_equal(_positions(World(scenario)), [[10.0, 20.0], [-30.5, 40.0]])
    again = parse_scenario(resolved(scenario))  # scenario.yaml of a run: no file needed
    assert again.devices.layout == scenario.devices.layout
    assert resolved(again)["devices"]["layout"] == {
        "kind": "positions",
        "positions_m": [[10.0, 20.0], [-30.5, 40.0]],
    }


@pytest.mark.parametrize(
    ("devices", "message"),
    [
        (
            {"count": 3, "layout": {"kind": "positions", "positions_m": [[1, 1]]}},
            r"devices\.layout: 1 positions for 3 devices",
        ),
        (
            {"count": 2, "layout": {"kind": "positions", "positions_m": [[400, 0], [0, 0]]}},
            r"devices\.layout: a device 400 m from the BS is outside the cell",
        ),
        (
            {"count": 2, "layout": {"kind": "line", "start_m": [0, 0]}},
            r"devices\.layout: kind 'line' needs end_m",
        ),
        (
            {"count": 2, "layout": {"kind": "ring", "radius_m": 10, "spacing_m": 3}},
            r"devices\.layout: spacing_m does not apply to kind 'ring'",
        ),
        (
            {"count": 2, "layout": {"kind": "annulus", "inner_m": 90, "outer_m": 50}},
            r"inner_m \(90.0\) must be below outer_m",
        ),
        (
            {"count": 1, "layout": {"kind": "positions", "positions_m": [[1, 2, -3]]}},
            r"positions_m\[0\]: height z = -3.0 m is no antenna height",
        ),
        ({"count": 1, "layout": {"kind": "hexagon"}}, r"devices\.layout\.kind"),
        (
            {"count": 4, "groups": [{"count": 2, "layout": {"kind": "ring", "radius_m": 900}}]},
            r"devices\.groups\.0\.layout: a device 900 m",
        ),
    ],
)
def test_bad_layouts_are_one_line_errors_naming_the_key(devices, message):
    with pytest.raises(ScenarioError, match=message) as err:
        parse_scenario(tiny_scenario(devices=devices, cell={"radius_m": 300.0}), "cell.yaml")
    assert len(err.value.lines()) == 1 and err.value.lines()[0].startswith("cell.yaml: ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a,b\n1,2\n", r"has no x_m, y_m \(or x, y\) columns"),
        ("x,y\n1,oops\n", r"line 2: x, y must be numbers"),
    ],
)
def test_bad_csv_files_are_one_line_errors(tmp_path, text, message):
    (tmp_path / "p.csv").write_text(text)
    data = tiny_scenario(devices={"count": 1, "layout": {"kind": "csv", "file": "p.csv"}})
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError, match=r"devices\.layout\.file: .*" + message):
        load_scenario(path)
    data["devices"]["layout"]["file"] = "missing.csv"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(
        ScenarioError, match=r"devices\.layout\.file: .*missing\.csv: file not found"
    ):
        load_scenario(path)


def test_layout_csvs_are_read_bounded(tmp_path):
    """A layout CSV is read only if it is a regular file of at most 8 MiB (a FIFO nobody
    writes is refused at once, not waited on), its rows are counted as they are parsed,
    a spreadsheet's UTF-8 byte-order mark is fine, and a height column is checked."""
    import os
    import time

    def refused(name: str, message: str, count: int = 1) -> None:
        data = tiny_scenario(devices={"count": count, "layout": {"kind": "csv", "file": name}})
        path = tmp_path / "s.yaml"
        path.write_text(yaml.safe_dump(data))
        t0 = time.perf_counter()
        with pytest.raises(ScenarioError, match=message) as err:
            load_scenario(path)
        assert time.perf_counter() - t0 < 5.0 and len(err.value.lines()) == 1

    os.mkfifo(tmp_path / "fifo.csv")
    refused("fifo.csv", "is not a regular file")
    refused("/dev/zero", "is not a regular file")
    (tmp_path / "big.csv").write_text("x_m,y_m\n" + "1,2\n" * (3 << 20))
    refused("big.csv", "a layout CSV is at most 8 MiB")
    (tmp_path / "rows.csv").write_text("x,y\n" + "1,2\n" * 100_001)
    refused("rows.csv", "has over 100,000 rows")
    (tmp_path / "low.csv").write_text("x_m,y_m,z_m\n1,2,-1.5\n")
    refused("low.csv", "line 2: z_m -1.5 is no antenna height")
    (tmp_path / "bom.csv").write_bytes("x_m,y_m\r\n10,20\r\n".encode("utf-8-sig"))
    data = tiny_scenario(devices={"count": 1, "layout": {"kind": "csv", "file": "bom.csv"}})
    (tmp_path / "ok.yaml").write_text(yaml.safe_dump(data))
    assert load_scenario(tmp_path / "ok.yaml").devices.layout.positions_m == [[10.0, 20.0]]
