"""``netfl describe SCENARIO``: the link budget a scenario really runs with.

The propagation law behind its channel profile and every override (path loss and its
parameters, shadowing, LOS), fading, powers, noise figures, power control, the link
abstraction and scheduler, the BS antenna (pattern, peak gain, sectors, and whether it
is what TR 38.901's calibration assumes), on a network its interference, backhaul and
server and, where devices move, their motion, shadowing along their paths and the A3
rule's settings, and — from one drop of the devices, as round 0 places them —
the distribution of the devices' mean SNR (SINR in a network) and who is starved in
which direction. Nothing is run; the first drop is built as ``netfl run`` builds it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["describe_lines"]


def _law(spec: dict[str, Any]) -> str:
    """The law and every parameter it runs with: the scenario's, else the law's default."""
    import inspect

    from channel_models.pathloss_laws import PATHLOSS_MODELS

    law = PATHLOSS_MODELS[spec["model"]]
    values: dict[str, Any] = {}
    for klass in reversed(law.__mro__):
        if "__init__" in vars(klass) and klass is not object:
            for name, param in inspect.signature(klass.__init__).parameters.items():
                if name not in ("self", "carrier_hz") and param.default is not param.empty:
                    values[name] = param.default
    values.update({k: v for k, v in spec.items() if k != "model"})
    if law.standard_shadowing:
        values.pop("shadowing_std_db", None)
        shadowing = (
            "shadowing of TR 38.901 Table 7.4.1-1"
            if values.pop("shadowing", True)
            else "no shadowing"
        )
    else:
        sigma = float(values.pop("shadowing_std_db", 0.0) or 0.0)
        shadowing = f"log-normal shadowing σ {sigma:g} dB" if sigma > 0 else "no shadowing"
    params = ", ".join(f"{k} {v}" for k, v in values.items() if v is not None)
    return f"{law.description or law.name}, {shadowing}" + (f"; {params}" if params else "")


def _percentiles(values: np.ndarray) -> str:
    v = values[np.isfinite(values)]
    if not v.size:
        return "–"
    p5, p50, p95 = np.percentile(v, [5, 50, 95])
    return f"p5 {p5:.1f}, median {p50:.1f}, p95 {p95:.1f} (min {v.min():.1f}, max {v.max():.1f})"


def _ofdma_lines(scenario: Any) -> list[str]:
    link = scenario.cell.link
    p = link.channel_profile_resolved()
    duplex = (
        f"TDD {p.tdd_pattern} (uplink {p.time_fraction('uplink'):.0%} of the time, "
        f"downlink {p.time_fraction('downlink'):.0%})"
        if p.duplex == "tdd"
        else "FDD"
    )
    pc = p.uplink_power_control
    control = (
        f"open loop, P0 {pc['p0_dbm']} dBm, α {pc['alpha']}"
        if pc["model"] == "open_loop"
        else "full power over the carrier (FedDif eq. 9)"
    )
    fading = ", ".join(f"{k} {v}" for k, v in p.fading.items() if k != "model")
    efficiency = ", ".join(
        f"{k} {v}" for k, v in p.efficiency.items() if k != "model" and v is not None
    )
    return [
        f"  channel profile {p.name}: {p.description}",
        f"  carrier {p.carrier_hz / 1e9:g} GHz, {p.bandwidth_hz / 1e6:g} MHz, {p.num_rbs} RBs "
        f"of {p.rb_bandwidth_hz / 1e3:g} kHz, {duplex}",
        f"  path loss: {_law(p.pathloss)}",
        f"  D2D path loss: {_law(p.d2d_pathloss)}",
        f"  fading: {p.fading['model']}" + (f" ({fading})" if fading else ""),
        f"  powers: UE {p.ue_tx_power_dbm:g} dBm, BS {p.bs_tx_power_dbm:g} dBm; noise "
        f"{p.noise_dbm_per_hz:g} dBm/Hz, figures UE {p.noise_figure_ue_db:g} dB, BS "
        f"{p.noise_figure_bs_db:g} dB"
        + (
            f"; serving-link beamforming gain {p.antenna_gain_db:g} dB (BS–UE links, not D2D)"
            if p.antenna_gain_db
            else ""
        ),
        f"  uplink power control: {control}",
        f"  link abstraction: {p.efficiency['model']}" + (f" ({efficiency})" if efficiency else ""),
        f"  scheduler: {link.scheduler}; downlink allocation: {p.downlink_allocation}"
        + (f" (groups of {p.rbg_size()} RBs)" if p.downlink_allocation != "fractional" else ""),
    ]


#: what TR 38.901's large-scale calibration assumes of a BS (Table 7.8-1), for people
CALIBRATION_ANTENNA = (
    "3 sectors per site, each a 10 × 1 vertical array (0.8 λ, downtilt 102°) of "
    "Table 7.3-1 elements"
)


def _antenna_lines(scenario: Any) -> list[str]:
    """The BS antenna: pattern, peak gain [dBi] (from :mod:`channel_models.bs_antenna`),
    sectorisation, and how it stands against TR 38.901's calibration (Table 7.8-1)."""
    from channel_models.bs_antenna import array_gain_db, element_gain_db

    net = scenario.network
    element_dbi = float(element_gain_db(np.array(90.0), np.array(0.0)))
    calibration = f"{element_dbi + 10.0:.0f} dBi peak"
    if net is None:
        gain = (
            scenario.cell.link.channel_profile_resolved().antenna_gain_db
            if (scenario.cell.link.mode == "ofdma")
            else 0.0
        )
        if gain:
            return [
                f"  BS antenna: arrays steered at each served UE, {gain:g} dB on a serving "
                "link with the UE's (the channel profile's antenna_gain_db; one cell, no "
                "sectors, no beam misalignment)"
            ]
        return [
            "  BS antenna: omni, 0 dBi in every direction (one cell, no sectors; the ns-3 "
            "LENA reference's isotropic antenna)",
            f"    not TR 38.901's calibration (Table 7.8-1: {CALIBRATION_ANTENNA}, "
            f"{calibration}): set network: {{sites: 1}} for one such site",
        ]
    if net.antenna == "omni":
        pattern, peak = "omni, 0 dBi in every direction (no vertical array)", 0.0
    else:
        rows, tilt = net.antenna_rows, net.tilt_zenith_deg
        array_dbi = float(array_gain_db(np.array(tilt), rows, 0.8, tilt))
        array = f"{rows} × 1 vertical array (0.8 λ, downtilt {tilt:g}°)"
        if net.sectors == 3:
            pattern = (
                f"TR 38.901 sector pattern (Table 7.3-1 element, {element_dbi:g} dBi, 65° "
                f"beamwidth, 30 dB floor) on a {array}"
            )
            peak = element_dbi + array_dbi
        else:
            pattern, peak = f"omni in azimuth (no element pattern), a {array}", array_dbi
    sectors = (
        "3 sectors per site (boresights 30°/150°/270°)" if net.sectors == 3 else "1 cell per site"
    )
    calibrated = (
        net.sectors == 3
        and net.antenna == "tr38901"
        and net.antenna_rows == 10
        and net.tilt_zenith_deg == 102.0
    )
    return [
        f"  BS antenna: {pattern}: max gain {peak:.1f} dBi; {sectors}",
        "    as TR 38.901's calibration (Table 7.8-1)"
        if calibrated
        else f"    not TR 38.901's calibration (Table 7.8-1: {CALIBRATION_ANTENNA}, "
        f"{calibration}; the network section's defaults)",
    ]


