"""Over-the-air aggregation (BAA, Zhu et al. TWC 2020): with noise and truncation off the
aggregate is FedAvg's and the upload lasts one update's symbols; its duration does not
depend on the device count; the aggregate's noise has the analytic variance c²/(2ρ0)
(a statistical test); a truncated device contributes nothing in its block; powers and
the receive SNR by hand; scenarios it cannot serve refused in one line."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import yaml
from scipy import stats

from netfl.algorithms.over_the_air import OtaConfig, OverTheAir, ota_estimate
from netfl.cli.app import main
from netfl.loading.scenarios import algorithm_config, parse_scenario
from netfl.sim.runner import run, simulate_round
from netfl.sim.world import World
from tests.conftest import tiny_scenario


def _cell(fading="none", coherence_s=1e-3):
    return {
        "link": {
            "mode": "ofdma",
            "channel_profile": "feddif",
            "fading": fading,
            "coherence_time_s": coherence_s,
        }
    }


def _scenario(count=4, fading="none", ota=None, **sections):
    algorithm = {"name": "fedavg"}
    if ota is not None:
        algorithm |= {"aggregation": "over_the_air", "over_the_air": ota}
    devices = {"count": count, **sections.pop("devices", {})}
    return parse_scenario(
        tiny_scenario(
            devices=devices,
            cell=_cell(fading),
            algorithm=algorithm,
            learning={"mode": "learn"},
            training={"rounds": 1, "batch_size": 16},
            **sections,
        )
    )


def _one_round(scenario):
    from netfl.algorithms.fedavg import FedAvg

    world = World(scenario)
    alg = FedAvg(world, algorithm_config(scenario))
    simulate_round(world, alg, 0)
    frame = world.recorder.transfers_frame()
    world.close()
    return alg, frame


def test_without_noise_and_truncation_it_is_fedavg_in_one_updates_time():
    digital, _ = _one_round(_scenario())
    analog, frame = _one_round(_scenario(ota={"gain_threshold": 0.0, "noise": False}))
    for k, v in digital.global_state.items():
        torch.testing.assert_close(analog.global_state[k], v, atol=1e-6, rtol=1e-5)
    up = frame[frame.kind == "model_up"]
    assert len(up) == 4 and up.start_s.nunique() == 1  # (all at once)
    carrier = analog.world.radio.carriers["uplink"]
    q = 64 * 10 + 10  # (logistic regression on the 8×8 digits)
    T = math.ceil(q / 2) / (carrier.num_rbs * carrier.rb_bandwidth_hz * carrier.time_fraction)
    assert up.duration_s.to_numpy() == pytest.approx(T, rel=1e-9)
    assert (up.delivered_bits == up.size_bits).all()


def test_the_upload_lasts_as_long_whatever_the_device_count():
    durations = []
    for n in (2, 8):
        _, frame = _one_round(_scenario(count=n, fading="rayleigh", ota={"gain_threshold": 0.3}))
        durations.append(frame[frame.kind == "model_up"].duration_s.unique())
    assert len(durations[0]) == len(durations[1]) == 1
    assert durations[0][0] == pytest.approx(durations[1][0], rel=1e-12)


def test_the_aggregate_noise_has_the_analytic_variance():
    """Residual of the estimate over Σ w_k Δ_k, scaled by √(c²/(2ρ0)): N(0, 1)
    (Kolmogorov–Smirnov) and its variance within a χ² interval."""
    rng = np.random.default_rng(5)
    deltas = [{"w": torch.from_numpy(rng.normal(0, s, 4001))} for s in (0.1, 0.3, 0.2)]
    weights = np.array([0.5, 0.3, 0.2])
    active = np.ones((3, 2001), dtype=bool)
    rho0 = 7.0
    est, c = ota_estimate(deltas, weights, active, rho0, np.random.default_rng(9))
    exact = sum(w * d["w"] for w, d in zip(weights, deltas, strict=True))
    z = ((est["w"] - exact) / math.sqrt(c**2 / (2 * rho0))).numpy()
    assert stats.kstest(z, "norm").pvalue > 1e-3
    n = len(z)
    lo, hi = stats.chi2.ppf([0.0005, 0.9995], n) / n
    assert lo < np.mean(z**2) < hi
    # c: the largest device's RMS per complex symbol, √(2·mean((w_k Δ_k)²))
    assert c == pytest.approx(
        max(
            math.sqrt(2 * float(((w * d["w"]) ** 2).mean()))
            for w, d in zip(weights, deltas, strict=True)
        )
    )


def test_a_truncated_device_contributes_nothing_in_its_block():
    deltas = [{"w": torch.arange(8.0)}, {"w": 10.0 * torch.arange(8.0)}]
    active = np.array([[True] * 4, [False, False, True, True]])  # (symbols 0-1: values 0-3)
    est, _ = ota_estimate(deltas, np.array([0.5, 0.5]), active, 1.0, None)
    want = 0.5 * torch.arange(8.0)
    want[4:] += 0.5 * 10.0 * torch.arange(4.0, 8.0)
    torch.testing.assert_close(est["w"], want.to(est["w"].dtype))


def test_the_plan_truncates_per_block_and_inverts_the_channel_by_hand(monkeypatch):
    """Two devices over two fading blocks: ue1's gain is below g_th in the first one. ρ0 =
    min γ_k / E1(g_th); each device radiates P·ρ0/(γ_k |h|²) where it transmits, its
    airtime the blocks it transmits in; the symbols of the first block are missing
    ue1's."""
    from scipy.special import exp1

    world = World(parse_scenario(tiny_scenario(devices={"count": 2}, cell=_cell("rayleigh", 1e-4))))
    carrier = world.radio.carriers["uplink"]
    rate = carrier.num_rbs * carrier.rb_bandwidth_hz * carrier.time_fraction
    q = 2 * int(rate * 1.5e-4)  # (150 µs of symbols: blocks [0, 100) and [100, 150) µs)
    ota = OverTheAir(world, OtaConfig(gain_threshold=0.5), q)
    gains = {"ue0": np.array([1.0, 2.0]), "ue1": np.array([0.2, 0.8])}
    monkeypatch.setattr(ota, "gains", lambda r, d, t0, blocks, *_: gains[d.name][:blocks])
    plan = ota.plan(0, world.devices, 0.0)
    T = plan["duration_s"]
    assert T == pytest.approx(q / 2 / rate)
    gamma = np.array([ota.symbol_snr(d) for d in world.devices])
    assert plan["rho0"] == pytest.approx(gamma.min() / exp1(0.5))
    first = int(np.ceil(1e-4 / T * (q / 2)))  # (symbols in the first block, about)
    assert plan["active"][0].all()
    assert not plan["active"][1][: first - 1].any() and plan["active"][1][first + 1 :].all()
    P = world.radio.power_class_w(world.devices[0])
    span = np.array([1e-4, T - 1e-4])
    p0 = P * plan["rho0"] / (gamma[0] * gains["ue0"])
    p1 = np.array([0.0, P * plan["rho0"] / (gamma[1] * 0.8)])
    # (the mean power while it transmits, over the blocks it transmits in)
    assert plan["airtime_s"] == pytest.approx([T, T - 1e-4])
    assert plan["radiated_w"][0] == pytest.approx((p0 * span).sum() / T)
    assert plan["radiated_w"][1] == pytest.approx(p1[1])
    world.close()


