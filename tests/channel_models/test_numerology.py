import pytest

from channel_models.numerology import (
    SUBFRAME_S,
    _nrb_table,
    num_resource_blocks,
    rb_bandwidth_hz,
    slot_duration_s,
    slots_per_subframe,
    subcarrier_spacing_hz,
)

# Spot values of 3GPP TS 38.101-1 Table 5.3.2-1 (FR1 N_RB)
SPOT = [
    (5e6, 0, 25),
    (10e6, 0, 52),
    (20e6, 0, 106),
    (50e6, 0, 270),
    (20e6, 1, 51),
    (40e6, 1, 106),
    (100e6, 1, 273),
    (20e6, 2, 24),
    (100e6, 2, 135),
]


@pytest.mark.parametrize("bw,mu,n", SPOT)
def test_rb_table_spot_values(bw, mu, n):
    assert num_resource_blocks(bw, mu) == n


def test_rbs_fit_inside_the_channel():
    for fr2 in (False, True):
        for scs_khz, row in _nrb_table(fr2).items():
            for bw_mhz, n in row.items():
                occupied = n * 12 * scs_khz * 1e3
                assert 0.75 * bw_mhz * 1e6 < occupied < bw_mhz * 1e6


@pytest.mark.parametrize(("bw", "mu", "n"), [(100e6, 3, 66), (400e6, 3, 264), (100e6, 2, 132)])
def test_an_fr2_carrier_reads_ts_38_101_2(bw, mu, n):
    """Above 7.125 GHz the FR2 table applies: at 60 kHz and 100 MHz it differs from
    FR1's (132 against 135 RBs)."""
    assert num_resource_blocks(bw, mu, carrier_hz=28e9) == n
    with pytest.raises(KeyError, match="FR2"):
        num_resource_blocks(20e6, 3, carrier_hz=28e9)
    assert num_resource_blocks(100e6, 2, carrier_hz=3.5e9) == 135


def test_numerology():
    assert subcarrier_spacing_hz(0) == 15e3 and subcarrier_spacing_hz(2) == 60e3
    assert rb_bandwidth_hz(0) == 180e3  # FedDif: RB = 12 x 15 kHz
    assert SUBFRAME_S == 1e-3 and slots_per_subframe(1) == 2
    assert slot_duration_s(1) == 0.5e-3
    with pytest.raises(KeyError, match="valid MHz"):
        num_resource_blocks(7e6, 0)