def _fixed_rate_lines(scenario: Any, world: Any) -> list[str]:
    link = scenario.cell.link
    rates: dict[tuple[float, float], int] = {}
    for d in world.all_devices:
        key = (d.link.uplink_bps, d.link.downlink_bps)
        rates[key] = rates.get(key, 0) + 1
    lines = [
        f"  fixed rates ({'shared BS capacity' if link.shared else 'dedicated links'}): "
        + "; ".join(
            f"{n} device(s) up {u / 1e6:g} / down {dn / 1e6:g} Mbit/s"
            for (u, dn), n in sorted(rates.items())
        )
    ]
    if link.shared:
        lines.append(f"  BS capacity profile: {link.capacity_profile}")
    return lines


def _mobility_text(m: Any) -> str:
    """One device group's motion, in the keys its model reads."""
    if not m.moves:
        return "static"
    if m.model == "random_waypoint":
        return f"random waypoint {m.v_min_kmh:g}–{m.v_max_kmh:g} km/h, pause {m.pause_s:g} s"
    if m.model == "constant_velocity":
        heading = "uniform heading" if m.heading_deg is None else f"heading {m.heading_deg:g}°"
        return f"constant velocity {m.speed_kmh:g} km/h, {heading}"
    if m.model == "gauss_markov":
        return f"Gauss–Markov, mean {m.speed_kmh:g} km/h, memory {m.alpha:g}"
    return f"{m.model}" + (f" {m.options}" if m.options else "")


