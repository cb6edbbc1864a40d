"""Named overheads (cyclic prefix, reference signals, PDCCH, PUCCH): shares by hand,
their effect on rates and carriers, and the combinations refused."""

from __future__ import annotations

import numpy as np
import pytest

from channel_models.link_budget import shannon_efficiency
from channel_models.profile_catalog import get_channel_profile
from netfl import World, parse_scenario, run
from tests.conftest import tiny_scenario


def test_cp_and_rs_shares_by_hand_on_a_shannon_profile():
    p = get_channel_profile("feddif").with_overrides(
        overheads={"cyclic_prefix": "normal", "reference_signals": "lte"}
    )
    snr = np.array([10.0])
    raw = shannon_efficiency(snr)[0]
    cp = 1 - (2 * 160 + 12 * 144) / 30720  # TS 36.211 Table 6.12-1, 1 ms at 30.72 MHz
    assert p.efficiency_bps_per_hz(snr, "uplink")[0] == pytest.approx(raw * cp * (1 - 2 / 14))
    assert p.efficiency_bps_per_hz(snr, "downlink")[0] == pytest.approx(raw * cp * (1 - 16 / 168))
    np.testing.assert_array_equal(  # the fast path gives the same floats
        p.efficiency_for("uplink")(snr), p.efficiency_bps_per_hz(snr, "uplink")
    )
    ext = p.with_overrides(overheads={"cyclic_prefix": "extended"})
    assert ext.overhead("uplink") == pytest.approx(0.2)


def test_pdcch_symbols_take_their_share_of_the_nr_tbs_downlink_only():
    p = get_channel_profile("nr_fr1_uma")
    assert p.overheads == {"pdcch_symbols": 2}
    bare = p.with_overrides(overheads={})
    snr = np.array([3.0, 30.0, 300.0])
    np.testing.assert_allclose(
        p.efficiency_bps_per_hz(snr, "downlink"),
        bare.efficiency_bps_per_hz(snr, "downlink") * 11 / 13,
    )
    np.testing.assert_array_equal(
        p.efficiency_bps_per_hz(snr, "uplink"), bare.efficiency_bps_per_hz(snr, "uplink")
    )


def _one_upload(**link) -> float:
    data = tiny_scenario(
        devices={"count": 1, "layout": {"kind": "positions", "positions_m": [[100.0, 0.0]]}},
        cell={
            "radius_m": 300,
            "link": {"mode": "ofdma", "channel_profile": "lte_20mhz", "fading": "none", **link},
        },
        training={"rounds": 1},
        algorithm={"name": "transfer_test", "upload_bytes": 100_000},
    )
    up = run(parse_scenario(data)).transfers
    return float(up["airtime_s"].iloc[0])


def test_pucch_rbs_leave_the_uplink_carrier_fewer_rbs():
    world = World(
        parse_scenario(
            tiny_scenario(
                cell={
                    "radius_m": 300,
                    "link": {
                        "mode": "ofdma",
                        "channel_profile": "lte_20mhz",
                        "overheads": {"pucch_rbs": 8},
                    },
                }
            )
        )
    )
    assert world.radio.carriers["uplink"].num_rbs == 92
    assert world.radio.carriers["downlink"].num_rbs == 100
    assert _one_upload(overheads={"pucch_rbs": 8}) == pytest.approx(_one_upload() * 100 / 92)


@pytest.mark.parametrize(
    ("profile", "overheads", "message"),
    [
        ("lte_20mhz", {"cyclic_prefix": "normal"}, "transport block size"),
        ("lte_20mhz", {"pdcch_symbols": 2}, "does not depend on the control region"),
        ("feddif", {"pdcch_symbols": 4}, "integer 0..3"),
        ("feddif", {"pucch_rbs": 106}, "integer 0..105"),
        ("feddif", {"guard": 1}, "unknown key guard"),
    ],
)
def test_bad_overheads_are_one_line_errors_naming_the_key(profile, overheads, message):
    with pytest.raises(ValueError, match=message):
        get_channel_profile(profile).with_overrides(overheads=overheads)


def test_lumped_and_named_overheads_are_not_both_counted():
    p = get_channel_profile("feddif").with_overrides(phy_overhead={"uplink": 0.08, "downlink": 0.0})
    with pytest.raises(ValueError, match="counts the same resources"):
        p.with_overrides(overheads={"reference_signals": "nr"})
    with pytest.raises(ValueError, match="transport block size"):
        get_channel_profile("lte_20mhz").with_overrides(phy_overhead={"uplink": 0.1, "downlink": 0})
