"""Plugins add to the registries of the radio's model kinds (issue 50): a scheduler, a
path-loss law, a fading law, a mobility model and an availability model registered by a plugin file are named by a scenario
like built-ins (``cell.link.scheduler``, ``cell.link.pathloss.model``,
``devices.mobility.model``), their options validated by their own Config, listed by
``netfl list``."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from netfl.cli.app import main
from tests.conftest import tiny_scenario
from tests.test_plugins import clean_registry  # noqa: F401  (the fixture: autouse there)

#: a plugin: a scheduler (last come, first served: the latest flow takes a fraction of
#: the RBs), a path-loss law (two-ray ground reflection) and a mobility model (circles)
LAB = """
import numpy as np
import pydantic

import netfl


class LcfsConfig(netfl.SchedulerConfig):
    fraction: float = 1.0


@netfl.register_scheduler
class LastComeFirstServed(netfl.Scheduler):
    name = "lcfs"
    description = "the latest arrival takes the RBs"
    Config = LcfsConfig

    def allocate(self, demands):
        shares = np.zeros(demands.num_flows)
        if demands.num_flows:
            last = int(np.argmax(demands.arrivals))
            shares[last] = min(demands.capacity * self.config.fraction, demands.caps[last])
        return shares, 0.0


@netfl.register_pathloss
class TwoRay(netfl.PathLoss):
    # 40 log10(d) - 20 log10(h_tx h_rx): the two-ray ground reflection's far field

    name = "two_ray"
    description = "two-ray ground reflection"
    parameter_bounds = {"extra_db": (0.0, 100.0)}

    def __init__(self, extra_db=0.0, **kw):
        super().__init__(**kw)
        self.extra_db = float(extra_db)

    def mean_loss_db(self, distance_2d_m):
        d = np.maximum(np.asarray(distance_2d_m, dtype=float), 1.0)
        heights = max(self.height_tx_m * self.height_rx_m, 1e-3)
        return 40 * np.log10(d) - 20 * np.log10(heights) + self.extra_db


class Circle:
    def __init__(self, center, radius_m, period_s):
        self.center, self.radius_m, self.period_s = np.asarray(center), radius_m, period_s

    def positions(self, t_s):
        phase = 2 * np.pi * np.atleast_1d(np.asarray(t_s, dtype=float)) / self.period_s
        ring = np.stack([np.cos(phase), np.sin(phase)], axis=1)
        return self.center + self.radius_m * ring

    def speed_mps(self, t_s=0.0):
        return 2 * np.pi * self.radius_m / self.period_s