@pytest.mark.parametrize(
    ("algorithm", "extra", "key", "words"),
    [
        ({"name": "dfl"}, {"cell": _cell()}, "algorithm.aggregation", "does not aggregate"),
        ({"name": "fedavg"}, {}, "algorithm.aggregation", "needs OFDMA cells"),
        (
            {"name": "fedavg"},
            {"cell": {**_cell(), "cues": {"density_per_km2": 10.0}}},
            "algorithm.aggregation",
            "cues",
        ),
        (
            {"name": "fedavg", "over_the_air": {"gain_threshold": 0.0}},
            {"cell": _cell("rayleigh")},
            "gain_threshold",
            "threshold > 0",
        ),
        (
            {"name": "fedavg", "uplink_codec": {"name": "fp16"}},
            {"cell": _cell()},
            "algorithm.aggregation",
            "no uplink_codec",
        ),
        (
            {"name": "fedavg", "over_the_air": {"gain_threshold": 1.5}},
            {"cell": _cell()},
            "gain_threshold",
            "every device is truncated",
        ),
        (
            {"name": "fedavg"},
            {"cell": _cell(), "policy": {"outage_sinr_db": 3.0}},
            "policy.outage_sinr_db",
            "unset it",
        ),
    ],
)
def test_what_it_cannot_serve_is_one_line(tmp_path, capsys, algorithm, extra, key, words):
    data = tiny_scenario(algorithm={**algorithm, "aggregation": "over_the_air"}, **extra)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and key in err[0] and words in err[0], err


