"""Devices that leave mid-round and round deadlines (issue 33, item 3): a transfer or
compute step cut where it is, recorded with exactly what it delivered and spent; the
FedAvg family aggregates the updates that arrived."""

from __future__ import annotations

import pytest

from netfl.algorithms import FedAvg
from netfl.loading.scenarios import algorithm_config, parse_scenario
from netfl.sim.runner import run
from netfl.sim.world import World
from tests.conftest import assert_average_of_local_models, tiny_scenario


def _trace(tmp_path, spans: dict[int, tuple[float, float]], count: int) -> str:
    """A trace file: device i on during spans[i] (default: always, for the run)."""
    rows = ["device,on_s,off_s"]
    for i in range(count):
        on, off = spans.get(i, (0.0, 1e6))
        rows.append(f"{i},{float(on)!r},{float(off)!r}")
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def _scenario(tmp_path=None, spans=None, count=1, mode="timing", rounds=1, **sections):
    devices = {"count": count, **sections.pop("devices", {})}
    if spans is not None:
        devices["availability"] = {"model": "trace", "file": _trace(tmp_path, spans, count)}
    return parse_scenario(
        tiny_scenario(
            devices=devices,
            training={"rounds": rounds, "batch_size": 16, "lr": 0.05},
            learning={"mode": mode},
            **sections,
        )
    )


def _clock(s) -> dict[str, float]:
    """A one-device FedAvg round's phases by hand on dedicated fixed-rate links."""
    world = World(s)
    d = world.devices[0]
    size = world.model.size_bits
    flops = world.model.flops.train_per_sample * world.num_samples(d) * s.training.local_epochs
    down = size / d.link.downlink_bps
    comp = flops / d.compute.effective_flops_per_s
    out = {
        "size": size,
        "down": down,
        "comp": comp,
        "up": size / d.link.uplink_bps,
        "ul_bps": d.link.uplink_bps,
        "flops_per_s": d.compute.effective_flops_per_s,
        "tx_w": d.compute.tx_power_w,
        "busy_w": d.compute.busy_power_w,
    }
    world.close()
    return out


def test_a_device_leaving_mid_upload_records_exactly_the_bits_delivered(tmp_path):
    """Dedicated fixed-rate link: the upload starts after download + compute and the
    device leaves 40 % into it: the record ends at the departure with R_up·(t_off − t_up)
    bits and tx energy P_tx·(t_off − t_up); the round aggregates nothing."""
    c = _clock(_scenario())
    t_up = c["down"] + c["comp"]
    t_off = t_up + 0.4 * c["up"]
    result = run(_scenario(tmp_path, {0: (0.0, t_off)}))
    t = result.transfers.set_index("kind")
    up = t.loc["model_up"]
    assert up["outcome"] == "left" and up["end_s"] == pytest.approx(t_off, rel=1e-12)
    assert up["delivered_bits"] == pytest.approx(c["ul_bps"] * (t_off - t_up), rel=1e-9)
    assert up["delivered_bits"] == pytest.approx(0.4 * c["size"], rel=1e-9)
    assert up["size_bits"] == c["size"]
    assert up["tx_energy_j"] == pytest.approx(c["tx_w"] * (t_off - t_up), rel=1e-9)
    down = t.loc["model_down"]
    assert down["outcome"] == "delivered" and down["delivered_bits"] == c["size"]
    row = result.rounds.iloc[0]
    assert (row["clients_arrived"], row["clients_left"], row["clients_late"]) == (0, 1, 0)
    # rounds.csv: the bits that went on air; no model arrived up
    assert row["uplink_bits"] == up["delivered_bits"] and row["models_uplink"] == 0
    assert row["downlink_bits"] == c["size"] and row["models_downlink"] == 1


def test_a_device_leaving_mid_compute_stops_there_and_never_uploads(tmp_path):
    c = _clock(_scenario())
    t_off = c["down"] + 0.25 * c["comp"]
    result = run(_scenario(tmp_path, {0: (0.0, t_off)}))
    step = result.computes[result.computes["node"] == "ue0"].iloc[0]
    assert step["outcome"] == "left" and step["end_s"] == pytest.approx(t_off, rel=1e-12)
    assert step["flops"] == pytest.approx(c["flops_per_s"] * 0.25 * c["comp"], rel=1e-9)
    assert step["energy_j"] == pytest.approx(c["busy_w"] * 0.25 * c["comp"], rel=1e-9)
    assert "model_up" not in set(result.transfers["kind"])


