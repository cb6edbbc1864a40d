"""Moving devices in a multi-cell network (issue 23, item 3): their measurements along
their paths (evaluated ahead of the clock), the A3 rule on them, the handovers and the
interruptions they cause, and the SNR terms of a moving UE's link along its path. A part
the network radio composes (:class:`~netfl.radio.multicell_radio.MultiCellRadio`): it
holds the paths, the A3 states and the measurements ahead; the network asks it through
its interface (:data:`INTERFACE`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import simpy

from channel_models.mobility import a3_handovers
from netfl.core.nodes import Node

__all__ = ["CAP_STEP", "INTERFACE", "HandoverControl", "MovingLink", "PLAN_SAMPLES"]

#: a moving UE's measurement instants evaluated at once, ahead of the clock
PLAN_SAMPLES = 128
#: a moving power-limited flow's cap is re-set when its usable RBs change by this factor
#: (1 dB) along its path
CAP_STEP = 10.0**0.1
#: what the network radio uses of its handover control (tested)
INTERFACE = (
    "settings",
    "mobile",
    "paths",
    "handovers",
    "follow",
    "measured",
    "measurement",
    "track",
    "predict",
    "busy_until",
    "table",
)


class HandoverControl:
    """The A3 rule along moving devices' paths.

    Parameters
    ----------
    geometry
        The network's :class:`~netfl.radio.site_geometry.SiteGeometry` (measurements
        along paths); ``serving`` its association (updated here on a handover).
    settings
        ``hysteresis_db``, ``ttt_s``, ``interruption_s``, ``sample_s``, ``filter_k``.
    """

    def __init__(
        self,
        env: simpy.Environment,
        geometry: Any,
        serving: dict[str, int],
        num_cells: int,
        settings: dict[str, float],
    ):
        self.env, self.geometry, self.serving = env, geometry, serving
        self.num_cells = num_cells
        #: the A3 rule's hysteresis [dB] and time-to-trigger [s], the interruption [s],
        #: the measurement period [s] and the layer-3 filter coefficient
        self.settings = dict(settings)
        #: moving devices (names) and their paths (name → ``positions(t)``)
        self.mobile: set[str] = set()
        self.paths: dict[str, Any] = {}
        #: ``(time, device, from, to)`` of every handover applied
        self.handovers: list[tuple[float, str, int, int]] = []
        self._a3: dict[str, dict] = {}
        self._busy_until: dict[str, float] = {}
        self._plans: dict[str, tuple[int, np.ndarray]] = {}

    def follow(self, paths: dict[str, Any]) -> None:
        """Devices (name → trajectory: ``positions(t)``) that move along known paths."""
        self.mobile = self.geometry.mobile = set(paths)
        self.paths = paths

    def measured(self, ue: Node, k_lo: int, k_hi: int) -> np.ndarray:
        """``(k_hi − k_lo + 1, cells)`` coupling losses [dB] of moving ``ue`` at the
        measurement instants k·``sample_s``, k_lo ≤ k ≤ k_hi, on its path: evaluated
        ahead of the clock, :data:`PLAN_SAMPLES` instants at a time (one vectorised
        :meth:`coupling_along`), and kept until the clock has passed them."""
        k0, rows = self._plans.get(ue.name, (k_lo, np.zeros((0, self.num_cells))))
        end = k0 + len(rows)
        if k_lo < k0 or k_hi >= end:
            if k_lo < k0 or k_lo > end:  # (not contiguous: afresh)
                k0, rows, end = k_lo, rows[:0], k_lo
            last = max(k_hi, end + PLAN_SAMPLES - 1)
            step = self.settings["sample_s"]
            path = self.paths[ue.name]
            new = [
                self.geometry.coupling_along(
                    ue, path.positions(np.arange(a, min(a + 512, last + 1)) * step)
                )
                for a in range(end, last + 1, 512)
            ]
            drop = max(k_lo - k0 - 1, 0)  # (the instants before are never asked again)
            rows = np.concatenate([rows[drop:], *new])
            k0 += drop
            self._plans[ue.name] = (k0, rows)
        return rows[k_lo - k0 : k_hi - k0 + 1]

    def measurement(self, ue: Node) -> np.ndarray:
        """Moving ``ue``'s coupling loss to every cell [dB] at its last measurement
        instant (now or the one before): what its reports tell the network."""
        k = math.floor(self.env.now / self.settings["sample_s"] + 1e-9)
        return self.measured(ue, k, k)[0]

    def track(self, ue: Node, t0_s: float, t1_s: float) -> None:
        """Apply the A3 rule to ``ue``'s RSRP measured every ``sample_s`` along its path
        over (t0, t1] (equal BS powers: RSRP = P − coupling loss; :meth:`measured`),
        carrying the layer-3 filter and a pending time-to-trigger across calls; record
        each handover and move the UE."""
        step = self.settings["sample_s"]
        k0, k1 = math.floor(t0_s / step + 1e-9) + 1, math.floor(t1_s / step + 1e-9)
        if k1 < k0:
            return
        t = np.arange(k0, k1 + 1) * step
        rsrp = -self.measured(ue, k0, k1)
        serving = self.serving[ue.name]
        events = a3_handovers(
            t,
            rsrp,
            serving,
            self.settings["hysteresis_db"],
            self.settings["ttt_s"],
            self._a3.setdefault(ue.name, {}),
            self.settings["filter_k"],
        )
        for when, src, dst in events:
            self.handovers.append((when, ue.name, src, dst))
            self.serving[ue.name] = dst
            self._busy_until[ue.name] = when + self.settings["interruption_s"]

    def predict(self, ue: Node, k_from: int, k_to: int) -> float | None:
        """The first handover of ``ue`` at measurement instants k_from…k_to (its A3 rule
        run ahead on a copy of its state, which the clock has brought to k_from − 1),
        or None."""
        step = self.settings["sample_s"]
        events = a3_handovers(
            np.arange(k_from, k_to + 1) * step,
            -self.measured(ue, k_from, k_to),
            self.serving[ue.name],
            self.settings["hysteresis_db"],
            self.settings["ttt_s"],
            dict(self._a3.get(ue.name, {})),  # (a copy: the rule runs ahead)
            self.settings["filter_k"],
        )
        return events[0][0] if events else None

    def busy_until(self, devices: Sequence[Node]) -> float:
        """The end of the devices' handover interruptions (0: none)."""
        return max((self._busy_until.get(d.name, 0.0) for d in devices), default=0.0)

    def table(self) -> pd.DataFrame:
        """``handovers``: one row per handover."""
        return pd.DataFrame(self.handovers, columns=["time_s", "device", "from_cell", "to_cell"])


