"""The link test: every device's upload starts at the same instant, carries the payload,
and on a fixed-rate link takes exactly bits / rate; on a cell, farther devices finish
later."""

from __future__ import annotations

import numpy as np
import pytest

from channel_models import get_link_profile
from netfl.loading.scenarios import parse_scenario
from netfl.sim.runner import run
from tests.conftest import tiny_scenario


def _run(algorithm: dict, **sections):
    data = tiny_scenario(
        algorithm={"name": "transfer_test", **algorithm}, training={"rounds": 1}, **sections
    )
    return run(parse_scenario(data))


def test_uploads_start_together_and_take_bits_over_rate_on_a_fixed_link():
    result = _run({"upload_bytes": 125_000}, devices={"count": 4, "link_profile": "4g_lte"})
    up = result.transfers[result.transfers["kind"] == "test_up"]
    assert len(up) == 4 and set(up["src"]) == {f"ue{i}" for i in range(4)}
    assert (up["start_s"] == 0.0).all() and (up["size_bits"] == 1e6).all()
    rate = get_link_profile("4g_lte").uplink_bps
    np.testing.assert_allclose(up["end_s"], 1e6 / rate, rtol=1e-12)
    assert np.isnan(result.rounds["accuracy"]).all()


def test_a_download_first_delays_each_upload_to_its_download_end():
    result = _run({"upload_bytes": 1000, "download_bytes": 5000}, devices={"count": 3})
    t = result.transfers
    down = t[t["kind"] == "test_down"].set_index("dst")
    up = t[t["kind"] == "test_up"].set_index("src")
    assert (down["start_s"] == 0.0).all() and (down["size_bits"] == 40_000).all()
    for name in up.index:
        assert up.loc[name, "start_s"] == pytest.approx(down.loc[name, "end_s"], abs=1e-12)


def test_on_a_cell_farther_devices_finish_later():
    result = _run(
        {"upload_bytes": 200_000},
        devices={"count": 5, "layout": {"kind": "line", "start_m": [30, 0], "end_m": [250, 0]}},
        cell={
            "radius_m": 300,
            "link": {"mode": "ofdma", "channel_profile": "feddif", "fading": "none"},
        },
    )
    up = result.transfers[result.transfers["kind"] == "test_up"].sort_values("src")
    assert (up["start_s"] == 0.0).all()
    assert (np.diff(up["end_s"].to_numpy()) > 0).all()


def test_datagrams_carry_their_headers_on_air():
    result = _run({"upload_bytes": 2500, "datagram_bytes": 1000}, devices={"count": 1})
    up = result.transfers[result.transfers["kind"] == "test_up"]
    assert up["size_bits"].iloc[0] == 8 * (2500 + 3 * 35)  # IPv4+UDP+PDCP+RLC+MAC per packet
