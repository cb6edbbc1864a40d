"""Radio energy by state: UE airtime, queueing and RRC tail; BS load-dependent power.

UE (Huang et al., MobiSys 2012): a transfer costs ``tx_power_w`` (sender) or
``rx_power_w`` (receiver) — plus, where the profile has one, a slope per Mbit/s of the
transfer's throughput on air (their P = α·R + β) — × its *airtime* (the time it holds
resource blocks), plus ``radio_wait_power_w`` × the time it is active but queued. A
transfer of an idle UE (no transfer, tail over) waits for its promotion to RRC
connected (``rrc_promotion_s`` at ``rrc_promotion_power_w``) where the profile has one. When a UE's
last active transfer ends, its modem stays connected for ``rrc_tail_s`` at
``rrc_tail_power_w``; the tail ends early when the next transfer starts.
Tails are charged lazily (at the next transfer start or when the runner
settles the meters at a round's end), so a tail is never charged twice.

BS (EARTH model, G. Auer et al., "How much energy is needed to run a
wireless network?", IEEE Wireless Communications 18(5), 2011, eq. (1) and
Table 2): P_in = N_TRX·(P0 + Δp·P_out), P_out = load·P_max, charged while the
BS carries at least one FL transfer (up- or downlink), once for the cell,
never per concurrent flow. ``load`` is the share of downlink resources FL
transfers hold (for TDD, times the downlink time fraction); 1 on fixed-rate
links while any downlink transfer is active.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import simpy

from netfl.core.nodes import Node

__all__ = ["BsPowerModel", "BsRadioMeter", "UeRadioStates"]


@dataclass(frozen=True)
class BsPowerModel:
    """EARTH macro-BS power model (Auer et al. 2011, Table 2 macro row).

    Parameters
    ----------
    p0_w : float
        Power at zero RF output while active [W] (130 W).
    delta_p : float
        Slope of the load-dependent part (4.7).
    max_tx_power_w : float
        RF output at full load P_max [W] (20 W = 43 dBm).
    num_trx : int
        Transceiver chains charged (1: one sector, one chain).
    """

    p0_w: float = 130.0
    delta_p: float = 4.7
    max_tx_power_w: float = 20.0
    num_trx: int = 1

    def input_power_w(self, load: float) -> float:
        """P_in = N_TRX·(P0 + Δp·load·P_max) [W], ``load`` in [0, 1]."""
        return self.num_trx * (self.p0_w + self.delta_p * load * self.max_tx_power_w)


class BsRadioMeter:
    """Integrates the BS input power over the intervals it carries FL traffic.

    Call :meth:`update` after every change of the busy count or of the
    downlink load: it charges the elapsed interval at the *stored* state, then
    reads the new state.
    """

    def __init__(
        self, env: simpy.Environment, node: Node, model: BsPowerModel, load: Callable[[], float]
    ):
        self.env, self.node, self.model = env, node, model
        self._load_fn = load
        self.active = 0
        self._busy = False
        self._load = 0.0
        self._t = env.now

    def update(self) -> None:
        now = self.env.now
        dt = now - self._t
        if dt > 0 and self._busy:
            self.node.energy.bs_radio_s += dt
            self.node.energy.bs_radio_j += self.model.input_power_w(self._load) * dt
        self._t = now
        self._busy = self.active > 0
        self._load = min(max(self._load_fn(), 0.0), 1.0) if self._busy else 0.0


class UeRadioStates:
    """RRC state of every UE: active transfer count, its pending tail, its promotion."""

    def __init__(self, env: simpy.Environment):
        self.env = env
        self._active: dict[str, int] = {}
        self._tail: dict[str, tuple[float, float, Node]] = {}  # name → (charged to, tail end)
        self._promoted_until: dict[str, float] = {}

    def promote(self, node: Node) -> float:
        """When ``node`` is RRC connected: now if it is (a transfer or its tail), else —
        with a promotion in its profile — after it, charged now (``promotion``); a
        promotion under way is shared by the transfers that wait for it."""
        c = node.compute
        if c.rrc_promotion_s <= 0:
            return self.env.now
        self.charge_tail(node)
        until = self._promoted_until.get(node.name, -1.0)
        if until >= self.env.now:
            return until
        if self._active.get(node.name, 0) or node.name in self._tail:
            return self.env.now
        until = self.env.now + c.rrc_promotion_s
        self._promoted_until[node.name] = until
        node.energy.promotion_s += c.rrc_promotion_s
        node.energy.promotion_j += c.rrc_promotion_power_w * c.rrc_promotion_s
        return until

    def charge_tail(self, node: Node) -> None:
        """Charge ``node``'s pending tail up to now."""
        entry = self._tail.get(node.name)
        if entry is None:
            return
        charged_to, end, _ = entry
        upto = min(self.env.now, end)
        if upto > charged_to:
            node.energy.tail_s += upto - charged_to
            node.energy.tail_j += node.compute.rrc_tail_power_w * (upto - charged_to)
        if upto >= end:
            del self._tail[node.name]
        else:
            self._tail[node.name] = (upto, end, node)

    def start(self, nodes: Iterable[Node]) -> None:
        for node in nodes:
            if not node.is_device:
                continue
            self.charge_tail(node)
            self._tail.pop(node.name, None)  # a new transfer ends the tail
            self._active[node.name] = self._active.get(node.name, 0) + 1

    def end(self, nodes: Iterable[Node]) -> None:
        now = self.env.now
        for node in nodes:
            if not node.is_device:
                continue
            self._active[node.name] -= 1
            if self._active[node.name] == 0 and node.compute.rrc_tail_s > 0:
                self._tail[node.name] = (now, now + node.compute.rrc_tail_s, node)

    def settle(self) -> None:
        """Charge every pending tail up to now (the runner calls this at round ends)."""
        for _, _, node in list(self._tail.values()):
            self.charge_tail(node)
