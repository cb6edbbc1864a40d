"""``ofdma`` link mode: transfers over faded OFDMA carriers shared with CUEs.

Uplink and downlink are separate carriers of the channel profile's size. D2D
transfers are an overlay on the uplink carrier (FedDif (16f)): they take
uplink RBs that no CUE session or uplink transfer holds — the scheduler
keeps every RB with one holder, so D2D and cellular users are orthogonal.

Per transfer: SNR̄ = p·β(d)/σ² with the path loss of the link's distance
(3D, with the profile's antenna heights; shadowing and TR 38.901 LOS states
drawn per transfer), then Rayleigh (or Rician) block fading drawn per block.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import simpy

from channel_models.channel_profiles import ChannelProfile
from channel_models.numerology import SUBFRAME_S
from channel_models.units import linear_to_db
from netfl.nodes import Node
from netfl.radio.network import Radio
from netfl.radio.ofdma import OfdmaCarrier
from netfl.records import Recorder

__all__ = ["OfdmaRadio"]


class OfdmaRadio(Radio):
    """Uplink/downlink OFDMA carriers with a scheduler; D2D overlays the uplink.

    Parameters
    ----------
    profile : ChannelProfile
        Carrier, path loss, fading, noise and powers.
    scheduler : str
        ``"round_robin"``, ``"fcfs"`` or ``"proportional_fair"``.
    rng_for_transfer : callable
        ``k → numpy Generator`` for the k-th transfer's fading.
    rng_for_link : callable
        ``key → numpy Generator`` for a link's large-scale draws (LOS, shadowing).
    max_rbs_per_transfer : float
        Cap on the RBs one FL transfer may hold (``inf``: no cap).
    """

    mode = "ofdma"

    def __init__(
        self,
        env: simpy.Environment,
        recorder: Recorder,
        profile: ChannelProfile,
        scheduler: str,
        rng_for_transfer: Callable[[int], np.random.Generator],
        rng_for_link: Callable[[int], np.random.Generator] | None = None,
        max_rbs_per_transfer: float = float("inf"),
        pf_window_blocks: float = 100.0,
    ):
        super().__init__(env, recorder)
        self.profile = profile
        self._pathloss = profile.build_pathloss()
        self._d2d_pathloss = profile.build_pathloss(d2d=True)
        self._rng_for_transfer = rng_for_transfer
        self._rng_for_link = rng_for_link or (lambda k: np.random.default_rng(k))
        self._link_loss_db: dict[tuple, float] = {}
        self._count = 0
        self.max_rbs_per_transfer = max_rbs_per_transfer
        self.carriers = {
            d: OfdmaCarrier(
                env,
                d,
                profile.num_rbs,
                profile.rb_bandwidth_hz,
                profile.build_fading(),
                profile.efficiency_bps_per_hz,
                scheduler,
                pf_window_blocks,
            )
            for d in ("uplink", "downlink")
        }

    def carrier_for(self, direction: str) -> OfdmaCarrier:
        return self.carriers["downlink" if direction == "downlink" else "uplink"]

    def mean_snr(self, src: Node, dst: Node) -> float:
        """SNR̄ = p_tx·β(d)/σ² of the link ``src → dst`` (FedDif eq. (9) without fading).

        The large-scale loss of a link (path loss at its distance, and where the
        model draws them, the LOS state and shadowing) is drawn once per link and
        drop, reciprocal in the two directions, from the ``shadowing`` stream.
        """
        a, b = sorted((src, dst), key=lambda n: n.name)
        key = (a.name, b.name, *a.position_m.tolist(), *b.position_m.tolist())
        loss_db = self._link_loss_db.get(key)
        if loss_db is None:
            d = float(np.hypot(*(np.asarray(a.position_m) - np.asarray(b.position_m))))
            law = self._d2d_pathloss if (src.is_device and dst.is_device) else self._pathloss
            rng = self._rng_for_link(zlib.crc32(repr(key).encode()))
            loss_db = float(law.loss_db(np.array([d]), rng)[0])
            self._link_loss_db[key] = loss_db
        p_w = self.profile.ue_tx_power_w if src.is_device else self.profile.bs_tx_power_w
        return p_w * 10.0 ** (-loss_db / 10.0) / self.profile.noise_w

    def cue_mean_snr(
        self, position_m: np.ndarray, direction: str, rng: np.random.Generator | None = None
    ) -> float:
        """SNR̄ of a background UE at ``position_m`` to/from the BS at the origin."""
        return self._snr_at(float(np.hypot(*position_m)), False, direction == "downlink", rng)

    def _snr_at(
        self, distance_m: float, d2d: bool, from_bs: bool, rng: np.random.Generator | None
    ) -> float:
        law = self._d2d_pathloss if d2d else self._pathloss
        loss_db = float(law.loss_db(np.array([distance_m]), rng)[0])
        p_w = self.profile.bs_tx_power_w if from_bs else self.profile.ue_tx_power_w
        return p_w * 10.0 ** (-loss_db / 10.0) / self.profile.noise_w

    def _deliver(
        self, src: Node, dst: Node, size_bits: float, direction: str
    ) -> Generator[simpy.Event, Any, dict[str, float] | None]:
        rng = self._rng_for_transfer(self._count)
        self._count += 1
        carrier = self.carrier_for(direction)
        flow = carrier.send(
            size_bits, self.mean_snr(src, dst), rng, cap_rbs=self.max_rbs_per_transfer
        )
        start = self.env.now
        yield flow.done
        snr = carrier.mean_snr(flow, self.env.now - start)
        return {
            "rb_subframes": flow.rb_seconds / SUBFRAME_S,
            "mean_snr_db": float(linear_to_db(snr)),
        }

    def __repr__(self) -> str:
        return f"OfdmaRadio({self.profile.name!r}, {self.carriers['uplink']!r})"
