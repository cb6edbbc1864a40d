"""A cell link's channel profile as the scenario resolves it (:mod:`netfl.scenario.cell`'s
``LinkSection``): the named profile with the section's overrides applied — grid,
fading, efficiency model and link abstraction, overheads, power control, path loss and
shadowing — and the section's keys that the chosen profile or scheduler makes
inapplicable, refused.

Each function takes the ``LinkSection`` as ``link`` (typed ``Any``: the section calls
these, so naming its class here would close a circle of imports)."""

from __future__ import annotations

from typing import Any

from channel_models.channel_profiles import ChannelProfile
from channel_models.numerology import num_resource_blocks
from channel_models.pathloss_laws import PATHLOSS_MODELS
from channel_models.profile_specs import TBS_MODELS
from channel_models.registry import lookup
from netfl.radio.schedulers import SCHEDULERS
from netfl.scenario.strict import check_options

__all__ = ["refuse_unchosen", "resolved_profile"]


def resolved_profile(link: Any) -> ChannelProfile:
    """The named channel profile with ``link``'s overrides applied.

    A ``bandwidth_hz`` or ``numerology`` override without ``num_rbs`` takes N_RB
    from TS 38.101-1 (FR2 carriers: TS 38.101-2) Table 5.3.2-1; ``ValueError`` names an inconsistent value
    (e.g. more RBs than the bandwidth holds, a bandwidth with no N_RB entry).
    """
    base = lookup(link.profiles(), link.channel_profile, "channel profile")
    numerology = link.numerology if link.numerology is not None else base.numerology
    bandwidth = link.bandwidth_hz or base.bandwidth_hz
    num_rbs = link.num_rbs
    if num_rbs is None and (link.bandwidth_hz is not None or link.numerology is not None):
        try:
            num_rbs = num_resource_blocks(bandwidth, numerology, base.carrier_hz)
        except (KeyError, ValueError) as err:
            raise ValueError(
                f"bandwidth_hz/numerology: {str(err).strip(chr(34))}; set num_rbs to use "
                "another bandwidth"
            ) from None
    fading = dict(base.fading)
    if link.fading is not None:
        fading = {
            "model": link.fading,
            "coherence_time_s": fading.get("coherence_time_s", 1e-3),
        }
    if link.coherence_time_s is not None:
        fading["coherence_time_s"] = link.coherence_time_s
    efficiency = _efficiency(link, base)
    overhead = dict(base.phy_overhead)
    if link.phy_overhead_uplink is not None:
        overhead["uplink"] = link.phy_overhead_uplink
    if link.phy_overhead_downlink is not None:
        overhead["downlink"] = link.phy_overhead_downlink
    pc = link.uplink_power_control.model_dump() if link.uplink_power_control else None
    return base.with_overrides(
        numerology=numerology,
        bandwidth_hz=bandwidth,
        num_rbs=num_rbs,
        fading=fading,
        ue_tx_power_dbm=link.ue_tx_power_dbm,
        bs_tx_power_dbm=link.bs_tx_power_dbm,
        noise_figure_ue_db=link.noise_figure_ue_db,
        noise_figure_bs_db=link.noise_figure_bs_db,
        duplex=link.duplex,
        tdd_pattern=link.tdd_pattern,
        special_slot_symbols=link.special_slot_symbols,
        uplink_power_control=pc,
        efficiency=efficiency,
        phy_overhead=overhead,
        overheads={**base.overheads, **(link.overheads or {})},
        cqi_sinr=link.cqi_sinr,
        downlink_delay_s=link.downlink_delay_s,
        downlink_allocation=link.downlink_allocation,
        rbg_configuration=link.rbg_configuration,
        pathloss=_shadowed(link, link.pathloss or base.pathloss, "pathloss"),
        d2d_pathloss=_shadowed(link, base.d2d_pathloss, "d2d"),
    )


def refuse_unchosen(link: Any, profile: ChannelProfile | None) -> None:
    """Keys that apply only under another choice of the section ``link`` are refused, not
    silently ignored."""
    if profile is None:  # (fixed rate, dedicated)
        rules = [
            (
                {"capacity_profile", "uplink_capacity_mbps", "downlink_capacity_mbps"},
                True,
                "shared: true (a dedicated link runs at each device's link_profile)",
            )
        ]
    else:
        scheduler = SCHEDULERS[link.scheduler]
        rules = [
            (
                {"tdd_pattern", "special_slot_symbols"},
                profile.duplex != "tdd",
                f"duplex: tdd (channel profile {profile.name!r} is {profile.duplex})",
            ),
            *(
                (
                    {key},
                    key not in scheduler.link_keys,
                    "scheduler: "
                    + " or ".join(n for n, x in SCHEDULERS.items() if key in x.link_keys),
                )
                for key in sorted({k for x in SCHEDULERS.values() for k in x.link_keys})
            ),
            (
                {"downlink_allocation"},
                not scheduler.whole_rb_groups,
                "scheduler: "
                + " or ".join(n for n, x in SCHEDULERS.items() if x.whole_rb_groups)
                + " (the others share RBs fractionally)",
            ),
            (
                {"rbg_configuration"},
                profile.rbg_standard != "nr"
                or profile.downlink_allocation != "rbg_round_robin"
                or not scheduler.whole_rb_groups,
                "an NR profile's rbg_round_robin downlink (TS 38.214's configurations; "
                "LTE has one RBG table)",
            ),
            (
                {"aggregate_above_flows"},
                profile.fading.get("model") != "rayleigh" or scheduler.per_block,
                "Rayleigh fading under round robin or fcfs (proportional fair rates every block)",
            ),
            (
                {"cqi_sinr"},
                profile.uplink_power_control.get("model") != "full_carrier",
                "full-carrier uplink power (open-loop power control sets a per-RB power)",
            ),
            (  # (a TBS abstraction's MCS table sets the peak: max_mcs caps it)
                {"max_bps_per_hz"},
                profile.efficiency["model"] in TBS_MODELS,
                "a Shannon or CQI-table efficiency (this profile's link abstraction, "
                f"{profile.efficiency['model']}, reads its MCS table: cap it with max_mcs)",
            ),
            (
                {"snr_gap_db"},
                profile.efficiency["model"] in ("lte_bler", "nr_bler"),
                "a gap-based efficiency (Shannon, a CQI table, LTE's link_abstraction: gap); "
                f"{profile.efficiency['model']} follows BLER curves",
            ),
        ]
    for keys, off, needs in rules:
        stray = link.given(keys)
        if stray and off:
            raise ValueError(f"{', '.join(stray)} applies only with {needs}")


def _efficiency(link: Any, base: ChannelProfile) -> dict[str, Any]:
    """The profile's efficiency model with ``max_bps_per_hz``, ``snr_gap_db``,
    ``cqi_table``, ``link_abstraction`` and ``bler_target`` applied.

    LTE profiles: ``gap`` = ``lte_amc``, ``bler`` = ``lte_bler``; ``cqi_table`` is
    refused (TS 36.213 has its own tables). NR (``nr_bler``) profiles: ``cqi_table``
    picks the MCS table (64qam: 1, 256qam: 2); ``gap`` = that CQI table through a
    Shannon gap (``cqi``), ``bler`` = ``nr_bler``. Shannon profiles: ``cqi_table``
    turns them into ``cqi`` (gap and cap kept); the abstractions do not apply."""
    efficiency = dict(base.efficiency)
    model = efficiency["model"]
    if link.max_bps_per_hz is not None:
        efficiency["max_bps_per_hz"] = link.max_bps_per_hz
    if link.snr_gap_db is not None:
        efficiency["gap_db"] = link.snr_gap_db
    lte, nr = model in ("lte_amc", "lte_bler"), model == "nr_bler"
    if link.cqi_table is not None:
        if lte:
            raise ValueError(
                f"cqi_table: channel profile {base.name!r} is LTE (TS 36.213 tables); "
                "the TS 38.214 tables apply to NR and Shannon-based profiles"
            )
        if nr:
            efficiency["mcs_table"] = {"64qam": 1, "256qam": 2}[link.cqi_table]
        else:  # a Shannon profile's gap and cap stay; the efficiency becomes the table's
            efficiency = {**efficiency, "model": "cqi", "table": link.cqi_table}
    if (link.link_abstraction or link.bler_target) and not (lte or nr):
        key = "link_abstraction" if link.link_abstraction else "bler_target"
        raise ValueError(
            f"{key}: channel profile {base.name!r} is neither LTE nor NR (its efficiency "
            f"model is {model!r}); the gap and bler abstractions apply to lte_* and "
            "nr_* profiles"
        )
    keep = {k: efficiency.get(k) for k in ("reference_prbs", "bler_target", "max_mcs")}
    if link.link_abstraction == "gap" and lte:
        efficiency = {
            "model": "lte_amc",
            "gap_db": efficiency.get("gap_db"),
            "reference_prbs": keep["reference_prbs"],
            "max_mcs": keep["max_mcs"],
        }
    elif link.link_abstraction == "bler" and lte:
        efficiency = {"model": "lte_bler", **keep}
    elif link.link_abstraction == "gap" and nr:
        table = "256qam" if efficiency.get("mcs_table") == 2 else "64qam"
        efficiency = {
            "model": "cqi",
            "table": table,
            "gap_db": efficiency.get("gap_db") or 0.0,
            "max_bps_per_hz": efficiency.get("max_bps_per_hz"),
        }
    if link.max_mcs is not None:
        if efficiency["model"] not in ("lte_amc", "lte_bler", "nr_bler"):
            raise ValueError(
                f"max_mcs: the efficiency model {efficiency['model']!r} has no MCS table "
                "(cap a Shannon or CQI rate with max_bps_per_hz)"
            )
        efficiency["max_mcs"] = link.max_mcs
    if link.bler_target is not None:
        if efficiency["model"] not in ("lte_bler", "nr_bler"):
            raise ValueError("bler_target: applies to link_abstraction: bler")
        efficiency["bler_target"] = link.bler_target
    return efficiency


def _shadowed(link: Any, law: dict[str, Any], which: str) -> dict[str, Any]:
    """``law`` with the ``shadowing`` switch applied (unchanged when it is unset)."""
    if link.shadowing is None:
        return law
    law = dict(law)
    if PATHLOSS_MODELS[law["model"]].standard_shadowing:
        law["shadowing"] = link.shadowing
    elif not link.shadowing:
        law["shadowing_std_db"] = 0.0
    elif not law.get("shadowing_std_db"):
        if which == "d2d":
            return law  # (a D2D law without shadowing stays as it is)
        raise ValueError(
            f"shadowing: true, but the {law['model']} path loss has no shadowing_std_db "
            "(set it in cell.link.pathloss)"
        )
    return law


def check_scheduler_options(name: str, options: dict[str, Any]) -> None:
    """``options`` are valid for scheduler ``name`` (its pydantic ``Config``); a
    ``ValueError`` names the option at fault."""
    check_options(SCHEDULERS[name].Config, options, "scheduler_options", f"scheduler {name!r}")