def test_a_run_learns_over_the_air():
    result = run(_scenario(count=6, fading="rayleigh", ota={"gain_threshold": 0.1}))
    assert np.isfinite(result.rounds["accuracy"]).all() and result.rounds["accuracy"].iloc[-1] > 0.5


def test_a_device_that_left_before_the_slot_sends_nothing(tmp_path):
    """ue0 goes off after its training ends and before the analog slot starts: it is a
    client that left (rounds.csv), has no upload, and the others' slot goes on."""
    base = _scenario(count=3, ota={"gain_threshold": 0.0, "noise": False})
    first = run(base)
    t0 = float(first.transfers.query("kind == 'model_up'").start_s.min())
    trained = float(first.computes.query("node == 'ue0' and kind == 'train'").end_s.max())
    assert trained < t0  # (ue0 is not the last to finish: it waits for the slot)
    off = 0.5 * (trained + t0)
    (tmp_path / "trace.csv").write_text(f"device,on_s,off_s\n0,0.0,{off!r}\n1,0.0,1e6\n2,0.0,1e6\n")
    left = _scenario(
        count=3,
        ota={"gain_threshold": 0.0, "noise": False},
        devices={"availability": {"model": "trace", "file": str(tmp_path / "trace.csv")}},
    )
    result = run(left)
    ups = result.transfers[result.transfers.kind == "model_up"]
    assert "ue0" not in set(ups.src) and len(ups) == 2
    assert result.rounds["clients_left"].iloc[0] == 1


def test_each_device_radiates_what_inverts_its_channel(tmp_path):
    """No fading, no threshold, a profile whose modem draws what it radiates
    (yang2021_device): the device with the weakest channel radiates its power class P
    over T, each other one P·γ_min/γ_k — its record's tx energy."""
    s = _scenario(
        count=3,
        ota={"gain_threshold": 0.0, "noise": False},
        devices={"compute_profile": "yang2021_device"},
    )
    alg, frame = _one_round(s)
    world = World(s)
    ota = OverTheAir(world, OtaConfig(gain_threshold=0.0), alg.ota.num_values)
    gamma = {d.name: ota.symbol_snr(d) for d in world.devices}
    P = world.radio.power_class_w(world.devices[0])
    world.close()
    up = frame[frame.kind == "model_up"].set_index("src")
    T = float(up.duration_s.iloc[0])
    for name, g in gamma.items():
        assert up.loc[name, "tx_energy_j"] == pytest.approx(P * min(gamma.values()) / g * T)


# -- networks ---------------------------------------------------------------------------
#: two omni sites 500 m apart, deterministic path loss, no fading: cells 0 (the server's
#: site) and 1; two devices near each
NET_CELL = {
    "radius_m": 400,
    "link": {
        "mode": "ofdma",
        "channel_profile": "nr_fr1_uma",
        "pathloss": {"model": "log_distance", "beta0_db": -35.0, "kappa": 3.5},
        "shadowing": False,
        "fading": "none",
    },
}
NET_POSITIONS = [[-40.0, 0.0], [60.0, 30.0], [460.0, 0.0], [530.0, -50.0]]


