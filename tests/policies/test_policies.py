"""Resource policies (issue 51): who takes part and with what, honoured exactly.

``random`` is FedAvg's sampling (a scenario without a ``policy`` section runs the same
events); a policy's uplink shares and powers are honoured by the radio (transfer times by
hand on a fixed-rate and an OFDMA cell); FedCS's greedy selection by hand on five
devices; round robin's turns and its pointer through a checkpoint; best channel's ranking;
a plugin policy from a file and an entry point; wrong answers and scenarios refused in
one line."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml

from netfl.cli.app import main
from netfl.loading.scenarios import parse_scenario
from netfl.sim.runner import run
from tests.conftest import tiny_scenario
from tests.test_plugins import clean_registry  # noqa: F401  (the fixture: autouse there)

OFDMA = {"link": {"mode": "ofdma", "channel_profile": "feddif", "fading": "none"}}

#: a plugin: a policy that gives every participant a fixed uplink share and power
FIXED = """
import netfl
from pydantic import Field


class FixedConfig(netfl.PolicyConfig):
    share: float = Field(0.5, gt=0, le=1)
    power_w: float | None = None
    count: int | None = None


@netfl.register_policy
class Fixed(netfl.ResourcePolicy):
    name = "fixed_share"
    description = "every candidate, each with the same share and power"
    Config = FixedConfig

    def decide(self, r, candidates, count, work):
        chosen = list(candidates)[: self.config.count or count]
        a = netfl.Allocation(share=self.config.share, power_w=self.config.power_w)
        return netfl.Decision(chosen, {d.name: a for d in chosen})


@netfl.register_policy
class Stranger(netfl.ResourcePolicy):
    name = "stranger"
    description = "answers with a device that is not a candidate"

    def decide(self, r, candidates, count, work):
        return netfl.Decision([candidates[0], candidates[0]])
