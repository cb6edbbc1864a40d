"""Fading drawn per link, the block's SNR, proportional fair and the success rule (issue 51).

With ``cell.link.fading_draw: per_link`` a link's fading gain in a block is a function of
the seed, the link and the block alone: ``states.block_snr_db`` sounds it and a transfer
starting in the block sees it (its record's mean SNR); the gains follow the law
(Kolmogorov–Smirnov) and are independent between links. Proportional fair (Yang et al.
2020) ranks by SNR(t)/SNR̄ with SNR̄ an exponential average, by hand; its averages
survive a checkpoint byte-identically. The success rule drops exactly the updates whose
upload's mean SINR is below θ."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from netfl.cli.app import main
from netfl.loading.scenarios import algorithm_config, parse_scenario
from netfl.policies import RoundWork
from netfl.sim.runner import run
from tests.conftest import tiny_scenario
from tests.policies.test_policies import _nodes, _States

_WORK = RoundWork(lambda d: 1.0, lambda d: 1.0, lambda d: 1.0, lambda d: 1.0)


def _cell(draw: str = "per_link", fading: str = "rayleigh", coherence_s: float = 1000.0) -> dict:
    return {
        "link": {
            "mode": "ofdma",
            "channel_profile": "feddif",
            "fading": fading,
            "coherence_time_s": coherence_s,
            "fading_draw": draw,
        }
    }


def _one_round(cell: dict, devices: int = 1):
    from netfl.algorithms.fedavg import FedAvg
    from netfl.sim.runner import simulate_round
    from netfl.sim.world import World

    scenario = parse_scenario(tiny_scenario(cell=cell, devices={"count": devices}), "s.yaml")
    world = World(scenario)
    sounded = {ue.name: world.states.block_snr_db(ue) for ue in world.devices}
    mean = {ue.name: world.states.mean_snr_db(ue) for ue in world.devices}
    simulate_round(world, FedAvg(world, algorithm_config(scenario)), 0)
    frame = world.recorder.transfers_frame()
    world.close()
    return sounded, mean, frame


def test_a_sounded_block_is_what_the_transfer_sees():
    """One device alone in a 1000 s block: its upload's mean SNR is the sounded SNR; the
    same upload without fading has the mean SNR, so the difference is the block's gain;
    fading drawn per transfer has no block state (NaN)."""
    sounded, mean, frame = _one_round(_cell())
    up = frame[frame.kind == "model_up"].iloc[0]
    assert up.mean_snr_db == pytest.approx(sounded[up.src], abs=1e-9)
    assert sounded[up.src] != pytest.approx(mean[up.src], abs=1e-3)  # (a faded block)
    _, _, flat = _one_round(_cell(fading="none"))
    assert flat[flat.kind == "model_up"].iloc[0].mean_snr_db == pytest.approx(
        mean[up.src], abs=1e-9
    )
    unsounded, _, _ = _one_round(_cell(draw="per_transfer"))
    assert all(math.isnan(v) for v in unsounded.values())


def test_a_links_gain_depends_on_the_seed_the_link_and_the_block_alone():
    """Two worlds of the same seed sound the same SNRs at the same instant, one after a
    round of transfers and one idle until then; the four devices' uploads in one round
    each see their own sounded block."""
    from netfl.algorithms.fedavg import FedAvg
    from netfl.sim.runner import simulate_round
    from netfl.sim.world import World

    sounded, _, frame = _one_round(_cell(), devices=4)
    for _, up in frame[frame.kind == "model_up"].iterrows():
        assert up.mean_snr_db == pytest.approx(sounded[up.src], abs=1e-6)
    scenario = parse_scenario(tiny_scenario(cell=_cell(coherence_s=1e-3), devices={"count": 4}))
    busy, idle = World(scenario), World(scenario)
    first = [busy.states.block_snr_db(d) for d in busy.devices]
    simulate_round(busy, FedAvg(busy, algorithm_config(scenario)), 0)
    idle.env.run(until=busy.env.now)
    assert busy.env.now > 1e-3  # (a later block than the first)
    after = [busy.states.block_snr_db(d) for d in busy.devices]
    assert after == [idle.states.block_snr_db(d) for d in idle.devices]
    assert after != first
    busy.close()
    idle.close()


def test_keyed_gains_follow_the_law_and_are_independent_between_links():
    from channel_models.fading import RayleighBlockFading
    from netfl.radio.link_fading import CHUNK_BLOCKS, LinkBlockFading

    lf = LinkBlockFading(RayleighBlockFading(coherence_time_s=1e-3), seed=7)
    a = lf.gains(lf.link_key("ue0", "bs"), 0, 4000)
    b = lf.gains(lf.link_key("ue1", "bs"), 0, 4000)
    up, down = a, lf.gains(lf.link_key("bs", "ue0"), 0, 4000)
    for g in (a, b, down):
        assert stats.kstest(g, "expon").pvalue > 1e-3
    assert abs(stats.pearsonr(a, b).statistic) < 0.06
    assert abs(stats.pearsonr(up, down).statistic) < 0.06  # (FDD: directions independent)
    # a window across a chunk's edge is the same blocks however it is asked for
    k0 = CHUNK_BLOCKS - 3
    assert np.array_equal(
        lf.gains(7, k0, 10), np.concatenate([lf.gains(7, k0, 3), lf.gains(7, k0 + 3, 7)])
    )
    assert lf.gain(7, (k0 + 4) * 1e-3 + 1e-4) == lf.gains(7, k0 + 4, 1)[0]


class _Sounded(_States):
    """Device states with given block and mean SNRs [dB] per round (a list per device)."""

    def __init__(self, block_db, mean_db):
        super().__init__([1.0] * len(mean_db), [1.0] * len(mean_db))
        self.block_db, self.mean_db, self.r = block_db, mean_db, 0

    def block_snr_db(self, device, direction="uplink"):
        return self.block_db[device.index][self.r]

    def mean_snr_db(self, device, direction="uplink"):
        return self.mean_db[device.index]


def test_proportional_fair_ranks_by_instantaneous_to_average_snr_by_hand():
    """Five devices: the ratio is the sounded SNR over the average before it (the mean
    SNR at first), the average then (1 − 1/t_c)·avg + snr/t_c in linear units."""
    from netfl.policies.proportional_fair_selection import ProportionalFair, ProportionalFairConfig

    nodes = _nodes(5)
    mean = [0.0, 10.0, 20.0, 5.0, 0.0]
    block = [[3.0, 0.0], [10.0, 13.0], [21.0, 20.0], [4.0, 9.0], [-3.0, 0.0]]
    states = _Sounded(block, mean)
    pf = ProportionalFair(ProportionalFairConfig(window_rounds=4), states, None)
    # round 0: ratios in dB 3, 0, 1, −1, −3 → ue0 and ue2
    assert [d.name for d in pf.decide(0, nodes, 2, _WORK).participants] == ["ue0", "ue2"]
    lin = lambda db: 10.0 ** (db / 10.0)  # noqa: E731
    avg = {f"ue{i}": 0.75 * lin(mean[i]) + 0.25 * lin(block[i][0]) for i in range(5)}
    assert pf.state_dict()["average"] == pytest.approx(avg, rel=1e-12)
    states.r = 1
    ratio = {f"ue{i}": lin(block[i][1]) / avg[f"ue{i}"] for i in range(5)}
    best = sorted(ratio, key=lambda k: -ratio[k])[:2]
    saved = pf.state_dict()
    chosen = pf.decide(1, nodes, 2, _WORK).participants
    assert sorted(d.name for d in chosen) == sorted(best) == ["ue1", "ue3"]
    # the averages are its state: restored, the same choice; others, another
    again = ProportionalFair(ProportionalFairConfig(window_rounds=4), states, None)
    again.load_state_dict(saved)
    assert again.decide(1, nodes, 2, _WORK).participants == chosen
    other = ProportionalFair(ProportionalFairConfig(window_rounds=4), states, None)
    other.load_state_dict({"average": {**saved["average"], "ue1": 1e6}})
    assert "ue1" not in [d.name for d in other.decide(1, nodes, 2, _WORK).participants]


def test_proportional_fair_resumes_its_averages_from_a_checkpoint(tmp_path):
    """A run killed after round 3 and resumed writes the very tables of a run straight
    through: the averages travel in the checkpoint."""
    from netfl.output.rundir import write_run
    from netfl.sim.checkpoint import load_checkpoint

    class Killed(Exception):
        pass

    def kill_after_3(row):
        if row["round"] == 3:
            raise Killed()

    scenario = parse_scenario(
        tiny_scenario(
            cell=_cell(coherence_s=0.02),
            devices={"count": 6},
            algorithm={"name": "fedavg", "fraction": 0.34},
            training={"rounds": 6},
            policy={"name": "proportional_fair", "outage_sinr_db": 12.0},
            outputs={"checkpoint_every": 2, "figures": False, "progress": False},
        )
    )
    whole = write_run(run(scenario), tmp_path / "whole", figures=False)
    run_dir = tmp_path / "killed"
    run_dir.mkdir()
    with pytest.raises(Killed):
        run(scenario, on_round=kill_after_3, run_dir=run_dir)
    saved = load_checkpoint(run_dir)
    assert len(saved["policy"]["policy"]["average"]) == 6
    resumed = write_run(run(scenario, run_dir=run_dir, resume=True), tmp_path / "r", figures=False)
    for name in ("policy", "transfers", "computes"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(resumed / f"{name}.parquet"), pd.read_parquet(whole / f"{name}.parquet")
        )
    assert (resumed / "rounds.csv").read_bytes() == (whole / "rounds.csv").read_bytes()


def test_the_success_rule_drops_exactly_the_updates_below_the_threshold(tmp_path):
    """θ between the uploads' SINRs: an update is lost iff its upload's mean SNR is below
    θ (policy outcome ``outage``, rounds.csv ``clients_outage``); θ above them all: no
    update is aggregated and the global model never moves."""
    from netfl.output.rundir import write_run

    base = tiny_scenario(cell=_cell(coherence_s=0.05), devices={"count": 6}, training={"rounds": 4})
    first = write_run(run(parse_scenario(base)), tmp_path / "a", figures=False)
    ups = pd.read_parquet(first / "transfers.parquet").query("kind == 'model_up'")
    theta = float(ups.mean_snr_db.median())
    ruled = write_run(
        run(parse_scenario({**base, "policy": {"outage_sinr_db": theta}})),
        tmp_path / "b",
        figures=False,
    )
    t = pd.read_parquet(ruled / "transfers.parquet").query("kind == 'model_up'")
    pd.testing.assert_frame_equal(t.reset_index(drop=True), ups.reset_index(drop=True))
    p = pd.read_parquet(ruled / "policy.parquet").query("selected")
    lost = dict(zip(zip(p["round"], p.device, strict=True), p.outcome == "outage", strict=True))
    below = dict(zip(zip(t["round"], t.src, strict=True), t.mean_snr_db < theta, strict=True))
    assert lost == below and 0 < sum(lost.values()) < len(lost)
    rounds = pd.read_csv(ruled / "rounds.csv")
    assert rounds.clients_outage.sum() == sum(lost.values())
    assert (rounds.clients_arrived + rounds.clients_outage == 6).all()


def test_no_update_passes_a_threshold_above_every_sinr():
    scenario = parse_scenario(
        tiny_scenario(
            cell=_cell(),
            learning={"mode": "learn"},
            training={"rounds": 2},
            policy={"outage_sinr_db": 60.0},
        )
    )
    result = run(scenario)
    assert (result.rounds["clients_arrived"] == 0).all()
    acc = result.rounds["accuracy"].tolist()
    assert acc[0] == acc[1]  # (the initial model, twice)


@pytest.mark.parametrize(
    ("section", "key", "words"),
    [
        ({"policy": {"name": "proportional_fair"}}, "policy.name", "fading_draw: per_link"),
        ({"policy": {"outage_sinr_db": 3.0}}, "policy.outage_sinr_db", "OFDMA"),
        (
            {
                "policy": {"outage_sinr_db": 3.0},
                "cell": _cell(),
                "algorithm": {"name": "hierfavg"},
            },
            "policy.outage_sinr_db",
            "does not apply the success rule",
        ),
    ],
)
def test_policy_sections_needing_a_channel_state_are_one_line(
    tmp_path, capsys, section, key, words
):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(**section)))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and key in err[0] and words in err[0], err


def test_a_sounded_block_is_what_the_upload_sees_on_a_network():
    """The same over a network's serving cells (interference at the load factor: the
    SINR does not move with the other cells' activity; one RB per transfer: the
    allocation SNR of one RB whatever the other transfers, as the sounding defines it)."""
    from netfl.algorithms.fedavg import FedAvg
    from netfl.loading.scenarios import load_scenario
    from netfl.sim.runner import simulate_round
    from netfl.sim.world import World

    scenario = load_scenario(
        "scenarios/network_7sites.yaml",
        [
            "learning.mode=timing",
            "cell.link.fading_draw=per_link",
            "cell.link.coherence_time_s=1000",
            "network.interference.model=load_factor",
            "cell.link.max_rbs_per_transfer=1",
        ],
    )
    world = World(scenario)
    sounded = {d.name: world.states.block_snr_db(d) for d in world.devices}
    mean = {d.name: world.states.mean_snr_db(d) for d in world.devices}
    simulate_round(world, FedAvg(world, algorithm_config(scenario)), 0)
    frame = world.recorder.transfers_frame()
    world.close()
    ups = frame[(frame.kind == "model_up") & frame.src.isin(list(sounded))]
    ups = ups[ups.end_s < 1000]  # (those within the first block: a deep fade lasts long)
    assert len(ups) >= 5
    for _, up in ups.iterrows():
        assert up.mean_snr_db == pytest.approx(sounded[up.src], abs=1e-6)
    assert max(abs(sounded[k] - mean[k]) for k in ups.src) > 0.5  # (faded blocks)