def _network(interference, ota, sites=((0.0, 0.0), (500.0, 0.0)), positions=NET_POSITIONS):
    algorithm = {"name": "fedavg"}
    if ota is not None:
        algorithm |= {"aggregation": "over_the_air", "over_the_air": ota}
    return parse_scenario(
        tiny_scenario(
            cell=NET_CELL,
            network={
                "site_positions_m": [list(xy) for xy in sites],
                "sectors": 1,
                "antenna": "omni",
                "interference": interference,
            },
            devices={
                "count": len(positions),
                "layout": {"kind": "positions", "positions_m": positions},
            },
            algorithm=algorithm,
            learning={"mode": "learn"},
            training={"rounds": 1, "batch_size": 16},
        )
    )


def test_on_a_network_each_cell_aggregates_its_clients_and_the_server_adds_them():
    """Without interference, noise and truncation: the global model is FedAvg's; both
    cells' slots start together and last T; the far cell's share goes over its backhaul
    (one update's bits), the server's own cell sends none."""
    none = {"model": "none"}
    digital, _ = _one_round(_network(none, None))
    analog, frame = _one_round(_network(none, {"gain_threshold": 0.0, "noise": False}))
    for k, v in digital.global_state.items():
        torch.testing.assert_close(analog.global_state[k], v, atol=1e-6, rtol=1e-5)
    up = frame[frame.kind == "model_up"]
    air = up[up.direction == "uplink"]
    assert sorted(air.dst) == ["cell0", "cell0", "cell1", "cell1"]
    assert air.start_s.nunique() == 1 and air.end_s.nunique() == 1
    assert float(air.duration_s.iloc[0]) == pytest.approx(analog.ota.duration_s(), rel=1e-12)
    hop = up[up.direction == "backhaul"]
    assert list(hop.src) == ["cell1"] and list(hop.dst) == ["bs"]
    assert float(hop.start_s.iloc[0]) == pytest.approx(float(air.end_s.iloc[0]))
    assert float(hop.size_bits.iloc[0]) == float(air.size_bits.iloc[0])
    # (a client arrives with its cell's share: after the backhaul, as a digital upload)
    policy = run(_network(none, {"gain_threshold": 0.0, "noise": False})).tables["policy"]
    arrived = policy[policy.outcome == "arrived"].set_index("device").actual_time_s
    start = 0.0  # (round 0 decides at the start)
    assert arrived["ue0"] == arrived["ue1"] == pytest.approx(float(air.end_s.iloc[0]) - start)
    assert arrived["ue2"] == arrived["ue3"] == pytest.approx(float(hop.end_s.iloc[0]) - start)


def test_the_other_cells_clients_interfere_as_their_sum_by_hand(monkeypatch):
    """INR at each BS = Σ over the other cell's clients of (p̄_x / P)·γ_x→BS, their mean
    radiated power over T against the power class, each at its own SNR towards that BS
    (a separate path: the cell's link terms); each record's SINR, and the one the cell's
    estimate is drawn at, is ρ0_c/(1 + INR_c)."""
    import netfl.algorithms.over_the_air as ota_module

    drawn = []

    def estimate(deltas, weights, active, rho0, noise):
        drawn.append(rho0)
        return ota_estimate(deltas, weights, active, rho0, noise)

    monkeypatch.setattr(ota_module, "ota_estimate", estimate)
    s = _network({"model": "load_factor", "load": 0.5}, {"gain_threshold": 0.0, "noise": True})
    alg, frame = _one_round(s)
    world = World(s)
    ota = OverTheAir(world, OtaConfig(gain_threshold=0.0), alg.ota.num_values)
    net = world.radio
    clients = list(world.devices)
    slots = ota.cells_of(clients)
    assert [(c, ks) for c, _, _, ks in slots] == [(0, [0, 1]), (1, [2, 3])]
    plans = [ota.plan(0, [clients[k] for k in ks], 0.0, cell, node) for _, cell, node, ks in slots]
    inr = ota.interference(clients, slots, plans)
    P = net.power_class_w(clients[0])
    for (c, cell, node, _ks), plan, got in zip(slots, plans, inr, strict=True):
        want = 0.0
        for (c2, _, _, ks2), plan2 in zip(slots, plans, strict=True):
            if c2 == c:
                continue
            for j, k in enumerate(ks2):  # (no fading, no threshold: P·ρ0/γ over T)
                assert plan2["radiated_w"][j] == pytest.approx(
                    P
                    * plan2["rho0"]
                    / ota.symbol_snr(clients[k], net.cells[c2], net.cell_nodes[c2])
                )
                want += plan2["radiated_w"][j] / P * ota.symbol_snr(clients[k], cell, node)
        assert got == pytest.approx(want, rel=1e-9) and got > 0
        rows = frame[(frame.kind == "model_up") & (frame.dst == node.name)]
        assert rows.mean_snr_db.to_numpy() == pytest.approx(
            10 * math.log10(plan["rho0"] / (1 + want)), rel=1e-9
        )
        assert drawn[c] == pytest.approx(plan["rho0"] / (1 + want), rel=1e-9)
    world.close()