def test_a_shared_medium_gives_the_leavers_share_to_the_others(tmp_path):
    """Shared fixed-rate downlink of capacity D below each device's own rate: two
    downloads share D/2 each; one device leaves at t_off with D/2·t_off bits, the other
    then gets all of D and ends at t_off + (S − D/2·t_off)/D."""
    probe = World(_scenario(count=2))
    dl = probe.devices[0].link.downlink_bps
    size = probe.model.size_bits
    probe.close()
    cap = 0.5 * dl
    link = {"mode": "fixed_rate", "shared": True}
    link |= {"uplink_capacity_mbps": 1000.0, "downlink_capacity_mbps": cap / 1e6}
    t_off = 0.3 * size / (cap / 2)
    s = _scenario(tmp_path, {0: (0.0, t_off)}, count=2, cell={"link": link})
    t = run(s).transfers
    down = t[t["kind"] == "model_down"].set_index("dst")
    assert down.loc["ue0", "outcome"] == "left"
    assert down.loc["ue0", "delivered_bits"] == pytest.approx(cap / 2 * t_off, rel=1e-9)
    assert down.loc["ue1", "outcome"] == "delivered"
    assert down.loc["ue1", "end_s"] == pytest.approx(
        t_off + (size - cap / 2 * t_off) / cap, rel=1e-9
    )


def test_a_multicast_receiver_that_leaves_keeps_what_it_had(tmp_path):
    c = _clock(_scenario())
    t_off = 0.5 * c["down"]
    s = _scenario(
        tmp_path, {1: (0.0, t_off)}, count=3, algorithm={"name": "fedavg", "downlink": "multicast"}
    )
    result = run(s)
    t = result.transfers
    down = t[t["kind"] == "model_down"].set_index("dst")
    assert down["multicast_group"].nunique() == 1
    assert down.loc["ue1", "outcome"] == "left"
    assert down.loc["ue1", "delivered_bits"] == pytest.approx(0.5 * c["size"], rel=1e-9)
    assert down.loc["ue1", "end_s"] == pytest.approx(t_off, rel=1e-12)
    for other in ("ue0", "ue2"):
        assert down.loc[other, "end_s"] == pytest.approx(c["down"], rel=1e-12)
    assert set(t[t["kind"] == "model_up"]["src"]) == {"ue0", "ue2"}
    assert result.rounds.iloc[0]["clients_left"] == 1


def _ofdma(profile: str, **link):
    return {"link": {"mode": "ofdma", "channel_profile": profile, "fading": "none", **link}}


@pytest.mark.parametrize("profile", ["nr_fr1_uma", "lte_20mhz"])
def test_an_ofdma_upload_cut_delivers_its_bits_until_then(tmp_path, profile):
    """Without fading a lone upload's bits grow linearly in its airtime: cut halfway
    through its airtime it has half of them, and half the tx energy of the uncut run
    (LTE: after the grant's start-up delay; cut within that delay, none). The uncut run
    is the reference."""
    full = run(_scenario(cell=_ofdma(profile)))
    up = full.transfers[full.transfers["kind"] == "model_up"].iloc[0]
    assert up["harq_retransmissions"] == 0
    t_off = up["end_s"] - 0.5 * up["airtime_s"]
    cut = run(_scenario(tmp_path, {0: (0.0, t_off)}, cell=_ofdma(profile)))
    rec = cut.transfers[cut.transfers["kind"] == "model_up"].iloc[0]
    assert rec["outcome"] == "left" and rec["end_s"] == pytest.approx(t_off, rel=1e-12)
    assert rec["delivered_bits"] == pytest.approx(0.5 * rec["size_bits"], rel=1e-6)
    assert rec["airtime_s"] == pytest.approx(0.5 * up["airtime_s"], rel=1e-6)
    assert rec["tx_energy_j"] < up["tx_energy_j"]
    if profile == "lte_20mhz":  # (within the start-up delay: nothing on air yet)
        early = up["start_s"] + 0.5 * (up["end_s"] - up["airtime_s"] - up["start_s"])
        cut = run(_scenario(tmp_path, {0: (0.0, early)}, cell=_ofdma(profile)))
        rec = cut.transfers[cut.transfers["kind"] == "model_up"].iloc[0]
        assert rec["outcome"] == "left" and rec["delivered_bits"] == 0.0
        assert rec["airtime_s"] == 0.0


