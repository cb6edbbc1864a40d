import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from channel_models import (
    bps_to_mbps,
    db_to_linear,
    dbm_to_w,
    linear_to_db,
    mbps_to_bps,
    w_to_dbm,
)


def test_reference_values():
    assert dbm_to_w(30.0) == 1.0
    assert dbm_to_w(0.0) == 1e-3
    assert np.isclose(dbm_to_w(43.0), 19.952623149688797)  # BS 43 dBm ≈ 20 W
    assert db_to_linear(10.0) == 10.0
    assert np.isclose(db_to_linear(-30.0), 1e-3)
    assert mbps_to_bps(20) == 20e6


def test_vectorised():
    out = dbm_to_w(np.array([0.0, 10.0, 20.0]))
    assert out.shape == (3,)
    np.testing.assert_allclose(out, [1e-3, 1e-2, 1e-1])


@given(st.floats(min_value=-200, max_value=200))
def test_db_round_trips(x):
    assert np.isclose(linear_to_db(db_to_linear(x)), x, atol=1e-9)
    assert np.isclose(w_to_dbm(dbm_to_w(x)), x, atol=1e-9)


@given(st.floats(min_value=0, max_value=1e6))
def test_rate_round_trip(x):
    assert np.isclose(bps_to_mbps(mbps_to_bps(x)), x)
