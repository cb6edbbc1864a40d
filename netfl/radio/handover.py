"""Moving devices in a multi-cell network (issue 23, item 3): their measurements along
their paths (evaluated ahead of the clock), the A3 rule on them, the handovers and the
interruptions they cause, and the SNR terms of a moving UE's link along its path. A part
the network radio composes (:class:`~netfl.radio.multicell_radio.MultiCellRadio`): it
holds the paths, the A3 states and the measurements ahead; the network asks it through
its interface (:data:`INTERFACE`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import simpy

from channel_models.mobility import a3_handovers
from netfl.core.nodes import Node
from netfl.radio.site_geometry import SEGMENT_INSTANTS

__all__ = [
    "CAP_STEP",
    "FIRST_PLAN_SAMPLES",
    "INTERFACE",
    "HandoverControl",
    "MovingLink",
    "PLAN_SAMPLES",
    "SEGMENT",
]

#: a moving UE's measurement instants evaluated at once, ahead of the clock, at most
PLAN_SAMPLES = 128
#: ... at first: a UE's plan grows geometrically from this many instants (doubling on
#: each contiguous extension up to :data:`PLAN_SAMPLES`), so a UE whose path is asked
#: about only briefly (a short round, one transfer) is not measured many seconds ahead
FIRST_PLAN_SAMPLES = 64
#: ... in aligned segments of this many instants, each evaluated on its own
SEGMENT = SEGMENT_INSTANTS
#: a moving power-limited flow's cap is re-set when its usable RBs change by this factor
#: (1 dB) along its path
CAP_STEP = 10.0**0.1
#: what the network radio uses of its handover control (tested)
INTERFACE = (
    "settings",
    "serving",
    "mobile",
    "paths",
    "handovers",
    "follow",
    "measured",
    "measurement",
    "track",
    "predict",
    "associate",
    "busy_until",
    "forget_after",
    "table",
)


class HandoverControl:
    """The A3 rule along moving devices' paths.

    Parameters
    ----------
    geometry
        The network's :class:`~netfl.radio.site_geometry.SiteGeometry` (measurements
        along paths).
    settings
        ``hysteresis_db``, ``ttt_s``, ``interruption_s``, ``sample_s``, ``filter_k``.
    """

    def __init__(
        self,
        env: simpy.Environment,
        geometry: Any,
        num_cells: int,
        settings: dict[str, float],
    ):
        self.env, self.geometry = env, geometry
        self._serving: dict[str, int] = {}
        #: each device's serving cell (device name → cell), read only: set at a drop
        #: (:meth:`associate`), then by the A3 rule — the other parts read it here
        self.serving: Mapping[str, int] = MappingProxyType(self._serving)
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
        self._chunk: dict[str, int] = {}  # (each UE's next plan extension, instants)
        self._ahead: dict[str, dict] = {}  # (the A3 rule run ahead: :meth:`predict`)

    def associate(self, serving: Mapping[str, int]) -> None:
        """The devices' serving cells set at a drop (the network's association): what
        the rule ran ahead from the old ones no longer holds."""
        self._serving.clear()
        self._serving.update({name: int(c) for name, c in serving.items()})
        self._ahead.clear()

    def follow(self, paths: dict[str, Any]) -> None:
        """Devices (name → trajectory: ``positions(t)``) that move along known paths."""
        self.mobile = set(paths)
        self.geometry.follow({n: p.positions(np.zeros(1))[0] for n, p in paths.items()})
        self.paths = paths
        for kept in (self._plans, self._chunk, self._ahead):  # (new paths: measured anew)
            kept.clear()

    def measured(self, ue: Node, k_lo: int, k_hi: int) -> np.ndarray:
        """``(k_hi − k_lo + 1, cells)`` coupling losses [dB] of moving ``ue`` at the
        measurement instants k·``sample_s``, k_lo ≤ k ≤ k_hi, on its path: evaluated
        ahead of the clock in whole segments of :data:`SEGMENT` instants (k from a
        multiple of it; :meth:`SiteGeometry.coupling_along` evaluates each segment on its
        own, so the values do not depend on how the path is cut into calls) —
        :data:`FIRST_PLAN_SAMPLES` at first, twice as many at each extension up to
        :data:`PLAN_SAMPLES` — and kept until the clock has passed them."""
        k0, rows = self._plans.get(  # (a first plan from a segment start)
            ue.name, (k_lo - k_lo % SEGMENT, np.zeros((0, self.num_cells)))
        )
        end = k0 + len(rows)
        if k_lo < k0 or k_hi >= end:
            chunk = self._chunk.get(ue.name, FIRST_PLAN_SAMPLES)
            if k_lo < k0 or k_lo > end:  # (not contiguous: afresh, from a segment start)
                k0 = end = k_lo - k_lo % SEGMENT
                rows, chunk = rows[:0], FIRST_PLAN_SAMPLES
            self._chunk[ue.name] = min(2 * chunk, PLAN_SAMPLES)
            last = max(k_hi, end + chunk - 1)
            last += -(last + 1) % SEGMENT  # (whole segments)
            step = self.settings["sample_s"]
            path = self.paths[ue.name]
            new = [
                self.geometry.coupling_along(
                    ue,
                    path.positions(np.arange(a, min(a + 512, last + 1)) * step),
                    SEGMENT,
                    a,
                    lambda ks, path=path: path.positions(ks * step),
                )
                for a in range(end, last + 1, 512)
            ]
            # the instants before the clock's last are never asked again
            clock = math.floor(self.env.now / step + 1e-9)
            drop = max(min(k_lo, clock) - k0 - 1, 0)
            rows = np.concatenate([rows, *new])[drop:]
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
            self._serving[ue.name] = dst
            self._busy_until[ue.name] = when + self.settings["interruption_s"]

    def predict(self, ue: Node, k_from: int, k_to: int) -> float | None:
        """The first handover of ``ue`` at measurement instants k_from…k_to (the clock has
        brought its A3 state to k_from − 1), or None. The rule is run ahead once per
        instant: on a copy of the state, from the first instant asked about on, its
        events kept — a later question about instants it has passed is answered from
        them (the state the clock brings along is the same: the same rule on the same
        measurements), one about later instants runs it on from where it stopped."""
        ahead = self._ahead.get(ue.name)
        if ahead is None or ahead["first"] > k_from:
            ahead = self._ahead[ue.name] = {
                "first": k_from,
                "next": k_from,
                "state": dict(self._a3.get(ue.name, {})),  # (a copy: the rule runs ahead)
                "serving": self.serving[ue.name],
                "events": [],
            }
        step = self.settings["sample_s"]
        if ahead["next"] <= k_to:
            events = a3_handovers(
                np.arange(ahead["next"], k_to + 1) * step,
                -self.measured(ue, ahead["next"], k_to),
                ahead["serving"],
                self.settings["hysteresis_db"],
                self.settings["ttt_s"],
                ahead["state"],
                self.settings["filter_k"],
            )
            ahead["events"] += events
            ahead["serving"] = events[-1][2] if events else ahead["serving"]
            ahead["next"] = k_to + 1
        lo, hi = k_from * step, k_to * step
        ahead["events"] = [e for e in ahead["events"] if e[0] >= lo]  # (the past: never again)
        ahead["first"] = k_from  # (what was dropped cannot answer an earlier question)
        return next((e[0] for e in ahead["events"] if e[0] <= hi), None)

    def forget_after(self, t_s: float) -> None:
        """The handovers recorded after ``t_s`` belonged to a round that was dropped (the
        run stopped in it): they leave the ``handovers`` table."""
        self.handovers = [h for h in self.handovers if h[0] <= t_s]

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
        empty = np.zeros(0)
        self._kept: tuple = (0, empty, empty, empty, None)

    def terms(self, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        step = self.handover.settings["sample_s"]
        at = np.maximum(self.start_s, np.asarray(blocks) * self.block_s)
        ks = np.floor(at / step + 1e-9).astype(int)
        if ks.size < 2:
            return self.sample_terms(ks)
        # (the blocks of one measurement share its terms: each instant evaluated once)
        first = np.empty(ks.size, dtype=bool)
        first[0] = True
        np.not_equal(ks[1:], ks[:-1], out=first[1:])
        psd, total = self.sample_terms(ks[first])
        which = np.cumsum(first) - 1
        return psd[which], total[which]

    def sample_terms(self, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(per-RB SINR, SINR of all power in one RB)`` at measurement instants ``ks``:
        the SNR terms of an instant are kept (its measurement never changes), the
        interference is the one now."""
        lo, hi = int(ks.min()), int(ks.max())
        k0, loss, psd, total, snr = self._kept
        if lo < k0 or hi >= k0 + len(loss):
            loss = self.handover.measured(self.ue, lo, hi)  # (instants, cells)
            psd, total = self.cell_radio.snr_terms(loss[:, self.cell], not self.uplink, self.uplink)
            k0, total = lo, np.broadcast_to(total, psd.shape)
            snr = None if self.uplink else self.interference.downlink_snrs(loss)
            self._kept = (k0, loss, psd, total, snr)
        at = ks - k0
        scale = self.interference.path_scales(
            self.cell, self.uplink, loss[at], None if snr is None else snr[at]
        )
        return psd[at] * scale, total[at] * scale
