"""The loading checks of the research knobs (docs/policies.md, docs/codecs.md): a
resource policy, update codecs and over-the-air aggregation each need an algorithm and
a cell that can honour them; each check returns ``(key path, what is wrong)`` pairs."""

from __future__ import annotations

from netfl.algorithms import ALGORITHMS
from netfl.scenario.schema import Scenario

__all__ = ["check_codecs", "check_over_the_air", "check_policy"]


def check_over_the_air(scenario: Scenario) -> list[tuple[str, str]]:
    """``aggregation: over_the_air`` needs an algorithm whose uplink carries FedAvg's
    updates, OFDMA cells (one, or a network of static devices) without background CUEs
    (the analog slot holds every RB), no uplink codec, and Rayleigh fading with a
    threshold (or none)."""
    name, options = scenario.algorithm.name, scenario.algorithm.options()
    if options.get("aggregation") != "over_the_air":
        return []
    key = "algorithm.aggregation"
    if not vars(ALGORITHMS[name]).get("supports_over_the_air", False):  # (its own word)
        return [
            (
                key,
                f"algorithm {name!r} does not aggregate over the air (a class built on FedAvg "
                "that does says supports_over_the_air = True itself)",
            )
        ]
    if scenario.network is None and scenario.cell.link.mode != "ofdma":
        return [(key, "over_the_air needs OFDMA cells (cell.link.mode: ofdma, or a network)")]
    if scenario.network is not None and any(m.moves for m in scenario.devices.mobility_of()):
        return [
            (
                key,
                "over_the_air on a network needs static devices (a cell's slot is planned "
                "for the clients it serves at its start): devices.mobility",
            )
        ]
    if scenario.cell.cues.density_per_km2 > 0:
        return [
            (
                key,
                "over_the_air holds every uplink RB for its slot: set cell.cues.density_per_km2: 0",
            )
        ]
    codec = options.get("uplink_codec") or {}
    if isinstance(codec, dict) and codec.get("name", "none") != "none":
        return [(key, "over_the_air sends the updates as analog values: no uplink_codec")]
    from netfl.scenario.link_resolution import resolved_profile

    try:
        law = resolved_profile(scenario.cell.link).fading["model"]
    except (KeyError, ValueError):
        return []  # (the cell's own check says what is wrong)
    threshold = (options.get("over_the_air") or {}).get("gain_threshold", 0.1)
    if law not in ("rayleigh", "none"):
        return [(key, f"over_the_air inverts Rayleigh fading (or none), not {law!r}")]
    if law == "none" and threshold > 1:
        return [
            (
                "algorithm.over_the_air.gain_threshold",
                "above 1 without fading every device is truncated: nothing goes up",
            )
        ]
    if scenario.policy.outage_sinr_db is not None:
        return [
            (
                "policy.outage_sinr_db",
                "over_the_air has no per-update SINR to judge (its receive SNR is ρ0, "
                "common to the round): unset it",
            )
        ]
    if law == "rayleigh" and not threshold > 0:
        return [
            (
                "algorithm.over_the_air.gain_threshold",
                "inverting a Rayleigh channel needs a threshold > 0 (its mean power is infinite)",
            )
        ]
    return []


def check_codecs(scenario: Scenario) -> list[tuple[str, str]]:
    """A codec other than ``none`` runs where the algorithm applies it
    (``codec_directions``), and one whose size depends on the values in learning mode."""
    from netfl.codecs import CODECS, build_codec

    name, options = scenario.algorithm.name, scenario.algorithm.options()
    kind = ALGORITHMS[name]
    for field in sorted(k for k in options if k.endswith("_codec")):
        section = options.get(field) or {}
        codec = section.get("name", "none") if isinstance(section, dict) else "none"
        if codec == "none" or codec not in CODECS:
            continue
        direction = "uplink" if "uplink" in field else "downlink"
        key = f"algorithm.{field}.name"
        if direction not in getattr(kind, "codec_directions", frozenset()):
            able = ", ".join(
                sorted(
                    k
                    for k, c in ALGORITHMS.items()
                    if direction in getattr(c, "codec_directions", ())
                )
            )
            return [
                (
                    key,
                    f"algorithm {name!r} does not apply a {direction} codec yet (valid with: {able})",
                )
            ]
        built = build_codec(codec, section.get("options"))
        if built is not None and built.vote and field not in getattr(kind, "codec_vote_fields", ()):
            return [
                (
                    f"algorithm.{field}.options",
                    f"algorithm {name!r} has no majority vote for {field}: set vote: false "
                    "(its updates are then averaged as decoded)",
                )
            ]
        if built is not None and built.value_dependent:
            if scenario.learning.mode != "learn":
                return [
                    (
                        key,
                        f"codec {codec!r} with these options sizes its encoding from the "
                        "values: needs learning.mode: learn",
                    )
                ]
            if scenario.outputs.checkpoint_every:
                return [
                    (
                        key,
                        f"codec {codec!r} with these options sizes its encoding from the "
                        "values, which a resume cannot replay: unset outputs.checkpoint_every",
                    )
                ]
    return []


def check_policy(scenario: Scenario) -> list[tuple[str, str]]:
    """A resource policy other than ``random`` decides the rounds that declare it
    (``@honours("policy")``: FedAvg's, inherited or wrapped); a policy that fits a
    deadline (``needs_deadline``) needs ``algorithm.deadline_s``, one that sounds the
    channel (``needs_block_snr``) fading drawn per link; the success rule
    (``outage_sinr_db``) needs an SINR and a round that applies it
    (``@honours("outage")``)."""
    from netfl.policies import POLICIES

    policy = scenario.policy.name
    name = scenario.algorithm.name
    ofdma = scenario.network is not None or scenario.cell.link.mode == "ofdma"
    if scenario.policy.outage_sinr_db is not None:
        if "outage" not in ALGORITHMS[name].round_honours():
            able = ", ".join(
                sorted(k for k, c in ALGORITHMS.items() if "outage" in c.round_honours())
            )
            return [
                (
                    "policy.outage_sinr_db",
                    f"algorithm {name!r} does not apply the success rule (valid with: {able})",
                )
            ]
        if not ofdma:
            return [("policy.outage_sinr_db", "fixed-rate links have no SINR: needs an OFDMA cell")]
    if policy == "random":
        return []
    if "policy" not in ALGORITHMS[name].round_honours():
        able = ", ".join(sorted(k for k, c in ALGORITHMS.items() if "policy" in c.round_honours()))
        return [
            (
                "policy.name",
                f"algorithm {name!r} does not take a resource policy yet (valid with: {able})",
            )
        ]
    if POLICIES[policy].needs_block_snr and not (
        ofdma and scenario.cell.link.fading_draw == "per_link"
    ):
        return [
            (
                "policy.name",
                f"policy {policy!r} sounds each device's channel in the block now: set "
                "cell.link.fading_draw: per_link (an OFDMA cell)",
            )
        ]
    if POLICIES[policy].needs_deadline:
        if "deadline_s" not in ALGORITHMS[name].round_honours():
            return [
                (
                    "policy.name",
                    f"policy {policy!r} fits clients to a round's deadline, and algorithm "
                    f"{name!r} has none",
                )
            ]
        if scenario.algorithm.options().get("deadline_s") is None:
            return [
                (
                    "policy.name",
                    f"policy {policy!r} fits clients to the round's deadline: set "
                    "algorithm.deadline_s",
                )
            ]
    return []
