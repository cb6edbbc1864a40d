import numpy as np
import pytest
from scipy import stats

from channel_models.pathloss import FreeSpace, LogDistance, distance_3d_m
from channel_models.tr38901 import UMa, UMi
from tests.channel_models import plain_formulas as plain

DISTANCES_M = [10.0, 18.0, 35.0, 80.0, 150.0, 250.0, 600.0, 1200.0, 3000.0]
FC_HZ = [0.9e9, 3.5e9, 6e9]


def test_log_distance_is_feddif_eq8():
    law = LogDistance(beta0_db=-30, kappa=3.75, d0_m=1, height_tx_m=23.5, height_rx_m=0)
    got = law.mean_loss_db(np.array(DISTANCES_M))
    want = [plain.log_distance_loss_db(d) for d in DISTANCES_M]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_free_space_matches_friis():
    law = FreeSpace(2.4e9, height_tx_m=10, height_rx_m=1.5)
    d3 = distance_3d_m(np.array(DISTANCES_M), 10, 1.5)
    want = [plain.free_space_loss_db(d, 2.4e9) for d in d3]
    np.testing.assert_allclose(law.mean_loss_db(np.array(DISTANCES_M)), want, rtol=1e-12)
    # 1 km at 2 GHz: 98.47 dB (textbook value 32.45 + 20 log10(1 km) + 20 log10(2000 MHz))
    assert FreeSpace(2e9).mean_loss_db(np.array([1000.0]))[0] == pytest.approx(98.47, abs=0.01)


@pytest.mark.parametrize("fc", FC_HZ)
def test_tr38901_against_plain_formulas(fc):
    d = np.array(DISTANCES_M)
    np.testing.assert_allclose(
        UMa(fc, los=True).mean_loss_db(d), [plain.uma_los_db(x, fc) for x in d], rtol=1e-12
    )
    np.testing.assert_allclose(
        UMa(fc, los=False).mean_loss_db(d), [plain.uma_nlos_db(x, fc) for x in d], rtol=1e-12
    )
    np.testing.assert_allclose(
        UMi(fc, los=True).mean_loss_db(d), [plain.umi_los_db(x, fc) for x in d], rtol=1e-12
    )
    np.testing.assert_allclose(
        UMi(fc, los=False).mean_loss_db(d), [plain.umi_nlos_db(x, fc) for x in d], rtol=1e-12
    )
    np.testing.assert_allclose(UMa(fc).los_probability(d), [plain.uma_p_los(x) for x in d])
    np.testing.assert_allclose(UMi(fc).los_probability(d), [plain.umi_p_los(x) for x in d])


def test_nlos_never_below_los():
    d = np.linspace(10, 5000, 500)
    for law in (UMa, UMi):
        assert np.all(law(3.5e9, los=False).mean_loss_db(d) >= law(3.5e9, los=True).mean_loss_db(d))


def test_los_state_drawn_with_table_probability():
    law = UMa(3.5e9, los=None)
    d = np.full(200_000, 60.0)
    loss = law.loss_db(d, np.random.default_rng(1))
    frac_los = np.mean(np.isclose(loss, law.los_loss_db(d)))
    assert frac_los == pytest.approx(plain.uma_p_los(60.0), abs=0.005)


def test_shadowing_is_lognormal_with_stated_std():
    law = UMa(3.5e9, los=False, shadowing=True)
    d = np.full(50_000, 200.0)
    excess = law.loss_db(d, np.random.default_rng(2)) - law.mean_loss_db(d)
    assert stats.kstest(excess, stats.norm(0, 6.0).cdf).pvalue > 1e-3


def test_distance_3d():
    assert distance_3d_m(3.0, 5.0, 1.0) == pytest.approx(5.0)


def test_indoor_links_shadow_with_the_o2i_sigma():
    """TR 38.901 Table 7.5-6: an O2I link's σ_SF is 7 dB (its outdoor state's 4 / 6 dB
    otherwise); the LOS state still picks the basic path loss."""
    law = UMa(6e9, los=None, shadowing=True)
    d = np.full(6, 150.0)
    u = np.array([0.0, 0.0, 0.999, 0.999, 0.0, 0.999])  # LOS, LOS, NLOS, NLOS, LOS, NLOS
    z = np.ones(6)
    o2i = np.array([False, True, False, True, True, True])
    got = law.loss_db_given(d, u, z, o2i)
    los, nlos = law.los_loss_db(d), law.nlos_loss_db(d)
    want = np.where(u < 0.5, los, nlos) + np.array([4.0, 7.0, 6.0, 7.0, 7.0, 7.0])
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_indoor_links_draw_their_los_state_at_the_outdoor_distance():
    """Table 7.4.2-1's note: an indoor UE's LOS probability is that of d_2D-out = d_2D −
    d_2D-in; the basic path loss stays at the whole distance (7.4-2). A uniform between
    P_LOS(100 m) and P_LOS(70 m) is NLOS outdoors at 100 m and LOS 30 m inside."""
    law = UMa(6e9, los=None)
    d = np.array([100.0, 100.0, 100.0])
    u = np.full(3, 0.5 * (plain.uma_p_los(100.0) + plain.uma_p_los(70.0)))
    inside = np.array([0.0, 30.0, 5.0])  # outdoors, 30 m inside, 5 m inside
    got = law.loss_db_given(d, u, None, inside > 0, inside)
    los, nlos = law.los_loss_db(d), law.nlos_loss_db(d)
    assert plain.uma_p_los(95.0) < u[0] < plain.uma_p_los(70.0)  # (so 5 m inside: NLOS)
    np.testing.assert_allclose(got, [nlos[0], los[1], nlos[2]], atol=1e-12)
    # without d_2D-in the same links are all NLOS; within 18 m of the wall always LOS
    np.testing.assert_allclose(law.loss_db_given(d, u, None, inside > 0), nlos, atol=1e-12)
    assert law.loss_db_given(np.array([40.0]), np.array([0.999]), None, None, [25.0])[
        0
    ] == pytest.approx(law.los_loss_db(np.array([40.0]))[0])
