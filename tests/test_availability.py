"""Client availability (issue 33, item 3, first part): who takes part in a round."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from netfl.core.onoff import MarkovOnOff, TraceAvailability
from netfl.errors import ScenarioError
from netfl.loading.scenarios import load_scenario, parse_scenario
from netfl.sim.runner import run
from netfl.sim.world import World
from tests.conftest import tiny_scenario


def test_the_markov_process_has_its_stationary_share_and_exponential_sojourns():
    """On/off periods are exponential with the configured means (Kolmogorov–Smirnov),
    the long-run share of time on is mean_on / (mean_on + mean_off), and the state at
    time 0 is drawn from that stationary distribution (binomial test over devices)."""
    mean_on, mean_off = 30.0, 70.0
    proc = MarkovOnOff(mean_on, mean_off, np.random.default_rng(1))
    on0, s = proc.switches(200_000.0)
    periods = np.diff(np.concatenate([[0.0], s]))[1:]  # (the first is a full one too)
    first_on = not on0  # periods[0] follows the first switch
    on_periods = periods[0 if first_on else 1 :: 2]
    off_periods = periods[1 if first_on else 0 :: 2]
    assert len(on_periods) > 1000 and len(off_periods) > 1000
    assert stats.kstest(on_periods, stats.expon(scale=mean_on).cdf).pvalue > 0.01
    assert stats.kstest(off_periods, stats.expon(scale=mean_off).cdf).pvalue > 0.01
    share = on_periods.sum() / (on_periods.sum() + off_periods.sum())
    assert share == pytest.approx(mean_on / (mean_on + mean_off), abs=0.02)
    starts = [
        MarkovOnOff(mean_on, mean_off, np.random.default_rng(k)).is_on(0.0) for k in range(2000)
    ]
    assert stats.binomtest(sum(starts), 2000, 0.3).pvalue > 0.01
    # is_on agrees with the switching instants, and next_switch is the next one
    t = float(s[10]) + 1e-9
    assert proc.is_on(t) == (on0 == (11 % 2 == 0)) and proc.next_switch(t) == s[11]


def test_a_trace_is_on_inside_its_intervals_only():
    trace = TraceAvailability(((0.0, 5.0), (10.0, 12.0)))
    assert [trace.is_on(t) for t in (0.0, 4.9, 5.0, 7.0, 10.0, 11.9, 12.0, 99.0)] == [
        True,
        True,
        False,
        False,
        True,
        True,
        False,
        False,
    ]


def _scenario(availability: dict | None = None, **sections):
    devices = {"count": 8, **({"availability": availability} if availability else {})}
    return parse_scenario(tiny_scenario(devices=devices, **sections))


def _participants(result) -> pd.DataFrame:
    """Each round's participants: the devices that downloaded the model."""
    t = result.transfers
    return t[t["kind"] == "model_down"][["round", "dst", "start_s"]]


def test_always_is_the_default_event_for_event():
    a = run(_scenario())
    b = run(_scenario({"model": "always"}))
    pd.testing.assert_frame_equal(a.transfers, b.transfers)
    pd.testing.assert_frame_equal(a.rounds, b.rounds)


def test_markov_availability_selects_only_devices_on_at_the_round_start():
    """Every participant is on when its round starts (the same process, rebuilt from
    the same stream), the others of the round are off; a round with nobody on waits for
    the first device to come back, and starts exactly then."""
    s = _scenario(
        {"model": "markov", "mean_on_s": 0.005, "mean_off_s": 0.05}, training={"rounds": 30}
    )
    result = run(s)
    check = World(s).availability  # (a fresh world: the processes from their streams)
    ends = [0.0, *result.rounds["sim_time_s"].tolist()]
    parts = _participants(result)
    names = [f"ue{i}" for i in range(8)]
    waited = 0
    for r in range(30):
        mine = parts[parts["round"] == r]
        start = float(mine["start_s"].min())
        chosen = set(mine["dst"])
        assert chosen, r
        assert all(check.timed[n].is_on(start) for n in chosen)
        assert not any(check.timed[n].is_on(start) for n in set(names) - chosen)  # fraction 1
        if start > ends[r] + 1e-12:  # nobody was on at the round's end before: it waited
            waited += 1
            assert not any(check.timed[n].is_on(ends[r]) for n in names)
            assert any(abs(check.timed[n].next_switch(ends[r]) - start) < 1e-12 for n in names)
    assert waited >= 1
    assert 0 < result.rounds["num_clients"].mean() < 8


def test_bernoulli_availability_takes_each_device_with_its_probability():
    s = _scenario({"model": "bernoulli", "p": 0.25}, training={"rounds": 200})
    counts = run(s).rounds["num_clients"]
    assert stats.binomtest(int(counts.sum()), 200 * 8, 0.25).pvalue > 0.01
    assert (counts == 0).any() or counts.min() >= 0  # (an empty round is recorded, not an error)


