"""A link test, not an FL algorithm: every device uploads a payload at the same instant.

Each round, every device first downloads ``download_bytes`` from the BS (if set), then
uploads ``upload_bytes`` to it; all devices start together at the round's start and
nothing is trained or aggregated. Each transfer's start, end and bits are in
``transfers.parquet`` (kinds ``test_down`` / ``test_up``): the per-device upload
durations a packet-level reference reports for the same cell (``validation/ns3/``).
With an explicit ``devices.layout`` it reproduces a reference geometry exactly.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Literal

import simpy
from pydantic import Field, NonNegativeFloat, PositiveInt

from channel_models.protocol_overhead import bytes_on_air
from netfl.algorithms.algorithm import Algorithm, AlgorithmConfig, RoundSummary, register
from netfl.algorithms.context import CellCarriers
from netfl.core.nodes import Node

__all__ = ["TransferTest", "TransferTestConfig"]


class TransferTestConfig(AlgorithmConfig):
    upload_bytes: NonNegativeFloat = Field(
        796_840.0,
        description="payload each device uploads per round [byte] (0: a download test, "
        "which reaches every device whose downlink is served, whatever its uplink)",
        le=1e12,
    )
    download_bytes: NonNegativeFloat = Field(
        0.0,
        description="payload each device first downloads per round [byte] (0: none)",
        le=1e12,
    )
    datagram_bytes: PositiveInt | None = Field(
        None,
        description="send the payloads as UDP/IPv4 datagrams of this size over an LTE "
        "bearer: each carries its IP, UDP, PDCP, RLC and MAC headers (None: payload only)",
        le=65_535,
    )

    starved: Literal["skip", "hold_share"] = Field(
        "skip",
        description="a device out of coverage (no rate at the lowest CQI) sends nothing; "
        "hold_share: it still holds its round-robin share of the uplink RBs for the "
        "round, delivering nothing — ns-3 LENA's round robin counts every UE that "
        "reported a buffer in its split and leaves a CQI-0 UE's RBs unused",
    )

    def on_air_bits(self, payload_bytes: float) -> float:
        """Bits a payload occupies on air (:mod:`channel_models.protocol_overhead`)."""
        if self.datagram_bytes is None:
            return 8.0 * payload_bytes
        return 8.0 * bytes_on_air(payload_bytes, self.datagram_bytes)


@register
class TransferTest(Algorithm):
    """Link test: every device uploads (after an optional download) at the same instant."""

    name = "transfer_test"
    Config = TransferTestConfig
    config: TransferTestConfig

    @classmethod
    def directions(cls, options: dict[str, Any]) -> frozenset[str]:
        if float(options.get("upload_bytes", cls.Config().upload_bytes)) > 0:
            return super().directions(options)
        return frozenset({"downlink"})  # (a download test reaches uplink-starved devices)

    @classmethod
    def check_scenario(cls, scenario: Any) -> list[tuple[str, str]]:
        """The upload takes at most ``MAX_GRANT_CYCLES`` grant cycles (LTE cells);
        ``starved: hold_share`` needs one OFDMA cell (not implemented on networks)."""
        from netfl.radio.uplink_mac import MAX_GRANT_CYCLES

        cfg = cls.Config(**scenario.algorithm.options())
        problems = []
        if cfg.starved == "hold_share" and (
            scenario.cell.link.mode != "ofdma" or scenario.network is not None
        ):
            where = "a network" if scenario.network is not None else "a fixed-rate link"
            problems.append(
                (
                    "algorithm.starved",
                    f"hold_share (an out-of-coverage UE's round-robin RBs held) applies to "
                    f"one OFDMA cell, not {where}",
                )
            )
        cycles = scenario.grant_cycles(cfg.on_air_bits(cfg.upload_bytes))
        if cycles > MAX_GRANT_CYCLES:
            problems.append(
                (
                    "algorithm.upload_bytes",
                    f"{cfg.upload_bytes:g} bytes take {cycles:,.0f} uplink grant cycles on "
                    f"this LTE cell (at most {MAX_GRANT_CYCLES:,})",
                )
            )
        return problems

    def _device(self, device: Node) -> Generator[simpy.Event, Any, None]:
        world = self.world
        if self.config.download_bytes > 0:
            bits = self.config.on_air_bits(self.config.download_bytes)
            yield world.radio.transfer(world.bs, device, bits, "test_down")
        if self.config.upload_bytes > 0:
            bits = self.config.on_air_bits(self.config.upload_bytes)
            yield world.radio.transfer(device, world.bs, bits, "test_up")

    def round(self, r: int) -> Generator[simpy.Event, Any, RoundSummary]:
        world = self.world
        env = world.env
        held = []
        if self.config.starved == "hold_share" and isinstance(world.radio, CellCarriers):
            uplink = world.radio.carrier_for("uplink")
            served = {d.name for d in world.devices}
            held = [
                uplink.add_session(uplink.num_rbs)
                for d in world.all_devices
                if d.name not in served
            ]
        # (a download test reaches the devices whose uplink alone is starved)
        devices = world.devices if self.config.upload_bytes > 0 else world.downlink_devices
        jobs = [env.process(self._device(d)) for d in devices]
        yield simpy.AllOf(env, jobs)
        for handle in held:
            uplink.remove_session(handle)
        return RoundSummary(num_clients=len(jobs))

    def evaluate(self) -> tuple[float, float]:
        return float("nan"), float("nan")  # nothing is learnt

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass
