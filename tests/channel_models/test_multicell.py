"""Multi-cell geometry (issue 23, first part): hex sites, wrap-around, the TR 38.901
antenna, UE drops, coupling loss, RSRP association and geometry SINR."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from channel_models.bs_antenna import array_gain_db, element_gain_db
from channel_models.multicell import (
    UeDrop,
    coupling_loss_db,
    drop_ues,
    geometry_sinr_db,
    o2i_loss_db,
    serving_cells,
)
from channel_models.site_layouts import HexLayout, axial_hexagons


@pytest.mark.parametrize(("rings", "sites"), [(0, 1), (1, 7), (2, 19)])
def test_hex_grid_sites_and_neighbours(rings, sites):
    layout = HexLayout(isd_m=500.0, rings=rings)
    xy = layout.site_xy()
    assert len(axial_hexagons(rings)) == sites == layout.num_sites == len(np.unique(xy, axis=0))
    assert layout.num_cells == 3 * sites
    if sites > 1:
        d = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1))
        np.testing.assert_allclose(np.sort(d[0])[1:7], 500.0)  # six neighbours at the ISD


@pytest.mark.parametrize(("rings", "factor"), [(1, 7), (2, 19)])
def test_wrap_vectors_tile_the_plane(rings, factor):
    layout = HexLayout(isd_m=200.0, rings=rings)
    v = layout.wrap_vectors()
    np.testing.assert_allclose(np.hypot(v[:, 0], v[:, 1]), 200.0 * math.sqrt(factor))
    # the images of the cluster never overlap it: every imaged site is off the grid's sites
    sites = layout.site_xy()
    shifted = (sites[None, :, :] + v[:, None, :]).reshape(-1, 2)
    gaps = np.hypot(*(shifted[:, None, :] - sites[None, :, :]).transpose(2, 0, 1))
    assert gaps.min() > 199.0


def test_with_wrap_around_every_site_sees_the_same_neighbourhood():
    """Translation symmetry: the distances from any site to all 19 (nearest images)
    are those from the centre site; without wrap-around an edge site sees fewer near."""
    layout = HexLayout(isd_m=500.0, rings=2)
    sites = layout.site_xy()
    centre = np.sort(np.hypot(*layout.site_offsets(sites[:1])[0].T))
    for j in range(19):
        d = np.sort(np.hypot(*layout.site_offsets(sites[j : j + 1])[0].T))
        np.testing.assert_allclose(d, centre, atol=1e-6)
    flat = HexLayout(isd_m=500.0, rings=2, wrap_around=False)
    edge = np.sort(np.hypot(*flat.site_offsets(sites[18:19])[0].T))
    assert edge[-1] > centre[-1] + 100


def test_element_and_array_gains_by_hand():
    assert element_gain_db(np.array(90.0), np.array(0.0)) == pytest.approx(8.0)
    assert element_gain_db(np.array(90.0), np.array(65.0)) == pytest.approx(8.0 - 12.0)
    assert element_gain_db(np.array(90.0), np.array(180.0)) == pytest.approx(8.0 - 30.0)
    assert element_gain_db(np.array(155.0), np.array(0.0)) == pytest.approx(8.0 - 12.0)
    assert element_gain_db(np.array(90.0), np.array(-295.0)) == pytest.approx(8.0 - 12.0)
    # ten elements phased to the tilt: 10·log10(10) = 10 dB there, less elsewhere
    assert array_gain_db(np.array(102.0)) == pytest.approx(10.0)
    assert array_gain_db(np.array(90.0)) < 10.0 - 3.0
    assert array_gain_db(np.array(102.0), rows=1) == 0.0


def test_drop_heights_indoor_share_and_positions():
    layout = HexLayout(isd_m=500.0, rings=2)
    drop = drop_ues(layout, 200, np.random.default_rng(1))
    n = 19 * 200
    assert len(drop) == n and stats.binomtest(int(drop.indoor.sum()), n, 0.8).pvalue > 1e-3
    assert set(np.unique(drop.height_m[drop.indoor])) <= {1.5 + 3 * k for k in range(8)}
    assert (drop.height_m[~drop.indoor] == 1.5).all() and (drop.d_in_m[~drop.indoor] == 0).all()
    assert drop.d_in_m.max() <= 25.0
    # min(U(0,25), U(0,25)): mean 25/3
    assert drop.d_in_m[drop.indoor].mean() == pytest.approx(25 / 3, rel=0.05)
    # every UE in its site's hexagon (its nearest site), beyond 35 m
    offsets = layout.site_offsets(drop.xy)
    d = np.hypot(offsets[..., 0], offsets[..., 1])
    assert (np.argmin(d, axis=1) == drop.home_site).all()
    assert d[np.arange(n), drop.home_site].min() >= 35.0


def test_o2i_loss_matches_table_7_4_3_2_at_6_ghz():
    f = 6.0
    low = 5 - 10 * math.log10(0.3 * 10 ** (-(2 + 0.2 * f) / 10) + 0.7 * 10 ** (-(5 + 4 * f) / 10))
    drop = UeDrop(
        np.zeros((4000, 2)),
        np.full(4000, 1.5),
        np.ones(4000, bool),
        np.full(4000, 10.0),
        np.zeros(4000, bool),
        np.zeros(4000, int),
    )
    loss = o2i_loss_db(drop, 6e9, np.random.default_rng(2))
    assert loss.mean() == pytest.approx(low + 5.0, abs=0.3)
    assert loss.std() == pytest.approx(4.4, rel=0.05)


def test_association_is_the_lowest_coupling_loss_and_geometry_sinr_by_hand():
    cl = np.array([[100.0, 110.0, 120.0], [95.0, 90.0, 130.0]])
    np.testing.assert_array_equal(serving_cells(cl), [0, 1])
    p, noise = 46.0, -95.0
    rx = 10 ** ((p - cl) / 10)
    want = 10 * np.log10(rx[0, 0] / (rx[0, 1] + rx[0, 2] + 10 ** (noise / 10)))
    assert geometry_sinr_db(cl, p, noise)[0] == pytest.approx(want)


def test_coupling_loss_of_a_uma_drop_is_plausible_and_sectors_split_the_site():
    layout = HexLayout(isd_m=500.0, rings=2)
    rng = np.random.default_rng(3)
    drop = drop_ues(layout, 60, rng)
    cl = coupling_loss_db(layout, drop, 6e9, rng)
    assert cl.shape == (19 * 60, 57)
    best = cl.min(axis=1)
    assert 80 < np.percentile(best, 5) < np.percentile(best, 95) < 160
    # every sector serves someone; a UE's serving sector faces it (within ±90° of boresight)
    serving = serving_cells(cl)
    assert len(np.unique(serving)) > 50
    sinr = geometry_sinr_db(cl, 49.0, -174 + 10 * math.log10(20e6) + 9)
    assert -10 < np.median(sinr) < 15


def test_uniform_drop_over_the_hex_deployment():
    from scipy import stats

    layout = HexLayout(500.0, 1, 3)
    assert layout.area_m2() == pytest.approx(7 * math.sqrt(3) / 2 * 500.0**2)
    xy = layout.drop_uniform(7000, np.random.default_rng(5))
    assert layout.contains(xy).all()
    # every site's hexagon gets a seventh of the points (chi-square), and within its
    # hexagon a point's squared distance share is uniform over the area: compare the
    # share inside the inscribed circle with its area ratio π/(2√3)
    home = np.argmin(np.linalg.norm(layout.site_offsets(xy), axis=2), axis=1)
    assert stats.chisquare(np.bincount(home, minlength=7)).pvalue > 1e-3
    inner = np.min(np.linalg.norm(layout.site_offsets(xy), axis=2), axis=1) <= 250.0
    assert stats.binomtest(int(inner.sum()), len(xy), math.pi / (2 * math.sqrt(3))).pvalue > 1e-3
    # a point just beyond the outer ring's hexagons is outside
    assert not layout.contains(np.array([[3 * 500.0, 0.0]])).any()


def test_site_list_area_containment_and_drop():
    from channel_models.site_layouts import SiteList

    one = SiteList(((10.0, 20.0),), 100.0)
    assert one.area_m2() == pytest.approx(math.pi * 100.0**2)
    # two discs overlapping by a lens: 2πr² − (2r²·acos(d/2r) − (d/2)·√(4r² − d²))
    d, r = 100.0, 100.0
    two = SiteList(((0.0, 0.0), (d, 0.0)), r, sectors=3)
    lens = 2 * r**2 * math.acos(d / (2 * r)) - d / 2 * math.sqrt(4 * r**2 - d**2)
    assert two.area_m2() == pytest.approx(2 * math.pi * r**2 - lens, rel=2e-3)
    assert two.num_cells == 6 and list(two.cell_site()) == [0, 0, 0, 1, 1, 1]
    xy = two.drop_uniform(4000, np.random.default_rng(2))
    assert two.contains(xy).all() and not two.contains(np.array([[0.0, 150.0]])).any()


def test_per_cell_drop_puts_each_point_in_its_sector_third():
    layout = HexLayout(500.0, 1, 3)
    xy = layout.drop_per_cell(21 * 40, np.random.default_rng(9))
    cells = np.arange(len(xy)) % 21
    sites = layout.site_xy()[layout.cell_site()[cells]]
    off = xy - sites
    az = (
        np.degrees(np.arctan2(off[:, 1], off[:, 0])) - layout.cell_boresight_deg()[cells] + 180
    ) % 360 - 180
    assert (np.abs(az) <= 60.0).all()
    assert (np.linalg.norm(off, axis=1) <= 500.0 / math.sqrt(3) + 1e-9).all()
    # uniform over the sector's third: its inscribed-circle share is the hexagon's
    inner = np.linalg.norm(off, axis=1) <= 250.0
    assert stats.binomtest(int(inner.sum()), len(xy), math.pi / (2 * math.sqrt(3))).pvalue > 1e-3