class MovingLink:
    """The SNR terms of a moving UE's link with cell ``cell`` along its path
    (:class:`~netfl.radio.ofdma.LinkPath`), for a flow started at ``start_s``: the
    fading block starting at t is rated at the UE's last measurement at
    max(start, t) — the link adaptation following its reports, every ``sample_s`` —
    with the interference now (:meth:`~netfl.radio.interference.Interference.path_scales`
    at each measurement's SNRs from every cell). When ``sample_s`` is a multiple of
    the fading block (the profiles' 1 and 5 ms under the 40 ms default), this is the
    re-rating at every measurement instant exactly."""

    def __init__(
        self,
        handover: HandoverControl,
        cell_radio: Any,
        interference: Any,
        ue: Node,
        direction: str,
        start_s: float,
        block_s: float,
    ):
        self.handover, self.cell_radio, self.interference = handover, cell_radio, interference
        self.ue, self.cell = ue, cell_radio.cell
        self.uplink = direction == "uplink"
        self.start_s, self.block_s = float(start_s), float(block_s)

    def terms(self, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        step = self.handover.settings["sample_s"]
        at = np.maximum(self.start_s, np.asarray(blocks) * self.block_s)
        return self.sample_terms(np.floor(at / step + 1e-9).astype(int))

    def sample_terms(self, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(per-RB SINR, SINR of all power in one RB)`` at measurement instants ``ks``."""
        lo, hi = int(ks.min()), int(ks.max())
        loss = self.handover.measured(self.ue, lo, hi)[ks - lo]  # (instants, cells)
        psd, total = self.cell_radio.snr_terms(loss[:, self.cell], not self.uplink, self.uplink)
        scale = self.interference.path_scales(self.cell, self.uplink, loss)
        return psd * scale, np.broadcast_to(total, psd.shape) * scale