def test_a_trace_decides_who_takes_part(tmp_path):
    rows = ["device,on_s,off_s", *[f"{i},0,1000" for i in range(4)], "ue4,0,0.001", "5,0,0.001"]
    rows += ["6,0,1000", "7,0,1000"]
    (tmp_path / "trace.csv").write_text("\n".join(rows) + "\n")
    data = tiny_scenario(
        devices={"count": 8, "availability": {"model": "trace", "file": "trace.csv"}}
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    result = run(load_scenario(path))
    parts = _participants(result)
    assert set(parts[parts["round"] == 0]["dst"]) == {f"ue{i}" for i in (0, 1, 2, 3, 4, 5, 6, 7)}
    assert set(parts[parts["round"] == 1]["dst"]) == {f"ue{i}" for i in (0, 1, 2, 3, 6, 7)}
    (tmp_path / "trace.csv").write_text("device,on_s,off_s\n0,0,10\n")
    with pytest.raises(
        ScenarioError, match=r"devices\.availability\.file: .* no interval for device ue1"
    ):
        load_scenario(path)


@pytest.mark.parametrize(
    ("availability", "algorithm", "message"),
    [
        ({"model": "markov", "mean_on_s": 1.0}, "fedavg", "model 'markov' needs mean_off_s"),
        ({"model": "bernoulli", "p": 0.5, "mean_on_s": 1.0}, "fedavg", "mean_on_s does not apply"),
        ({"model": "bernoulli", "p": 1.5}, "fedavg", "devices.availability.p"),
        ({"model": "trace", "file": "nope.csv"}, "fedavg", "nope.csv: file not found"),
        ({"model": "bernoulli", "p": 0.5}, "fedswap", "does not apply device availability yet"),
    ],
)
def test_bad_availability_is_one_line(availability, algorithm, message):
    cell = {"link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}}  # (FedSwap's need)
    with pytest.raises(ScenarioError, match=message) as err:
        _scenario(availability, algorithm={"name": algorithm}, cell=cell)
    assert len(err.value.lines()) == 1


def _fedscale_trace(tmp_path, clients: dict) -> None:
    import pickle

    (tmp_path / "client_behave_trace").write_bytes(pickle.dumps(clients))


def test_fedscale_traces_repeat_and_map_clients_as_fedscale_does(tmp_path):
    """FedScale's availability format: a client is on during [active[k], inactive[k]]
    (both ends), time taken modulo finish_time; device i follows client i + 1 modulo
    the trace's clients (FedScale's client ids start at 1)."""
    clients = {
        "a": {"active": [0], "inactive": [1000], "finish_time": 1000, "duration": 1, "model": "x"},
        "b": {"active": [0.0, 0.02], "inactive": [0.001, 0.03], "finish_time": 0.05},
    }
    _fedscale_trace(tmp_path, clients)
    data = tiny_scenario(
        devices={"count": 4, "availability": {"model": "fedscale", "file": "client_behave_trace"}},
        training={"rounds": 12},
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    s = load_scenario(path)
    result = run(s)
    check = World(s).availability.timed
    # devices 0 and 2 follow client "b" (ids 1 and 3), devices 1 and 3 client "a"
    assert check["ue1"].intervals == check["ue3"].intervals == ((0.0, 1000.0),)
    b = check["ue0"]
    assert b.intervals == ((0.0, 0.001), (0.02, 0.03)) and b.period_s == 0.05
    assert [b.is_on(t) for t in (0.0, 0.001, 0.0011, 0.025, 0.05, 0.0705)] == [
        True,
        True,
        False,
        True,
        True,
        True,
    ]
    assert b.next_on(0.031) == pytest.approx(0.05) and b.next_on(0.01) == pytest.approx(0.02)
    parts = _participants(result)
    for r in range(12):
        mine = parts[parts["round"] == r]
        start = float(mine["start_s"].min())
        assert set(mine["dst"]) == {n for n in check if check[n].is_on(start)}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"not a pickle", "not a FedScale availability trace"),
        (None, "only plain data loads"),
        ({"c": {"active": [5], "inactive": [1], "finish_time": 10}}, "needs 0 ≤ active[k]"),
        ({"c": {"active": [1]}}, "needs active, inactive (lists) and finish_time"),
    ],
    ids=["garbage", "code", "backwards", "keys"],
)
def test_a_bad_fedscale_trace_is_one_line_and_runs_no_code(raw, message, tmp_path):
    """A pickle that names any class or function (the way a pickle runs code) is
    refused without running it."""
    import os
    import pickle

    if raw is None:

        class Evil:
            def __reduce__(self):
                return (os.system, ("touch " + str(tmp_path / "pwned"),))

        raw = pickle.dumps({"c": Evil()})
    if isinstance(raw, dict):
        raw = pickle.dumps(raw)
    (tmp_path / "trace.pkl").write_bytes(raw)
    data = tiny_scenario(
        devices={"count": 2, "availability": {"model": "fedscale", "file": "trace.pkl"}}
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert len(err.value.lines()) == 1 and message in str(err.value)
    assert not (tmp_path / "pwned").exists()


def test_markov_devices_and_bernoulli_rounds_draw_from_streams_of_their_own():
    """Groups mixing Bernoulli (devices 0-1, p = 1/2) and Markov availability (devices
    2-11, half of the time on): whether device 0 takes part in round k is independent
    of whether Markov device k starts on. (They drew from one stream: the two agreed
    in every round.)"""
    from netfl.sim.world import World

    markov = {"model": "markov", "mean_on_s": 1.0, "mean_off_s": 1.0}
    scenario = parse_scenario(
        tiny_scenario(
            devices={
                "count": 12,
                "availability": markov,
                "groups": [{"count": 2, "availability": {"model": "bernoulli", "p": 0.5}}],
            }
        )
    )
    world = World(scenario)
    try:
        avail, devices = world.availability, world.devices
        rounds = range(2, 12)
        bernoulli = [devices[0] in avail.available(k, devices) for k in rounds]
        markov_on = [avail.timed[devices[k].name].is_on(0.0) for k in rounds]
        assert 0 < sum(bernoulli) < len(rounds) and 0 < sum(markov_on) < len(rounds)
        assert bernoulli != markov_on
    finally:
        world.close()
