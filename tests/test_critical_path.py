"""The critical path of a round and its straggler, by hand on dedicated fixed-rate links."""

from __future__ import annotations

import pytest

from netfl import parse_scenario, run
from netfl.compute import get_compute_profile
from tests.conftest import tiny_scenario


def _two_devices(groups: list[dict], rounds: int = 2, local_epochs: int = 1):
    training = {"rounds": rounds, "local_epochs": local_epochs}
    devices = {"count": 2, "groups": groups}
    return run(parse_scenario(tiny_scenario(devices=devices, training=training)))


def test_the_3g_device_is_the_straggler_and_its_upload_the_step():
    """ue0 on 4G (5 / 20 Mbit/s), ue1 on 3G (0.4 / 3 Mbit/s): the round waits for ue1;
    its path is download S/3e6, compute F·n·E/rate, upload S/0.4e6, then the server's
    aggregation; the longest step is ue1's upload."""
    res = _two_devices([{"count": 1, "link_profile": "4g_lte"}, {"count": 1, "link_profile": "3g"}])
    size, flops = res.info["model_size_bits"], res.info["train_flops_per_sample"]
    rate = get_compute_profile("raspberry_pi_4").effective_flops_per_s
    n1 = int(res.devices.set_index("node").loc["ue1", "num_samples"])
    path = res.tables["critical_path"]
    for r in (0, 1):
        row = res.rounds.iloc[r]
        assert row["straggler"] == "ue1" and row["straggler_step"] == "upload"
        assert row["straggler_step_s"] == pytest.approx(size / 0.4e6, rel=1e-12)
        steps = path[path["round"] == r]
        assert list(steps["step"]) == ["download", "compute", "upload", "server_compute"]
        assert list(steps["node"])[:3] == ["ue1"] * 3
        want = [size / 3e6, flops * n1 / rate, size / 0.4e6]
        assert steps["duration_s"].iloc[:3].to_numpy() == pytest.approx(want, rel=1e-12)
        # contiguous, from the round's start to its end
        assert steps["start_s"].iloc[0] == pytest.approx(row["sim_time_s"] - row["round_time_s"])
        assert steps["end_s"].iloc[-1] == pytest.approx(row["sim_time_s"], rel=1e-12)
        gaps = steps["start_s"].to_numpy()[1:] - steps["end_s"].to_numpy()[:-1]
        assert (abs(gaps) < 1e-9).all()


def test_a_slow_computer_makes_compute_the_step():
    """Both on 5G, ue0 a Jetson, ue1 a Raspberry Pi training 40 epochs: ue1 holds the
    round up, in its compute."""
    res = _two_devices(
        [
            {"count": 1, "link_profile": "5g", "compute_profile": "jetson_nano"},
            {"count": 1, "link_profile": "5g", "compute_profile": "raspberry_pi_4"},
        ],
        rounds=1,
        local_epochs=40,
    )
    row = res.rounds.iloc[0]
    assert (row["straggler"], row["straggler_step"]) == ("ue1", "compute")
    compute = res.computes.query("node == 'ue1'")
    assert row["straggler_step_s"] == pytest.approx(
        float((compute["end_s"] - compute["start_s"]).sum()), rel=1e-12
    )


def test_the_timeline_keeps_the_stragglers_when_it_samples():
    from netfl.output.timeline_figures import timeline_devices

    names = [f"ue{i}" for i in range(100)]
    assert timeline_devices(names[:12], [], 30) == names[:12]
    shown = timeline_devices(names, ["ue57", "ue3", "ue57"], 10)
    assert len(shown) == 10 and {"ue57", "ue3"} <= set(shown)
    assert shown == sorted(shown, key=lambda n: int(n[2:]))  # name order (ue2 < ue10)
    assert shown[0] == "ue0" and shown[-1] == "ue99"


def test_every_run_draws_its_timeline_and_upload_cdf(tmp_path):
    from netfl.output.figures import result_figures

    res = _two_devices([{"count": 1, "link_profile": "4g_lte"}, {"count": 1, "link_profile": "3g"}])
    paths = {p.name: p for p in result_figures(res, tmp_path)}
    for name in ("device_timeline.png", "upload_cdf.png", "energy_per_device.png"):
        assert paths[name].stat().st_size > 10_000, name


