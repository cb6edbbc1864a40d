"""Protocol headers by packet size: by hand, and against the bytes ns-3's LENA put on air."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from channel_models.protocol_overhead import bytes_on_air, packet_overhead_bytes

FIXTURE = Path(__file__).resolve().parents[1] / "reference" / "ns3_lte_uplink.json"


def test_one_1000_byte_udp_datagram_by_hand():
    # IPv4 20 + UDP 8 + PDCP 2 + RLC UM 2 + MAC subheader 3 (a 1,032-byte SDU: 15-bit length)
    assert packet_overhead_bytes(1000) == 35
    # a 50-byte datagram: an 82-byte MAC SDU takes the 2-byte subheader
    assert packet_overhead_bytes(50) == 34
    assert packet_overhead_bytes(1000, "tcp", "ipv6") == 40 + 20 + 2 + 2 + 3


def test_a_payload_is_cut_into_datagrams_each_with_its_headers():
    # 2,500 bytes in 1,000-byte datagrams: 1,000 + 1,000 + 500, three sets of headers
    assert bytes_on_air(2500, 1000) == 2500 + 35 + 35 + 35
    assert bytes_on_air(2000, 1000) == 2000 + 2 * 35
    assert bytes_on_air(796_840, 1000) == 796_840 + 797 * 35
    with pytest.raises(ValueError, match="datagram_bytes"):
        bytes_on_air(10, 0)


def test_ns3_granted_at_least_the_headers_and_within_2_percent_more():
    """Single-UE runs with 1,000-byte datagrams: ns-3's granted bytes (grants × mean TB
    size) hold the payload and these headers, plus what this count leaves out —
    segmentation headers of SDUs split over TBs, padding of grants larger than the
    data: under 2 % for the 796,840-byte uploads (the 100 kB ones end in a partly
    used grant that weighs more)."""
    fixture = json.loads(FIXTURE.read_text())
    checked = 0
    for run in fixture["runs"]:
        ue = run["ues"][0]
        if not run["geometry"].startswith("single") or run["datagram_bytes"] != 1000:
            continue
        if not ue["complete"]:
            continue
        ns3 = ue["grants"] * ue["mean_tb_bytes"]
        ours = bytes_on_air(run["payload_bytes"], run["datagram_bytes"])
        assert ours <= ns3, run["geometry"]
        if run["payload_bytes"] == 796_840:
            assert ns3 <= 1.02 * ours, run["geometry"]
        checked += 1
    assert checked >= 6