def test_deadline_aggregates_exactly_the_clients_that_arrived_by_hand():
    """Four clients of different speeds; the deadline falls between the second and the
    third arrival: the two first are averaged (their local models trained here by hand,
    Σ n_k w_k / Σ n_k), the two others are cut at the deadline and recorded late."""
    groups = [{"count": 1, "link_profile": p} for p in ("5g", "wifi", "4g_lte", "3g")]

    def world_and_alg(**algorithm):
        s = parse_scenario(
            tiny_scenario(
                devices={"count": 4, "groups": groups},
                training={"rounds": 1, "batch_size": 16, "lr": 0.05},
                learning={"mode": "learn"},
                algorithm={"name": "fedavg", **algorithm},
            )
        )
        world = World(s)
        return world, FedAvg(world, algorithm_config(s))

    world, alg = world_and_alg()
    proc = world.env.process(alg.round(0))
    world.env.run(until=proc)
    t = world.recorder.transfers_frame()
    arrivals = t[t["kind"] == "model_up"].set_index("src")["end_s"].sort_values()
    world.close()
    assert list(arrivals.index[:2]) == ["ue0", "ue1"]
    deadline = 0.5 * (arrivals.iloc[1] + arrivals.iloc[2])

    world, alg = world_and_alg(deadline_s=float(deadline))
    start = {k: v.clone() for k, v in alg.global_state.items()}
    proc = world.env.process(alg.round(0))
    world.env.run(until=proc)
    summary = proc.value
    assert summary.extra == {
        "clients_arrived": 2.0,
        "clients_left": 0.0,
        "clients_late": 2.0,
        "clients_outage": 0.0,
    }
    t = world.recorder.transfers_frame()
    late = t[t["outcome"] == "late"]
    devices = set(late["src"]) | set(late["dst"])
    assert devices == {"bs", "ue2", "ue3"} and (late["end_s"] == deadline).all()
    assert (late["delivered_bits"] < late["size_bits"]).all()
    aggregate = alg.aggregation_flops(2) / world.bs.compute.effective_flops_per_s
    assert world.env.now == pytest.approx(deadline + aggregate, rel=1e-12)
    assert_average_of_local_models(world, alg.global_state, start, world.devices[:2])
    world.close()


def test_a_deadline_nobody_meets_keeps_the_model_and_devices_return_next_round():
    s = _scenario(count=2, mode="learn", algorithm={"name": "fedavg", "deadline_s": 1e-4}, rounds=2)
    result = run(s)
    assert list(result.rounds["clients_late"]) == [2.0, 2.0]
    assert list(result.rounds["clients_arrived"]) == [0.0, 0.0]
    downs = result.transfers[result.transfers["kind"] == "model_down"]
    assert len(downs) == 4 and (downs["outcome"] == "late").all()  # (both rounds: restored)
    assert result.rounds["accuracy"].nunique() == 1  # (nothing aggregated: the model stays)


@pytest.mark.parametrize(
    ("algorithm", "message"),
    [
        ({"name": "fedavg", "deadline_s": 0}, "algorithm.deadline_s"),
        ({"name": "hierfavg", "deadline_s": 1.0}, "runs its own rounds; a deadline applies"),
    ],
)
def test_bad_deadlines_are_one_line(algorithm, message):
    from netfl.errors import ScenarioError

    with pytest.raises(ScenarioError, match=message) as err:
        parse_scenario(tiny_scenario(algorithm=algorithm))
    assert len(err.value.lines()) == 1