def _network_lines(scenario: Any) -> list[str]:
    """A network's interference, core (backhaul, where the server is) and, where devices
    move, their motion, shadowing along their paths and the A3 rule."""
    from collections import Counter

    net = scenario.network
    i = net.interference
    interference = {
        "none": "none (each cell alone)",
        "load_factor": f"load factor: every other cell on {i.load:.0%} of its RBs",
        "activity": "activity: the other cells' RBs in use at each instant",
    }[i.model]
    server = (
        "in the cloud behind every site's backhaul"
        if net.server_site == "cloud"
        else f"at site {net.server_site}"
    )
    lines = [
        f"  interference: {interference}",
        f"  backhaul: {net.backhaul.capacity_mbps:g} Mbit/s, {net.backhaul.latency_ms:g} ms "
        f"one way per site; the FL server {server}",
    ]
    motions = Counter(_mobility_text(m) for m in scenario.devices.mobility_of())
    if any(m.moves for m in scenario.devices.mobility_of()):
        h = net.handover
        lines += [
            "  devices: " + "; ".join(f"{n} {what}" for what, n in motions.items()),
            f"  moving devices' shadowing: {net.mobility.shadowing} (docs/networks.md)",
            f"  handover: A3, hysteresis {h.hysteresis_db:g} dB, time-to-trigger "
            f"{h.ttt_s:g} s, layer-3 filter k {h.filter_k}, measured every {h.sample_ms:g} ms, "
            f"interruption {h.interruption_ms:g} ms",
        ]
    return lines


def _modem_line(scenario: Any, world: Any) -> str:
    """Whose modem the devices draw (``devices.modem_profile``), with each count."""
    from collections import Counter

    modems = Counter(d.compute.modem_profile or d.compute.name for d in world.all_devices)
    chosen = scenario.devices.modem_profile
    how = f" (devices.modem_profile: {chosen})" if chosen else " (their compute profiles')"
    return "  modems: " + ", ".join(f"{n} × {m}" for m, n in modems.items()) + how


def describe_lines(scenario: Any, source: str) -> list[str]:
    """The lines ``netfl describe`` prints for ``scenario`` (builds its first drop)."""
    from netfl import World

    world = World(scenario, source=source)
    try:
        link = scenario.cell.link
        net = scenario.network
        size = (
            f"ISD {net.isd_m:g} m"
            if net is not None and net.site_positions_m is None
            else f"cell radius {scenario.cell.radius_m:g} m"
        )
        lines = [
            f"{scenario.name} ({source}): {len(world.all_devices)} devices, {size}, "
            f"{link.mode} link"
            + (f", {len(world.cell_nodes)} cells" if len(world.cell_nodes) > 1 else ""),
        ]
        if link.mode == "ofdma":
            lines += _ofdma_lines(scenario) + _antenna_lines(scenario)
            if net is not None:
                lines += _network_lines(scenario)
        else:
            lines += _fixed_rate_lines(scenario, world)
        lines.append(_modem_line(scenario, world))
        coverage = world.coverage.tables().get("coverage")
        if coverage is not None and len(coverage):
            what = "SINR" if "cell" in coverage else "SNR"
            lines.append(
                f"  the first drop's mean per-RB {what} over {len(coverage)} devices [dB]:"
            )
            for d in ("downlink", "uplink"):
                lines.append(f"    {d:<8} {_percentiles(coverage[f'{d}_snr_db'].to_numpy(float))}")
            up, down = (int(coverage[f"{d}_starved"].sum()) for d in ("uplink", "downlink"))
            starved = coverage.loc[coverage["starved"], "device"].tolist()
            lines.append(
                f"  starved (no rate even at a fading peak): {len(starved)} of {len(coverage)} "
                f"(uplink {up}, downlink {down})"
                + (
                    f": {', '.join(starved[:10])}{' …' if len(starved) > 10 else ''}"
                    if starved
                    else ""
                )
            )
        return lines
    finally:
        world.close()