@pytest.mark.parametrize(
    "algorithm",
    [
        {"name": "fedzkt", "server_iterations": 3, "distill_batch_size": 16, "generator_width": 8},
        {"name": "hierfavg", "kappa1": 1, "kappa2": 2},
    ],
)
def test_a_download_after_the_servers_work_follows_it_on_the_path(algorithm):
    """FedZKT sends each device its model after the server's distillation, HierFAVG's
    edges after their aggregation: the path walks back from a download through that
    work (it used to jump to the device's own earlier steps), contiguous from the
    round's start to its end."""
    network = (
        {
            "site_positions_m": [[0.0, 0.0], [500.0, 0.0]],
            "sectors": 1,
            "antenna": "omni",
            "server_site": "cloud",
        }
        if algorithm["name"] == "hierfavg"
        else None
    )
    sections = {"network": network, "cell": {"link": {"mode": "ofdma"}}} if network else {}
    res = run(
        parse_scenario(
            tiny_scenario(
                algorithm=algorithm,
                devices={"count": 4},
                training={"rounds": 1},
                learning={"mode": "timing"},
                **sections,
            )
        )
    )
    steps = res.tables["critical_path"]
    kinds = list(steps["step"])
    downloads = [k for k, s in enumerate(kinds) if s == "download" and k > 0]
    assert downloads, kinds
    for k in downloads:
        assert kinds[k - 1] in ("server_compute", "backhaul"), kinds
    row = res.rounds.iloc[0]
    assert steps["start_s"].iloc[0] == pytest.approx(row["sim_time_s"] - row["round_time_s"])
    assert steps["end_s"].iloc[-1] == pytest.approx(row["sim_time_s"], rel=1e-12)
    gaps = steps["start_s"].to_numpy()[1:] - steps["end_s"].to_numpy()[:-1]
    assert (abs(gaps) < 1e-9).all()


def test_a_download_waiting_for_a_promotion_does_not_follow_another_devices_steps():
    """ue1 (``huang2012_lte``) downloads only after its RRC promotion; ue0 on 5G finishes
    its round meanwhile. ue1's download has no recorded predecessor: the path is ue1's
    own steps and the aggregation — not ue0's steps with the BS, which set nothing."""
    groups = [
        {"count": 1, "compute_profile": "raspberry_pi_4", "link_profile": "5g"},
        {"count": 1, "compute_profile": "huang2012_lte", "link_profile": "4g_lte"},
    ]
    res = run(
        parse_scenario(
            tiny_scenario(
                devices={"count": 2, "groups": groups},
                model={"name": "logreg", "size_bits": 2e6},
                training={"rounds": 1},
            )
        )
    )
    steps = res.tables["critical_path"]
    assert list(steps["node"]) == ["ue1", "ue1", "ue1", "bs"]
    assert list(steps["step"]) == ["download", "compute", "upload", "server_compute"]
    promotion = get_compute_profile("huang2012_lte").rrc_promotion_s
    assert steps["start_s"].iloc[0] == pytest.approx(promotion)


@pytest.mark.parametrize("server_site", [0, "cloud"])
def test_a_networks_server_site_cells_are_the_server_on_the_path(server_site):
    """Uploads end at a cell of the server's site (``server_site: 0``) while the
    aggregation runs on the server: those cells are the server's, so the path walks back
    from the aggregation through the last upload to its device (it used to stop at the
    aggregation: no straggler in any round); the straggler is the device whose upload
    ended last, the path contiguous from the round's start."""
    network = {"site_positions_m": [[0.0, 0.0]], "server_site": server_site}
    res = run(
        parse_scenario(
            tiny_scenario(
                network=network,
                cell={"link": {"mode": "ofdma"}},
                devices={"count": 6},
                training={"rounds": 2},
            )
        )
    )
    path, transfers = res.tables["critical_path"], res.transfers
    for r in (0, 1):
        row = res.rounds.iloc[r]
        ups = transfers[(transfers["round"] == r) & (transfers["direction"] == "uplink")]
        last = ups.loc[ups["end_s"].idxmax(), "src"]
        assert row["straggler"] == last, (row["straggler"], last)
        steps = path[path["round"] == r]
        assert steps["start_s"].iloc[0] == pytest.approx(row["sim_time_s"] - row["round_time_s"])
        gaps = steps["start_s"].to_numpy()[1:] - steps["end_s"].to_numpy()[:-1]
        assert (abs(gaps) < 1e-9).all()