def _churn(name: str, mode: str, **sections) -> object:
    """A scenario whose devices come and go every few milliseconds (Markov on/off):
    departures fall inside transfers and compute steps of every kind."""
    base = {
        "devices": {
            "count": 4,
            "availability": {"model": "markov", "mean_on_s": 0.02, "mean_off_s": 0.01},
            **sections.pop("devices", {}),
        },
        "training": {"rounds": 6, "batch_size": 16},
        "learning": {"mode": mode},
        "algorithm": {"name": name, **sections.pop("algorithm", {})},
    }
    return parse_scenario(tiny_scenario(**{**base, **sections}))


SPLIT = {
    "data": {
        "dataset": "synthetic",
        "synthetic": {"shape": [3, 8, 8], "num_samples": 150, "num_classes": 4},
        "partition": {"scheme": "iid"},
    },
    "model": {"name": "resnet9"},
}


@pytest.mark.parametrize(
    ("name", "mode", "sections"),
    [
        ("fedavg", "learn", {}),
        ("dfl", "learn", {}),
        ("hierfavg", "learn", {"algorithm": {"name": "hierfavg", "kappa2": 3}}),
        (
            "fedmd",
            "learn",
            {
                "model": {"name": "fcn"},
                "devices": {"models": ["fcn", "logreg"]},
                "algorithm": {
                    "name": "fedmd",
                    "public_dataset": "mnist5k",
                    "public_samples": 60,
                    "alignment_size": 20,
                },
            },
        ),
        ("vanilla_dpfl", "learn", SPLIT),
        ("local_loss_dpfl", "learn", SPLIT),
        ("ecofed", "timing", SPLIT),
        (
            "fedzkt",
            "learn",
            {
                "model": {"name": "fcn"},
                "devices": {"models": ["fcn", "logreg"]},
                "algorithm": {
                    "name": "fedzkt",
                    "server_iterations": 2,
                    "distill_batch_size": 8,
                    "generator_width": 4,
                },
            },
        ),
    ],
)
def test_every_algorithm_with_availability_survives_devices_leaving_mid_round(name, mode, sections):
    """Each round accounts for every client (arrived + left = selected); some leave in
    the middle of a transfer, recorded with fewer bits than sent; the run ends."""
    result = run(_churn(name, mode, **sections))
    rounds = result.rounds
    assert (rounds["clients_arrived"] + rounds["clients_left"] == rounds["num_clients"]).all()
    assert rounds["clients_left"].sum() > 0
    t = result.transfers
    cut = t[t["outcome"] == "left"]
    assert len(cut) > 0 and (cut["delivered_bits"] <= cut["size_bits"]).all()
    whole = t[t["outcome"] == "delivered"]
    assert (whole["delivered_bits"] == whole["size_bits"]).all()
    if mode == "learn":
        assert rounds["accuracy"].notna().all()


@pytest.mark.parametrize("name", ["fedavg", "hierfavg", "ecofed", "fedzkt", "fedmd"])
def test_a_bernoulli_round_with_nobody_on_is_empty_for_every_algorithm(name):
    sections = dict(SPLIT) if name == "ecofed" else {}
    devices = {"availability": {"model": "bernoulli", "p": 0.15}}
    if name in ("fedzkt", "fedmd"):
        sections = {"model": {"name": "fcn"}}
        devices["models"] = ["fcn", "logreg"]
    training = {"rounds": 20, "batch_size": 16}
    rounds = run(_churn(name, "timing", devices=devices, training=training, **sections)).rounds
    assert (rounds["num_clients"] == 0).any() and (rounds["num_clients"] > 0).any()


def _round_of(s):
    """Run round 0 of ``s`` through the Python API: (world, algorithm, summary)."""
    from netfl.algorithms import ALGORITHMS

    world = World(s)
    alg = ALGORITHMS[s.algorithm.name](world, algorithm_config(s))
    world.recorder.round = 0
    proc = world.env.process(alg.round(0))
    world.env.run(until=proc)
    return world, alg, proc.value


