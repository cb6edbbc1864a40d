import pytest

from channel_models import get_link_profile, link_profiles

# EcoFed (arXiv 2304.05495) Appendix B.1, Table XI: (upload, download) Mbit/s.
TABLE_XI = {
    "3g": (0.4, 3),
    "3g_hspa_plus": (3, 6),
    "4g_lte": (5, 20),
    "4g_lte_advanced": (10, 42),
    "wifi": (11, 60),
    "5g": (20, 200),
}


def test_table_xi_reproduced():
    profiles = link_profiles()
    assert set(profiles) == set(TABLE_XI)
    for name, (up, down) in TABLE_XI.items():
        assert profiles[name].uplink_bps == up * 1e6
        assert profiles[name].downlink_bps == down * 1e6
        assert "Table XI" in profiles[name].source


def test_unknown_profile_lists_valid_names():
    with pytest.raises(KeyError, match="4g_lte"):
        get_link_profile("6g")