def test_a_cell_without_clients_adds_the_network_models_share():
    """Three sites; the round's clients are in cells 0 and 1, cell 2 serves a device that
    is not one: each slot's INR is the other slot's clients plus cell 2's share under
    the load factor — the network's uplink INR with only cell 2 on air."""
    positions = [*NET_POSITIONS, [250.0, 420.0]]
    s = _network(
        {"model": "load_factor", "load": 0.5},
        None,
        sites=((0.0, 0.0), (500.0, 0.0), (250.0, 433.0)),
        positions=positions,
    )
    world = World(s)
    net = world.radio
    assert [net.serving[d.name] for d in world.devices] == [0, 0, 1, 1, 2]
    ota = OverTheAir(world, OtaConfig(gain_threshold=0.0), 1000)
    clients = list(world.devices[:4])
    slots = ota.cells_of(clients)
    plans = [ota.plan(0, [clients[k] for k in ks], 0.0, cell, node) for _, cell, node, ks in slots]
    got = ota.interference(clients, slots, plans)
    P = net.power_class_w(clients[0])
    interference = net.interference
    only_cell2 = interference.eta["uplink"].copy()
    only_cell2[[0, 1]] = 0.0
    for (c, cell, node, _ks), inr in zip(slots, got, strict=True):
        clients_term = sum(
            plan["radiated_w"][j] / P * ota.symbol_snr(clients[k], cell, node)
            for (c2, _, _, ks2), plan in zip(slots, plans, strict=True)
            if c2 != c
            for j, k in enumerate(ks2)
        )
        eta, interference.eta = interference.eta, {**interference.eta, "uplink": only_cell2}
        quiet = interference.inr(c, clients[0], True)
        interference.eta = eta
        assert quiet > 0
        assert inr == pytest.approx(clients_term + quiet, rel=1e-9)
    world.close()


def test_cells_without_clients_interfere_as_the_network_says():
    """The term of the cells not in the slot is the network's interference model with
    those cells left out: all of it when none is left out, nothing when all are."""
    world = World(_network({"model": "load_factor", "load": 0.5}, None))
    interference = world.radio.interference
    ue = world.devices[0]
    assert interference.uplink_inr_without(0, []) == pytest.approx(interference.inr(0, ue, True))
    assert interference.uplink_inr_without(0, []) > 0
    assert interference.uplink_inr_without(0, [1]) == 0.0
    world.close()


def test_a_network_of_moving_devices_is_refused_in_one_line(tmp_path, capsys):
    data = tiny_scenario(
        cell={"link": NET_CELL["link"]},
        network={"sites": 7, "sectors": 1, "isd_m": 500},
        devices={"mobility": {"model": "constant_velocity", "speed_kmh": 30}},
        algorithm={"name": "fedavg", "aggregation": "over_the_air"},
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "static devices" in err[0], err