def test_multicast_receivers_leaving_keep_the_radio_counters_whole(tmp_path):
    """Two of three receivers leave mid-multicast: the BS's and the downlink's activity
    counters end at zero (a receiver's cut ends its own UE state only); when every
    receiver has left, the transmission stops there."""
    c = _clock(_scenario())
    multicast = {"name": "fedavg", "downlink": "multicast"}
    s = _scenario(
        tmp_path,
        {0: (0.0, 0.3 * c["down"]), 1: (0.0, 0.5 * c["down"])},
        count=3,
        algorithm=multicast,
    )
    world, _, _ = _round_of(s)
    assert world.radio.downlink_load() == 0.0 and world.radio.bs_meter.active == 0
    world.close()
    everyone = {i: (0.0, (0.2 + 0.1 * i) * c["down"]) for i in range(2)}
    world, _, summary = _round_of(_scenario(tmp_path, everyone, count=2, algorithm=multicast))
    t = world.recorder.transfers_frame()
    assert (t["outcome"] == "left").all() and len(t) == 2
    assert world.env.now < c["down"]  # (stopped when the last receiver left)
    assert t["delivered_bits"].max() == pytest.approx(0.3 * c["size"], rel=1e-9)
    assert world.radio.downlink_load() == 0.0 and world.radio.bs_meter.active == 0
    assert summary.extra["clients_left"] == 2
    world.close()


def test_ecofed_device_leaving_mid_compute_with_an_upload_on_air(tmp_path):
    """EcoFed streams activation uploads behind its forward passes: a device that leaves
    while both run loses both, and the simulation goes on (no unheeded failure)."""
    base = {"algorithm": {"name": "ecofed"}, **SPLIT}
    full = run(_scenario(count=2, **base))
    t, c = full.transfers, full.computes
    ups = t[(t["src"] == "ue0") & (t["kind"] == "activations")]
    steps = c[c["node"] == "ue0"]
    t_off = next(
        0.5 * (max(a.start_s, b.start_s) + min(a.end_s, b.end_s))
        for a in steps.itertuples()
        for b in ups.itertuples()
        if min(a.end_s, b.end_s) > max(a.start_s, b.start_s)
    )
    result = run(_scenario(tmp_path, {0: (0.0, t_off)}, count=2, **base))
    row = result.rounds.iloc[0]
    assert (row["clients_arrived"], row["clients_left"]) == (1, 1)
    cut = result.transfers[result.transfers["outcome"] == "left"]
    assert len(cut) == 1 and cut.iloc[0]["end_s"] == pytest.approx(t_off, rel=1e-12)


def test_a_deadline_during_the_backhaul_hop_is_kept():
    """A cloud server 1 s of backhaul away: a deadline that falls while the update
    crosses the backhaul (after its last bit left the air) ends the round there, the
    client late; one that falls in the downlink's backhaul likewise."""
    from tests.radio.test_multicell_radio import PLAIN_CELL, TWO_SITES

    cell = PLAIN_CELL
    network = {
        **TWO_SITES,
        "interference": {"model": "none"},
        "server_site": "cloud",
        "backhaul": {"latency_ms": 1000.0},
    }

    def scenario(**algorithm):
        return parse_scenario(
            tiny_scenario(
                cell=cell,
                network=network,
                devices={"count": 1},
                training={"rounds": 1},
                algorithm={"name": "fedavg", **algorithm},
            )
        )

    world, _, _ = _round_of(scenario())
    t = world.recorder.transfers_frame()
    air_end = t[(t["kind"] == "model_up") & (t["direction"] == "uplink")]["end_s"].iloc[0]
    world.close()
    for deadline in (air_end + 0.5, 0.5):
        world, alg, summary = _round_of(scenario(deadline_s=deadline))
        assert summary.extra["clients_late"] == 1 and summary.extra["clients_arrived"] == 0
        aggregate = alg.aggregation_flops(0) / world.bs.compute.effective_flops_per_s
        assert world.env.now == pytest.approx(deadline + aggregate, rel=1e-12)
        world.close()


def test_a_repeating_trace_leaves_where_it_really_turns_off():
    from netfl.core.onoff import TraceAvailability

    wraps = TraceAvailability(((0.0, 30.0), (70.0, 100.0)), 100.0)
    assert wraps.next_off(80.0) == pytest.approx(130.0)  # (100 is 0 of the next period)
    assert wraps.next_off(10.0) == 30.0 and wraps.next_off(50.0) is None
    adjacent = TraceAvailability(((0.0, 5.0), (5.0, 10.0)))
    assert adjacent.next_off(1.0) == 10.0
    assert TraceAvailability(((0.0, 100.0),), 100.0).next_off(5.0) is None