"""


def _run(tmp_path, data: dict):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    scenario = parse_scenario(data, str(path))
    return run(scenario, str(path))


def _frames_equal(a, b) -> None:
    for x, y in ((a.transfers, b.transfers), (a.computes, b.computes)):
        pd.testing.assert_frame_equal(x, y)


def test_random_is_fedavgs_sampling_and_the_default(tmp_path):
    """``policy: {name: random}`` runs the very events a scenario without the section
    runs; its participants are the ``sampling`` stream's draw, and the ``policy`` table
    marks them among the candidates."""
    base = tiny_scenario(devices={"count": 6}, algorithm={"name": "fedavg", "fraction": 0.5})
    plain = _run(tmp_path, base)
    chosen = _run(tmp_path, {**base, "policy": {"name": "random"}})
    _frames_equal(plain, chosen)
    table = chosen.tables["policy"]
    assert list(table.columns[:3]) == ["round", "device", "selected"]
    from netfl.core.rng import Streams

    for r in range(2):
        rng = Streams(base["seed"]).generator("sampling", r)
        expected = {f"ue{i}" for i in np.sort(rng.choice(6, size=3, replace=False))}
        rows = table[table["round"] == r]
        assert len(rows) == 6 and set(rows.loc[rows.selected, "device"]) == expected
        up = chosen.transfers[
            (chosen.transfers["round"] == r) & (chosen.transfers.kind == "model_up")
        ]
        assert set(up["src"]) == expected
        assert (rows.loc[rows.selected, "outcome"] == "arrived").all()
        assert (rows.loc[~rows.selected, "outcome"] == "not_selected").all()


def test_a_share_is_honoured_on_a_dedicated_fixed_rate_link(tmp_path):
    """Under a share b, an upload of S bits on a dedicated link of rate R takes S/(b·R)
    exactly; the download (no grant) still takes S/R_down."""
    (tmp_path / "lab.py").write_text(FIXED)
    data = tiny_scenario(
        plugins=[str(tmp_path / "lab.py")],
        cell={"link": {"mode": "fixed_rate"}},
        devices={"count": 3, "link_profile": "4g_lte"},
        policy={"name": "fixed_share", "options": {"share": 0.25}},
    )
    result = _run(tmp_path, data)
    t = result.transfers
    up, down = t[t.kind == "model_up"], t[t.kind == "model_down"]
    bits = float(up["size_bits"].iloc[0])
    assert np.allclose(up["duration_s"], bits / (0.25 * 5e6), rtol=1e-12)
    assert np.allclose(down["duration_s"], bits / 20e6, rtol=1e-12)
    assert (result.tables["policy"]["share"] == 0.25).all()


def test_a_share_caps_a_transfer_on_a_shared_fixed_rate_bs(tmp_path):
    """Where links share the BS's capacity C, a lone upload under share b runs at
    min(own rate, b·C)."""
    (tmp_path / "lab.py").write_text(FIXED)
    data = tiny_scenario(
        plugins=[str(tmp_path / "lab.py")],
        cell={
            "link": {
                "mode": "fixed_rate",
                "shared": True,
                "uplink_capacity_mbps": 8.0,
                "downlink_capacity_mbps": 100.0,
            }
        },
        devices={"count": 1, "link_profile": "4g_lte"},
        policy={"name": "fixed_share", "options": {"share": 0.5}},
    )
    t = _run(tmp_path, data).transfers
    up = t[t.kind == "model_up"]
    assert np.allclose(up["duration_s"], up["size_bits"] / min(5e6, 0.5 * 8e6), rtol=1e-9)


def test_a_share_and_a_power_are_honoured_on_an_ofdma_cell(tmp_path):
    """Without fading, an upload alone on the carrier under share b and power p holds
    M = b·N RBs at the per-RB SNR scaled by p/P_max: S / (log2(1 + SNR·p/P)·M·B_RB·f)
    by hand (the FedDif profile: Shannon, full-carrier power), which is also what the
    device states expected."""
    (tmp_path / "lab.py").write_text(FIXED)
    data = tiny_scenario(
        plugins=[str(tmp_path / "lab.py")],
        cell=OFDMA,
        devices={"count": 2},
        model={"name": "logreg"},
        policy={"name": "fixed_share", "options": {"share": 0.5, "power_w": 0.05, "count": 1}},
    )
    from netfl.sim.world import World

    scenario = parse_scenario(data, "s.yaml")
    world = World(scenario, source="s.yaml")
    radio, ue = world.radio, world.devices[0]
    carrier = radio.carrier_for("uplink")
    p_max = radio.profile.ue_tx_power_w
    _, psd, _ = radio.link_now(ue, world.bs)
    rbs = 0.5 * carrier.num_rbs
    rate = (
        float(carrier.efficiency(np.array([psd * 0.05 / p_max]))[0])
        * rbs
        * carrier.rb_bandwidth_hz
        * carrier.time_fraction
    )
    assert world.states.expected_rate_bps(ue, "uplink", 0.5, 0.05) == pytest.approx(rate, rel=1e-12)
    world.close()
    result = run(scenario, "s.yaml")
    up = result.transfers[result.transfers.kind == "model_up"]
    assert list(up["src"]) == ["ue0", "ue0"]  # (one client a round)
    assert np.allclose(up["airtime_s"], up["size_bits"] / rate, rtol=1e-9)
    assert np.allclose(up["rb_subframes"], rbs * up["airtime_s"] / 1e-3, rtol=1e-9)


def test_a_power_on_a_fixed_rate_link_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "lab.py").write_text(FIXED)
    data = tiny_scenario(
        plugins=[str(tmp_path / "lab.py")],
        policy={"name": "fixed_share", "options": {"power_w": 0.1}},
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lab.py" in err[0] and "no transmit power" in err[0], err


def test_a_wrong_decision_is_one_line_naming_the_plugin(tmp_path, capsys):
    (tmp_path / "lab.py").write_text(FIXED)
    data = tiny_scenario(plugins=[str(tmp_path / "lab.py")], policy={"name": "stranger"})
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lab.py" in err[0] and "chosen twice" in err[0], err


@pytest.mark.parametrize(
    ("section", "key", "words"),
    [
        ({"policy": {"name": "fedcs"}}, "policy.name", "set algorithm.deadline_s"),
        ({"policy": {"name": "nope"}}, "policy.name", "best_channel"),
        (
            {"policy": {"name": "fedcs", "options": {"overhead": 1}}},
            "policy: options.overhead",
            "overhead_s",
        ),
        (
            {"policy": {"name": "best_channel"}, "algorithm": {"name": "fedzkt"}},
            "policy.name",
            "does not take a resource policy",
        ),
        (
            {"policy": {"name": "fedcs"}, "algorithm": {"name": "fedasync"}},
            "policy.name",
            "'fedasync' has none",
        ),
    ],
)
def test_bad_policy_sections_are_one_line_with_the_key_path(tmp_path, capsys, section, key, words):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(**section)))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and key in err[0] and words in err[0], err


class _States:
    """Device states of five devices with given update and upload times, a download of
    1 s to each alone (unicast: n s to n at once)."""

    def __init__(self, update, upload):
        self.update, self.upload = update, upload

    def expected_time_s(self, device, bits, direction="uplink", share=1.0, power_w=None):
        if direction == "downlink":
            return 1.0 / share
        return self.upload[device.index]

    def compute_time_s(self, device, flops, samples=None, frequency_hz=None):
        return self.update[device.index]

    def shares_bandwidth(self, direction="uplink"):
        return True


def _nodes(n):
    from netfl.core.nodes import ComputeProfile, Node

    profile = ComputeProfile("p", 1e9, 1.0, 0.5, 1.0, 1.0)
    return [Node(f"ue{i}", "pue", i, np.zeros(2), profile) for i in range(n)]


def test_fedcs_selects_greedily_within_the_deadline_by_hand():
    """Nishio & Yonetani's Algorithm 2 on five devices, every one asked (count = 5),
    updates (4, 1, 2, 8, 3) s, uploads (1, 2, 1, 1, 3) s, unicast downloads n s to n
    devices, deadline 12 s. Step by step (T^d + Θ' of each addition, the least first):
    ue1: T^d 1 + Θ 1+2=3 → 4 < 12, kept (Θ=3); ue2: T^d 2 + Θ 3+1 = 4 → 6, kept (Θ=4);
    ue0: T^d 3, Θ 4+1+0 = 5 → 8, kept (Θ=5); ue4: T^d 4, Θ 5+3 = 8 → 12, not < 12,
    dropped; ue3: T^d 4, Θ 5+1+3 = 9 → 13, dropped."""
    from netfl.core.rng import Streams
    from netfl.policies import POLICIES, RoundWork

    nodes = _nodes(5)
    fedcs = POLICIES["fedcs"](
        POLICIES["fedcs"].Config(), _States([4, 1, 2, 8, 3], [1, 2, 1, 1, 3]), Streams(0)
    )
    work = RoundWork(lambda d: 1.0, lambda d: 1.0, lambda d: 1.0, lambda d: 1.0, deadline_s=12.0)
    decision = fedcs.decide(0, nodes, 5, work)
    assert [d.name for d in decision.participants] == ["ue0", "ue1", "ue2"]
    expected = {d: decision.allocations[d].expected_time_s for d in ("ue0", "ue1", "ue2")}
    assert expected == {"ue1": 3 + 3, "ue2": 3 + 4, "ue0": 3 + 5}
    # a deadline one second longer takes ue4 too (T^d 4 + Θ 8 = 12 < 13)
    longer = RoundWork(lambda d: 1.0, lambda d: 1.0, lambda d: 1.0, lambda d: 1.0, deadline_s=13.0)
    assert [d.name for d in fedcs.decide(0, nodes, 5, longer).participants] == [
        "ue0",
        "ue1",
        "ue2",
        "ue4",
    ]


def test_fedcs_beats_fedlim_at_the_same_deadline(tmp_path):
    """Three devices on 5G links and three on 3G, a deadline between the two groups'
    round times: FedLim (``random`` with the deadline) sends all six and the 3G ones are
    cut late; FedCS expects them late and leaves them out, so none of its participants is
    late and every round aggregates the three 5G updates."""
    groups = [{"count": 3, "link_profile": "5g"}, {"count": 3, "link_profile": "3g"}]
    base = tiny_scenario(
        devices={"count": 6, "groups": groups},
        cell={"link": {"mode": "fixed_rate"}},
        model={"name": "2nn"},
        training={"rounds": 2, "batch_size": 32},
    )
    free = _run(tmp_path, base).tables["policy"]
    fast = free[free.device.isin(["ue0", "ue1", "ue2"])]["actual_time_s"].max()
    slow = free[free.device.isin(["ue3", "ue4", "ue5"])]["actual_time_s"].min()
    assert fast < slow
    deadline = {"name": "fedavg", "deadline_s": float((fast + slow) / 2)}
    lim = _run(tmp_path, {**base, "algorithm": deadline}).rounds
    cs = _run(tmp_path, {**base, "algorithm": deadline, "policy": {"name": "fedcs"}})
    assert (lim["clients_late"] == 3).all() and (lim["clients_arrived"] == 3).all()
    assert (cs.rounds["clients_late"] == 0).all() and (cs.rounds["clients_arrived"] == 3).all()
    table = cs.tables["policy"]
    assert set(table.loc[table.selected, "device"]) == {"ue0", "ue1", "ue2"}
    assert (cs.rounds["round_time_s"] < lim["round_time_s"]).all()


def test_round_robin_takes_turns_and_resumes_from_a_checkpoint(tmp_path):
    """Two at a time among six: rounds take (ue0, ue1), (ue2, ue3), (ue4, ue5), (ue0,
    ue1), (ue2, ue3); a run killed after round 3 (its checkpoint at that round's end) and
    resumed continues the turns from the pointer in the checkpoint and writes the very
    tables of a run straight through."""
    from netfl.output.rundir import write_run
    from netfl.sim.checkpoint import load_checkpoint

    class Killed(Exception):
        pass

    def kill_after_3(row):
        if row["round"] == 3:
            raise Killed()

    scenario = parse_scenario(
        tiny_scenario(
            devices={"count": 6},
            algorithm={"name": "fedavg", "fraction": 0.34},
            training={"rounds": 5},
            policy={"name": "round_robin"},
            outputs={"checkpoint_every": 2, "figures": False, "progress": False},
        )
    )
    whole = write_run(run(scenario), tmp_path / "whole", figures=False)
    table = pd.read_parquet(whole / "policy.parquet")
    picked = table[table.selected].groupby("round")["device"].apply(list).tolist()
    assert picked == [
        ["ue0", "ue1"],
        ["ue2", "ue3"],
        ["ue4", "ue5"],
        ["ue0", "ue1"],
        ["ue2", "ue3"],
    ]
    run_dir = tmp_path / "killed"
    run_dir.mkdir()
    with pytest.raises(Killed):
        run(scenario, on_round=kill_after_3, run_dir=run_dir)
    saved = load_checkpoint(run_dir)  # (at round 3's end: it chose ue0, ue1)
    assert saved["next_round"] == 4 and saved["policy"]["policy"] == {"pointer": 2}
    resumed = write_run(run(scenario, run_dir=run_dir, resume=True), tmp_path / "r", figures=False)
    for name in ("policy", "transfers", "computes"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(resumed / f"{name}.parquet"), pd.read_parquet(whole / f"{name}.parquet")
        )
    assert (resumed / "rounds.csv").read_bytes() == (whole / "rounds.csv").read_bytes()


def test_best_channel_takes_the_fastest_expected_uplinks(tmp_path):
    """The chosen devices' expected uplink rates are all at least every other
    candidate's (at the equal share), and on this cell that is the nearest ones."""
    data = tiny_scenario(
        cell=OFDMA,
        devices={"count": 8},
        algorithm={"name": "fedavg", "fraction": 0.5},
        policy={"name": "best_channel"},
        training={"rounds": 1},
    )
    from netfl.sim.world import World

    scenario = parse_scenario(data, "s.yaml")
    world = World(scenario, source="s.yaml")
    rates = {d.name: world.states.expected_rate_bps(d, "uplink", 0.25) for d in world.devices}
    distance = {d.name: float(np.hypot(*d.position_m)) for d in world.devices}
    world.close()
    table = run(scenario, "s.yaml").tables["policy"]
    chosen = set(table.loc[table.selected, "device"])
    assert len(chosen) == 4
    assert min(rates[d] for d in chosen) >= max(rates[d] for d in rates if d not in chosen)
    assert max(distance[d] for d in chosen) <= min(distance[d] for d in rates if d not in chosen)
    assert np.isfinite(table.loc[table.selected, "expected_time_s"]).all()


def test_an_installed_packages_policy_needs_no_plugins_key(tmp_path, monkeypatch, capsys):
    import importlib

    from netfl.loading import plugins

    pkg = tmp_path / "epplug_policy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(FIXED)
    info = tmp_path / "epplug_policy-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: epplug_policy\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[netfl.plugins]\npol = epplug_policy\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugins, "_PLUGIN_ENTRIES", set())
    importlib.invalidate_caches()
    data = tiny_scenario(policy={"name": "fixed_share", "options": {"share": 0.25}})
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 0
    table = pd.read_parquet(tmp_path / "out" / "policy.parquet")
    assert (table["share"] == 0.25).all()
    capsys.readouterr()
    assert main(["list", "policies"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "fixed_share" in x)
    assert "[entry point pol = epplug_policy (epplug_policy)]" in line, line


def test_device_states_answer_on_every_radio():
    """Fixed rate: no SNR, the profile's rate × share; OFDMA: the coverage SNR and a
    rate that grows with the share; the last transfer is the record's."""
    from netfl.sim.world import World

    for cell, snr_finite in (({"link": {"mode": "fixed_rate"}}, False), (OFDMA, True)):
        scenario = parse_scenario(tiny_scenario(cell=cell), "s.yaml")
        world = World(scenario, source="s.yaml")
        ue, states = world.devices[0], world.states
        assert math.isfinite(states.mean_snr_db(ue)) is snr_finite
        half, full = (states.expected_rate_bps(ue, "uplink", s) for s in (0.5, 1.0))
        assert 0 < half < full
        assert states.expected_time_s(ue, 1e6, "uplink", 1.0) == pytest.approx(1e6 / full)
        assert states.last_transfer(ue) is None
        assert states.battery_j(ue) != states.battery_j(ue)  # (NaN: no battery)
        if snr_finite:
            table = world.radio.coverage(world.bs, [ue])
            assert states.mean_snr_db(ue) == pytest.approx(float(table["uplink_snr_db"][0]))
            assert states.power_class_w(ue) == world.radio.profile.ue_tx_power_w
        world.close()
    # a network: the SINR over the serving cell, as its coverage table has it
    from netfl.loading.scenarios import load_scenario

    world = World(load_scenario("scenarios/network_7sites.yaml", ["learning.mode=timing"]))
    table = world.radio.coverage(world.bs, world.devices[:3]).set_index("device")
    with world.radio.interference.at_full_load():  # (coverage's SINR under activity)
        for ue in world.devices[:3]:
            snr = world.states.mean_snr_db(ue)
            assert snr == pytest.approx(table.loc[ue.name, "uplink_snr_db"], abs=1e-9)
    for ue in world.devices[:3]:  # (now: no other cell transmits, a higher SINR)
        assert world.states.mean_snr_db(ue) >= table.loc[ue.name, "uplink_snr_db"]
        assert world.states.expected_rate_bps(ue, "uplink", 0.5) > 0
    world.close()


def test_the_last_transfer_and_the_energy_are_the_records():
    """After a round, a device's last upload and download are its records (rate = bits /
    duration), its energy spent is its meter's, and its compute speed is its profile's."""
    from netfl.algorithms.fedavg import FedAvg
    from netfl.loading.scenarios import algorithm_config
    from netfl.sim.runner import simulate_round
    from netfl.sim.world import World

    scenario = parse_scenario(tiny_scenario(cell=OFDMA), "s.yaml")
    world = World(scenario)
    simulate_round(world, FedAvg(world, algorithm_config(scenario)), 0)
    frame = world.recorder.transfers_frame()
    for ue in world.devices:
        for direction, kind, end in (
            ("uplink", "model_up", "src"),
            ("downlink", "model_down", "dst"),
        ):
            row = frame[(frame.kind == kind) & (frame[end] == ue.name)].iloc[-1]
            seen = world.states.last_transfer(ue, direction)
            assert seen.duration_s == row.duration_s and seen.end_s == row.end_s
            assert seen.rate_bps == pytest.approx(row.delivered_bits / row.duration_s, rel=1e-12)
        assert world.states.energy_spent_j(ue) == ue.energy.total_j > 0
        assert world.states.compute_flops_per_s(ue) == pytest.approx(
            ue.compute.effective_flops_per_s, rel=1e-12
        )
    world.close()


def test_the_timeline_draws_an_upload_as_high_as_its_share(tmp_path):
    """The per-device timeline scales each upload bar to the share the policy gave."""

    from netfl.output import timeline_figures

    (tmp_path / "lab.py").write_text(FIXED)
    data = tiny_scenario(
        plugins=[str(tmp_path / "lab.py")],
        policy={"name": "fixed_share", "options": {"share": 0.25}},
        training={"rounds": 1},
    )
    result = _run(tmp_path, data)
    heights = []
    real = timeline_figures.plt.subplots

    def spy(*args, **kw):
        fig, ax = real(*args, **kw)
        original = ax.broken_barh

        def barh(spans, yrange, **style):
            if style.get("label") == "upload":
                heights.append(yrange[1])
            return original(spans, yrange, **style)

        ax.broken_barh = barh
        return fig, ax

    timeline_figures.plt.subplots = spy
    try:
        path = timeline_figures.device_timeline(
            result.rounds,
            result.transfers,
            result.computes,
            None,
            ["ue0", "ue1", "ue2", "ue3"],
            tmp_path,
            policy=result.tables["policy"],
        )
    finally:
        timeline_figures.plt.subplots = real
    assert path is not None and path.exists()
    assert heights and all(h == pytest.approx(0.7 * 0.25) for h in heights)


def test_hierfavg_honours_a_policys_shares_at_every_edge_round(tmp_path):
    """HierFAVG's clients hold their grant through their κ2 edge rounds: on dedicated
    fixed-rate links every edge upload takes S/(b·R); the table has their times."""
    (tmp_path / "lab.py").write_text(FIXED)
    data = tiny_scenario(
        plugins=[str(tmp_path / "lab.py")],
        cell={"link": {"mode": "fixed_rate"}},
        devices={"count": 3, "link_profile": "4g_lte"},
        algorithm={"name": "hierfavg", "kappa2": 2},
        policy={"name": "fixed_share", "options": {"share": 0.25}},
    )
    result = _run(tmp_path, data)
    up = result.transfers[result.transfers.kind == "model_up"]
    assert len(up) == 3 * 2 * 2  # (3 clients, 2 edge rounds, 2 cloud rounds)
    assert np.allclose(up["duration_s"], up["size_bits"] / (0.25 * 5e6), rtol=1e-12)
    table = result.tables["policy"]
    assert (table["outcome"] == "arrived").all() and table["actual_time_s"].notna().all()