class CircleConfig(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    radius_m: float = pydantic.Field(5.0, gt=0)
    period_s: float = pydantic.Field(0.05, gt=0)


@netfl.register_mobility
class Circling(netfl.MobilityModel):
    name = "circle"
    description = "round and round its start"
    Config = CircleConfig

    @classmethod
    def trajectory(cls, start_m, heading_rad, settings, rng, region):
        center = np.asarray(start_m) - [settings.radius_m, 0.0]
        return Circle(center, settings.radius_m, settings.period_s)


@netfl.register_fading
class Half(netfl.BlockFading):
    name = "half"
    description = "|h|^2 = 1/2 in every block"

    def sample(self, rng, size):
        return np.full(size, 0.5)

    @property
    def mean(self):
        return 0.5

    @property
    def variance(self):
        return 0.0

    def peak_gain(self, exceed_probability=1e-9):
        return 0.5

    def ppf(self, u):
        return np.full(np.shape(u), 0.5)


class Always:
    def __init__(self, on):
        self.on = on

    def is_on(self, t):
        return self.on

    def next_off(self, t):
        return None

    def next_on(self, t):
        return None


class EveryKthConfig(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    k: int = pydantic.Field(2, ge=1)


@netfl.register_availability
class EveryKth(netfl.AvailabilityModel):
    name = "every_kth"
    description = "device i takes part iff i % k == 0"
    Config = EveryKthConfig

    @classmethod
    def process(cls, settings, device_index, device_name, rng):
        return Always(device_index % settings.k == 0)
"""


@pytest.fixture(autouse=True)
def _clean(clean_registry):  # noqa: F811
    yield


def _scenario(folder, scheduler: str, options: dict | None = None) -> str:
    link = {"mode": "ofdma", "channel_profile": "feddif", "scheduler": scheduler}
    if options is not None:
        link["scheduler_options"] = options
    data = tiny_scenario(
        plugins=["lab.py"],
        devices={"count": 4},
        cell={"radius_m": 100.0, "link": link},
        training={"rounds": 1, "batch_size": 16},
        outputs={"figures": False, "progress": False, "dir": str(folder / "runs")},
    )
    path = folder / f"{scheduler}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _transfers(folder, scheduler: str, options: dict | None = None) -> pd.DataFrame:
    out = folder / f"run_{scheduler}_{len(list(folder.glob('run_*')))}"
    assert main(["run", _scenario(folder, scheduler, options), "--out", str(out)]) == 0
    return pd.read_parquet(out / "transfers.parquet").sort_values("end_s")


def _union_s(starts, ends) -> float:
    """Length of the union of the intervals [start, end]."""
    total, reach = 0.0, -1.0
    for a, b in sorted(zip(starts, ends, strict=True)):
        total += max(0.0, b - max(a, reach))
        reach = max(reach, b)
    return total


def test_a_plugin_scheduler_is_chosen_by_name_and_decides_the_shares(tmp_path, capsys):
    """The downloads of a round start together: first come, first served ends them in
    their arrival order, the plugin's last come, first served in the reverse one; of
    two uploads that overlap the later one ends first (it takes the RBs); one flow at a
    time holds the carrier, never idle while one waits (airtimes add up to the time
    some transfer is active); ``netfl list`` names the plugin, the schema offers it."""
    (tmp_path / "lab.py").write_text(LAB)
    fcfs = _transfers(tmp_path, "fcfs")
    lcfs = _transfers(tmp_path, "lcfs")
    down = {name: t[t["kind"] == "model_down"] for name, t in (("fcfs", fcfs), ("lcfs", lcfs))}
    assert len(down["lcfs"]) == 4 and (down["lcfs"]["start_s"] == 0.0).all()
    assert list(down["lcfs"]["dst"]) == list(down["fcfs"]["dst"])[::-1]
    up = lcfs[lcfs["kind"] == "model_up"].sort_values("start_s")
    pairs = [
        (a, b)
        for i, a in enumerate(up.itertuples())
        for b in list(up.itertuples())[i + 1 :]
        if b.start_s < a.end_s
    ]
    assert pairs and all(b.end_s < a.end_s for a, b in pairs)
    for t in (fcfs, lcfs):
        for kind in ("model_down", "model_up"):
            k = t[t["kind"] == kind]
            assert k["airtime_s"].sum() == pytest.approx(
                _union_s(k["start_s"], k["end_s"]), rel=1e-6
            )
    capsys.readouterr()
    assert main(["list", "schedulers", "--plugin", str(tmp_path / "lab.py")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("lcfs"))
    assert "the latest arrival" in line and "[plugin " in line and "lab.py]" in line
    from netfl.loading.scenarios import scenario_schema

    enum = scenario_schema()["$defs"]["LinkSection"]["properties"]["scheduler"]["enum"]
    assert enum[:3] == ["round_robin", "fcfs", "proportional_fair"] and "lcfs" in enum


def test_a_plugin_schedulers_options_are_its_config(tmp_path, capsys):
    """``scheduler_options`` are validated by the scheduler's Config: an unknown key or a
    bad value is one line naming ``cell.link.scheduler_options`` (exit 2); a valid one
    reaches the scheduler (half the RBs: every upload twice as long)."""
    (tmp_path / "lab.py").write_text(LAB)
    full = _transfers(tmp_path, "lcfs")
    half = _transfers(tmp_path, "lcfs", {"fraction": 0.5})
    first = [t[t["kind"] == "model_down"].iloc[0] for t in (full, half)]
    # (the first download alone from the start: half the RBs, half the rate)
    assert first[1]["end_s"] == pytest.approx(2 * first[0]["end_s"], rel=0.2)
    for options, expected in (
        ({"share": 1}, "cell.link: scheduler_options.share: unknown option (scheduler 'lcfs'"),
        ({"fraction": "most"}, "cell.link: scheduler_options.fraction: Input should be"),
    ):
        path = _scenario(tmp_path, "lcfs", options)
        capsys.readouterr()
        assert main(["validate", path]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and expected in err, err


def test_a_name_no_registry_holds_is_refused_with_the_choices(tmp_path, capsys):
    path = _scenario(tmp_path, "best_cqi")
    (tmp_path / "lab.py").write_text(LAB)
    assert main(["validate", path]) == 2
    err = capsys.readouterr().err
    assert "cell.link.scheduler" in err and "round_robin" in err and "lcfs" in err, err


def test_built_in_pf_window_is_its_option(tmp_path):
    """``pf_window_blocks`` (the section's spelling) and ``scheduler_options:
    {window_blocks}`` configure the same proportional fair; both at once are refused."""
    from netfl.loading.scenarios import parse_scenario

    base = tiny_scenario(cell={"link": {"mode": "ofdma", "scheduler": "proportional_fair"}})
    for link, expected in (
        ({"pf_window_blocks": 50}, {"window_blocks": 50}),
        ({"scheduler_options": {"window_blocks": 50}}, {"window_blocks": 50}),
        ({}, {}),
    ):
        data = tiny_scenario(cell={"link": {**base["cell"]["link"], **link}})
        assert parse_scenario(data).cell.link.scheduler_config() == expected
    data = tiny_scenario(
        cell={
            "link": {
                **base["cell"]["link"],
                "pf_window_blocks": 50,
                "scheduler_options": {"window_blocks": 20},
            }
        }
    )
    with pytest.raises(Exception, match="say the same"):
        parse_scenario(data)


def test_a_plugin_path_loss_law_and_mobility_model_run_in_one_scenario(tmp_path, capsys):
    """One scenario names the plugin's scheduler, path-loss law and mobility model: the
    radio's loss of each link is the law's at the devices' distances, every device
    moves on its circle (the trajectories table), and ``netfl list`` marks each as the
    plugin's; a law's parameter outside its own bounds is one line (exit 2)."""
    import numpy as np

    (tmp_path / "lab.py").write_text(LAB)
    data = yaml.safe_load(open(_scenario(tmp_path, "lcfs")).read())
    data["cell"]["link"]["pathloss"] = {
        "model": "two_ray",
        "extra_db": 50.0,
        "height_tx_m": 25.0,
        "height_rx_m": 1.5,
    }
    data["devices"]["mobility"] = {
        "model": "circle",
        "options": {"radius_m": 4.0, "period_s": 0.001},
        "record_every_s": 0.01,
    }
    path = tmp_path / "all.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "run_all"
    assert main(["run", str(path), "--out", str(out)]) == 0
    traj = pd.read_parquet(out / "trajectories.parquet")
    assert traj["device"].nunique() == 4
    for _, rows in traj.groupby("device"):
        xy = rows[["x_m", "y_m"]].to_numpy()
        center = xy[0] - [4.0, 0.0]
        assert len(xy) >= 2 and np.hypot(*(xy[-1] - xy[0])) > 0.1  # (it moved)
        assert np.hypot(*(xy - center).T) == pytest.approx(np.full(len(xy), 4.0))

    from netfl.loading.scenarios import load_scenario
    from netfl.sim.world import World

    world = World(load_scenario(path))
    radio = world.radio
    for device in world.devices:
        d = float(np.hypot(*(device.position_m - world.bs.position_m)[:2]))
        expected = 40 * np.log10(max(d, 1.0)) - 20 * np.log10(25.0 * 1.5) + 50.0
        assert radio.link_loss_db(device, world.bs) == pytest.approx(expected, abs=1e-9)
    world.close()

    capsys.readouterr()
    assert main(["list", "--plugin", str(tmp_path / "lab.py")]) == 0
    listing = capsys.readouterr().out
    for name in ("lcfs", "two_ray", "circle"):
        line = next(x for x in listing.splitlines() if x.strip().startswith(name))
        assert "[plugin " in line and "lab.py]" in line, line

    data["cell"]["link"]["pathloss"]["extra_db"] = 500.0
    path.write_text(yaml.safe_dump(data))
    capsys.readouterr()
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "extra_db: 500 is outside 0 … 100" in err, err


def test_a_plugin_fading_law_scales_every_links_snr(tmp_path):
    """``cell.link.fading`` names the plugin's law: |h|² = 1/2 in every block halves
    each transfer's mean SNR against no fading (−3.01 dB), the same transfers."""
    import numpy as np

    (tmp_path / "lab.py").write_text(LAB)
    snrs = {}
    for law in ("none", "half"):
        data = yaml.safe_load(open(_scenario(tmp_path, "fcfs")).read())
        data["cell"]["link"]["fading"] = law
        path = tmp_path / f"{law}.yaml"
        path.write_text(yaml.safe_dump(data))
        out = tmp_path / f"run_{law}"
        assert main(["run", str(path), "--out", str(out)]) == 0
        t = pd.read_parquet(out / "transfers.parquet").sort_values(["kind", "src", "dst"])
        snrs[law] = t["mean_snr_db"].to_numpy()
    assert len(snrs["half"]) == 8
    assert snrs["half"] - snrs["none"] == pytest.approx(np.full(8, 10 * np.log10(0.5)))


def test_a_plugin_availability_model_decides_who_takes_part(tmp_path, capsys):
    """``devices.availability: {model: every_kth, options: {k: 3}}``: of 7 devices only
    ue0, ue3 and ue6 are ever selected and ever send; a bad option is one line."""
    (tmp_path / "lab.py").write_text(LAB)
    data = yaml.safe_load(open(_scenario(tmp_path, "fcfs")).read())
    data["devices"] = {"count": 7, "availability": {"model": "every_kth", "options": {"k": 3}}}
    data["training"]["rounds"] = 2
    path = tmp_path / "kth.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "run_kth"
    assert main(["run", str(path), "--out", str(out)]) == 0
    rounds = pd.read_csv(out / "rounds.csv")
    assert rounds["num_clients"].tolist() == [3, 3]
    transfers = pd.read_parquet(out / "transfers.parquet")
    devices = set(transfers["src"]) | set(transfers["dst"])
    assert devices - {"bs"} == {"ue0", "ue3", "ue6"}
    data["devices"]["availability"]["options"] = {"k": 0}
    path.write_text(yaml.safe_dump(data))
    capsys.readouterr()
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "devices.availability: options.k:" in err, err


GREEDY = """
import numpy as np
import netfl


@netfl.register_scheduler
class Greedy(netfl.Scheduler):
    name = "greedy"

    def allocate(self, demands):
        return np.full(demands.num_flows, demands.capacity), 0.0
"""


def test_a_plugin_schedulers_wrong_answer_is_one_line_naming_it(tmp_path, capsys):
    """Every flow given the whole carrier: the run stops at the first allocation with
    one line naming the plugin and what was wrong (exit 1: user code)."""
    (tmp_path / "lab.py").write_text(GREEDY)
    capsys.readouterr()
    out = tmp_path / "run_greedy"
    assert main(["run", _scenario(tmp_path, "greedy"), "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lab.py" in err[0], err
    assert "scheduler 'greedy': allocate:" in err[0] and "RBs handed out of" in err[0], err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GREEDY.replace('name = "greedy"', 'name = "greedy"\n    Config = None'), "Config must"),
        (GREEDY.replace('name = "greedy"', 'name = "Greedy!"'), "lower-case letters"),
        (GREEDY.replace("    def allocate", "    def allocated"), "does not implement allocate"),
    ],
    ids=["no_config", "bad_name", "incomplete"],
)
def test_a_bad_scheduler_registration_is_one_line(tmp_path, capsys, text, expected):
    (tmp_path / "lab.py").write_text(text)
    capsys.readouterr()
    assert main(["validate", _scenario(tmp_path, "fcfs")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "plugins[0]" in err and expected in err, err


def test_options_errors_name_the_key_even_without_a_location():
    """A Config whose own validator fails (no field location) and one that ignores extra
    keys: the first names the options, the second still refuses a typo."""
    import pydantic

    from netfl.scenario.strict import check_options

    class Lenient(pydantic.BaseModel):
        a: int = 1

        @pydantic.model_validator(mode="after")
        def _positive(self):
            if self.a < 0:
                raise ValueError("a must be ≥ 0")
            return self

    with pytest.raises(
        ValueError, match=r"^options: Value error, a must be ≥ 0 \(m; its options: a\)$"
    ):
        check_options(Lenient, {"a": -1}, "options", "m")
    with pytest.raises(ValueError, match=r"^options\.b: unknown option \(m; its options: a\)$"):
        check_options(Lenient, {"b": 2}, "options", "m")
    check_options(Lenient, {"a": 3}, "options", "m")


def test_keyword_only_parameters_of_a_law_are_its_parameters():
    from channel_models.pathloss import PathLoss
    from channel_models.pathloss_laws import PATHLOSS_MODELS, build_pathloss, register_pathloss

    class Flat(PathLoss):
        name = "flat_test_law"

        def __init__(self, *, level_db=90.0, **kw):
            super().__init__(**kw)
            self.level_db = level_db

        def mean_loss_db(self, distance_2d_m):
            import numpy as np

            return np.full(np.shape(distance_2d_m), self.level_db)

    register_pathloss(Flat)
    try:
        law = build_pathloss({"model": "flat_test_law", "level_db": 70.0}, 2e9)
        assert float(law.mean_loss_db(5.0)) == 70.0
    finally:
        PATHLOSS_MODELS.pop("flat_test_law")


def test_an_installed_packages_registrations_need_no_plugins_key(tmp_path, monkeypatch, capsys):
    """A package installed with a ``netfl.plugins`` entry point registers its scheduler,
    law, fading, mobility and availability models when a scenario is read: the scenario
    names them alone; ``netfl list`` says which entry point each came from."""
    import importlib

    from netfl.loading import plugins

    pkg = tmp_path / "epplug_kinds"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(LAB)
    info = tmp_path / "epplug_kinds-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: epplug_kinds\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[netfl.plugins]\nlab = epplug_kinds\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugins, "_PLUGIN_ENTRIES", set())
    importlib.invalidate_caches()
    data = yaml.safe_load(open(_scenario(tmp_path, "lcfs")).read())
    del data["plugins"]
    data["devices"]["mobility"] = {"model": "circle", "options": {"radius_m": 2.0}}
    path = tmp_path / "installed.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "run_installed"
    assert main(["run", str(path), "--out", str(out)]) == 0
    assert (out / "trajectories.parquet").exists()
    capsys.readouterr()
    assert main(["list", "schedulers"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("lcfs"))
    assert "[entry point lab = epplug_kinds (epplug_kinds)]" in line, line
