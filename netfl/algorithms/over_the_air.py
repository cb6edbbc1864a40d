"""Over-the-air aggregation of a round's updates on an OFDMA cell: broadband analog
aggregation (BAA; G. Zhu, Y. Wang, K. Huang, "Broadband Analog Aggregation for
Low-Latency Federated Edge Learning", IEEE TWC 2020).

Every client of the round transmits its update at the same time on every data RB of the
uplink, as analog symbols — two real values per complex symbol — so the upload lasts

    T = ⌈q / 2⌉ / (M · B_RB · f)

for q values, M data RBs of B_RB Hz and the uplink's time fraction f, whatever the
number of devices. Each device inverts its channel, truncated (§III-A): in a fading block
where its gain |h|² is at least the threshold g_th it transmits at the power that makes
its received SNR per symbol ρ0, and nothing otherwise. Under an average power limit
(its power class spread over the M RBs, received per symbol at γ_k = the cell's per-RB
SNR with that spread) the largest common ρ0 is

    ρ0 = min_k γ_k / E[1/|h|² ; |h|² ≥ g_th]     (Rayleigh: the expectation is E1(g_th))

so the weakest device sets the receive SNR (their cell-interior scheduling raises it).
Device k pre-scales its update to x_k = w_k·Δ_k / c (w_k = n_k/Σn, c the largest
device's RMS so that E|x_k|² ≤ 1 per complex symbol; the scales are a few numbers of
control signalling, not counted); the BS receives y = Σ_k √ρ0·x_k·1[not truncated] + z,
z ~ CN(0, 1) per symbol, and estimates the weighted average update

    Δ̂ = c · y / √ρ0 = Σ_k w_k Δ_k 1[k not truncated in that value's block] + c·z/√ρ0,

so each real value carries noise of variance c²/(2ρ0) and a truncated device's share of
a block is missing (the truncation error). The fading is the cell's law per coherence
block: the link's keyed gains under ``fading_draw: per_link``, else a draw per round
and device (the ``ota_fading`` stream). Each device radiates p = P·ρ0/(γ_k|h|²) in the
blocks it transmits in (an upper bound: only the largest device's symbols have unit
energy) — Zhu et al.'s average power constraint, so in a block near the threshold p
exceeds the power class P (by up to γ_k/(γ_min·g_th·E1(g_th))). Its airtime is the
time of those blocks; the modem is charged as a transfer's (its tx power, plus
``tx_power_per_w`` × what it radiates where the profile has it; no throughput term:
analog symbols have no bit rate). A model's buffers (BatchNorm statistics, counters) go
digitally beside it and are averaged as FedAvg does.

On a multi-cell network (:class:`~netfl.radio.multicell_radio.MultiCellRadio`, static
devices) every cell with clients in the round runs its own slot at the same time, on its
own uplink RBs, with ρ0_c set by its own weakest client; its BS estimates its clients'
share Σ_{k∈c} w_k Δ_k (w_k over the whole round) and forwards it over its backhaul to the
server (one update's bits, a ``model_up`` backhaul record), which adds the cells' shares.
The other cells' clients transmit on the same RBs at once, so BS c hears all of them — a
sum over devices, not the mean UE of a digital uplink — as Gaussian interference of
per-RB power over noise

    INR_c = Σ_{x ∉ c} p̄_x g_xc / (M N_RB)  +  Σ_{c' without clients} η_c' I_c'c

(p̄_x device x's radiated power averaged over T, g_xc its coupling gain to BS c — path
loss, shadowing and the sector antenna, fading averaged out; the second term the
network's interference model for the cells not in the slot, :meth:`Interference.inr`;
``network.interference.model: none``: 0), so cell c's estimate carries noise of variance
c_c²·(1 + INR_c)/(2ρ0_c): its receive SINR is ρ0_c/(1 + INR_c).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    import simpy

    from netfl.algorithms.context import RoundContext
    from netfl.core.nodes import Node

__all__ = ["OtaConfig", "OverTheAir", "inverse_gain_mean", "ota_estimate"]


class OtaConfig(BaseModel):
    """``algorithm.over_the_air``: the BAA uplink's options."""

    model_config = ConfigDict(extra="forbid")

    gain_threshold: float = Field(
        0.1,
        ge=0.0,
        le=100.0,
        description="g_th: a device transmits in a fading block only where |h|² ≥ g_th "
        "(truncated channel inversion); 0 needs fading: none (inversion of a Rayleigh "
        "channel has no finite mean power)",
    )
    noise: bool = Field(True, description="receiver noise in the aggregate (off: a check)")


def inverse_gain_mean(law: Any, threshold: float) -> float:
    """E[1/|h|² ; |h|² ≥ g_th] of a fading law: Rayleigh's E1(g_th) (the exponential
    integral); no fading: 1 (0 when the threshold exceeds 1)."""
    from scipy.special import exp1

    if law.name == "none":
        return 1.0 if threshold <= 1.0 else 0.0
    if law.name == "rayleigh":
        return float(exp1(threshold)) if threshold > 0 else math.inf
    raise ValueError(f"over-the-air aggregation: fading {law.name!r} (rayleigh or none)")


def ota_estimate(
    deltas: list[dict[str, Any]],
    weights: np.ndarray,
    active: np.ndarray,
    rho0: float,
    noise: np.random.Generator | None,
) -> tuple[dict[str, Any], float]:
    """The BS's estimate of Σ_k w_k Δ_k from analog superposition, and c (``rho0``: its
    receive SINR, ρ0/(1 + INR) under interference).

    Parameters
    ----------
    deltas : list of dict
        Each device's update (the floating tensors that go over the air, by name; the
        same names for all).
    weights : array (K,)
        w_k (summing to 1 over the round: on a network, these devices' shares of it).
    active : bool array (K, S)
        Whether device k transmits complex symbol s (not truncated in its block).
    rho0 : float
        Receive SNR per symbol [linear].
    noise : Generator or None
        Draws the receiver noise (None: none).
    """
    import torch

    names = list(deltas[0])
    flat = [torch.cat([d[k].reshape(-1).to(torch.float64) for k in names]) for d in deltas]
    x = torch.stack([w * f for w, f in zip(weights, flat, strict=True)])  # (K, q)
    q = x.shape[1]
    c = float(torch.sqrt(2.0 * (x**2).mean(dim=1)).max())  # (E|symbol|² ≤ 1 per device)
    mask = torch.from_numpy(np.repeat(active, 2, axis=1)[:, :q])
    total = (x * mask).sum(dim=0)
    if noise is not None and c > 0:
        z = torch.from_numpy(noise.normal(0.0, math.sqrt(0.5), q))
        total = total + c * z / math.sqrt(rho0)
    out, at = {}, 0
    for k in names:
        ref = deltas[0][k]
        n = ref.numel()
        out[k] = total[at : at + n].reshape(ref.shape).to(ref.dtype)
        at += n
    return out, c


class OverTheAir:
    """The round's analog uplink (:mod:`netfl.algorithms.over_the_air`), a part of an
    algorithm of FedAvg's family."""

    def __init__(self, world: RoundContext, config: OtaConfig, num_values: int):
        self.world = world
        self.config = config
        #: q: the real values of one update
        self.num_values = int(num_values)
        radio = world.radio
        cells = getattr(radio, "cells", None)  # (a network: each cell's carriers alike)
        self.carrier = (cells[0] if cells else radio).carriers["uplink"]
        self.law = radio.profile.build_fading()
        self.inverse_mean = inverse_gain_mean(self.law, config.gain_threshold)

    def duration_s(self) -> float:
        """T = ⌈q/2⌉ / (M · B_RB · f) [s]."""
        c = self.carrier
        return math.ceil(self.num_values / 2) / (c.num_rbs * c.rb_bandwidth_hz * c.time_fraction)

    def cells_of(self, clients: list[Node]) -> list[tuple[int, Any, Node, list[int]]]:
        """The slots of a round: ``(cell, its radio, its BS node, the indices of its
        clients)`` per cell with clients — one, the cell and ``world.bs``, off a network."""
        radio = self.world.radio
        cells = getattr(radio, "cells", None)
        if cells is None:
            return [(0, radio, self.world.bs, list(range(len(clients))))]
        by_cell: dict[int, list[int]] = {}
        for k, device in enumerate(clients):
            by_cell.setdefault(radio.serving[device.name], []).append(k)
        return [(c, cells[c], radio.cell_nodes[c], ks) for c, ks in sorted(by_cell.items())]

    def symbol_snr(self, device: Node, cell: Any = None, node: Node | None = None) -> float:
        """γ_k: the device's received SNR per symbol at ``node`` (the BS of ``cell``;
        default the cell's) with its whole power class spread over the uplink's data RBs
        [linear] (no power-control target: the inversion sets its power; no interference:
        it enters the estimate's noise, :meth:`interference`)."""
        cell, node = cell or self.world.radio, node or self.world.bs
        network = getattr(cell, "network", None)
        _, psd, total = (
            network.link_terms(cell, (device, node))
            if network is not None
            else cell.link_now(device, node)
        )
        return float(total / self.carrier.num_rbs) if math.isfinite(total) else float(psd)

    def gains(
        self,
        r: int,
        device: Node,
        t0: float,
        blocks: int,
        cell: Any = None,
        node: Node | None = None,
    ) -> np.ndarray:
        """|h|² of ``device``'s uplink to ``node`` (of ``cell``; default the cell's) in
        the ``blocks`` fading blocks from ``t0``."""
        cell, node = cell or self.world.radio, node or self.world.bs
        fading = cell.link_fading
        if fading is not None:
            key = fading.link_key(device.name, node.name)
            return fading.gains(key, fading.block_of(t0), blocks)
        rng = self.world.streams.generator("ota_fading", r, device.index)
        return np.asarray(self.law.sample(rng, blocks), dtype=float)

    def plan(
        self, r: int, devices: list[Node], t0: float, cell: Any = None, node: Node | None = None
    ) -> dict[str, Any]:
        """Round ``r``'s transmission from ``t0`` to ``node`` (the BS of ``cell``; default
        the cell's): T, ρ0, which device sends which symbol, and each one's mean radiated
        power over its airtime."""
        T = self.duration_s()
        tc = self.law.coherence_time_s
        k0 = math.floor(t0 / tc)
        blocks = math.floor((t0 + T) / tc) - k0 + 1
        symbols = math.ceil(self.num_values / 2)
        # the block of each symbol (sent in order over T)
        at = t0 + (np.arange(symbols) + 0.5) * (T / symbols)
        block_of = np.minimum(np.floor(at / tc).astype(int) - k0, blocks - 1)
        edges = np.clip((k0 + np.arange(blocks + 1)) * tc, t0, t0 + T)
        span = np.diff(edges)  # (the time of T in each block)
        gamma = np.array([self.symbol_snr(d, cell, node) for d in devices])
        rho0 = float(gamma.min() / self.inverse_mean) if len(devices) else 0.0
        g = np.array([self.gains(r, d, t0, blocks, cell, node) for d in devices])
        g = g.reshape(len(devices), -1)
        on = g >= self.config.gain_threshold
        active = on[:, block_of]
        power_class = np.array([self.world.radio.power_class_w(d) for d in devices])
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(on, power_class[:, None] * rho0 / (gamma[:, None] * g), 0.0)
        airtime = (on * span).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            radiated = np.where(airtime > 0, (p * span).sum(axis=1) / airtime, 0.0)
        return {
            "duration_s": T,
            "rho0": rho0,
            "active": active,
            "airtime_s": airtime,
            "radiated_w": radiated,
            "sent_fraction": active.mean(axis=1) if symbols else np.ones(len(devices)),
        }

    def interference(
        self, clients: list[Node], slots: list[tuple[int, Any, Node, list[int]]], plans: list[dict]
    ) -> np.ndarray:
        """INR_c of each slot's BS (linear; :mod:`netfl.algorithms.over_the_air`): the
        other slots' clients at their mean radiated power over T, summed, plus the
        network's interference model for the cells without clients
        (:meth:`MultiCellRadio.analog_uplink_inr`); 0 off a network."""
        radio = self.world.radio
        if getattr(radio, "cells", None) is None:
            return np.zeros(len(slots))
        mean_w = np.zeros(len(clients))
        for (_, _, _, ks), plan in zip(slots, plans, strict=True):
            mean_w[ks] = plan["radiated_w"] * plan["airtime_s"] / plan["duration_s"]
        inr = radio.analog_uplink_inr(clients, mean_w)
        return np.array([inr[c] for c, *_ in slots])

    def slot(
        self,
        r: int,
        clients: list[Node],
        results: list[Any],
        global_state: dict | None,
        model_bits: Callable[[Node], float],
        raw: frozenset[str],
    ) -> Generator[simpy.Event, Any, dict | None]:
        """Round ``r``'s analog slot for ``clients`` (their ``results``; None in timing
        mode; promoted to RRC connected by the round): one upload's time T whatever their
        number — on a network, one slot per cell with clients, at once, each cell's share
        then over its backhaul —, active for the radio's state (RRC tails from its end,
        the BS's meter); each gets a ``model_up`` record over T (``airtime_s`` the blocks
        it transmitted in, ``delivered_bits`` the share of its ``model_bits`` not
        truncated — or sent before it left during T —, ``mean_snr_db`` its cell's
        receive SINR ρ0/(1 + INR)) and its policy outcome. Returns the new global model:
        ``global_state`` moved by the BSs' estimates of Σ w_k Δ_k, noise, interference
        and truncation included, the ``raw`` tensors (buffers) averaged as FedAvg's
        (None: nothing to learn)."""
        world, env = self.world, self.world.env
        if not clients:
            return None
        t0 = env.now
        slots = self.cells_of(clients)
        plans = [
            self.plan(r, [clients[k] for k in ks], t0, cell, node) for _, cell, node, ks in slots
        ]
        sinr = [
            p["rho0"] / (1.0 + i)
            for p, i in zip(plans, self.interference(clients, slots, plans), strict=True)
        ]
        T = plans[0]["duration_s"]
        for _, cell, node, ks in slots:  # (their RRC state and the BS's meter: active)
            cell.begin([*(clients[k] for k in ks), node], "uplink")
        yield env.timeout(T)
        for _, cell, node, ks in slots:  # (the tails start now)
            cell.end([*(clients[k] for k in ks), node], "uplink")
        for (_, cell, node, ks), plan, rho in zip(slots, plans, sinr, strict=True):
            active = plan["active"]
            symbols = active.shape[1]
            for j, k in enumerate(ks):
                cut = world.activities.is_cut(clients[k])
                if cut is not None and t0 <= cut.at_s < t0 + T:  # (it left during the slot)
                    active[j, int(symbols * (cut.at_s - t0) / T) :] = False
            sent = active.mean(axis=1) if symbols else np.ones(len(ks))
            rho_db = 10.0 * np.log10(rho) if rho > 0 else float("-inf")
            for j, k in enumerate(ks):
                bits = model_bits(clients[k])
                cell.record(
                    clients[k],
                    node,
                    "model_up",
                    "uplink",
                    bits,
                    t0,
                    1,
                    {
                        "airtime_s": float(plan["airtime_s"][j]),
                        "mean_snr_db": rho_db,
                        "delivered_bits": bits * float(sent[j]),
                    },
                    radiated_w=float(plan["radiated_w"][j]),
                    analog=True,
                )

        def forward(c: int, ks: list[int]) -> Generator[simpy.Event, Any, None]:
            """Cell ``c``'s share to the server over its backhaul (none from the
            server's site); its clients arrive with it, as digital uploads do."""
            yield from world.radio.backhaul_hop(
                c, "uplink", model_bits(clients[ks[0]]), "model_up", 1
            )
            for k in ks:
                world.policy.release(r, clients[k], "arrived")

        hops = []
        for c, cell, _, ks in slots:
            if cell is world.radio:  # (one cell: the BS is the server)
                for k in ks:
                    world.policy.release(r, clients[k], "arrived")
            else:
                hops.append(env.process(forward(c, ks)))
        if hops:
            yield env.all_of(hops)
        if not world.learn or global_state is None:
            return None
        kept = [
            k
            for k, (d, res) in enumerate(zip(clients, results, strict=True))
            if res is not None and world.keep_finite([res], [d.name])
        ]
        if not kept:
            return None
        from netfl.learning.params import weighted_average

        analog = [k for k, v in global_state.items() if v.is_floating_point() and k not in raw]
        samples = np.array([float(results[k].num_samples) for k in kept])
        weight = dict(zip(kept, samples / samples.sum(), strict=True))
        total: dict[str, Any] = {}
        for (c, cell, _, ks), plan, rho in zip(slots, plans, sinr, strict=True):
            mine = [j for j, k in enumerate(ks) if k in weight]
            if not mine:
                continue
            deltas = [{n: results[ks[j]].state[n] - global_state[n] for n in analog} for j in mine]
            noise = None
            if self.config.noise:  # (one cell: the round's stream; a network: each cell's)
                key = ("ota_noise", r) if cell is world.radio else ("ota_noise", r, c)
                noise = world.streams.generator(*key)
            share, _ = ota_estimate(
                deltas, np.array([weight[ks[j]] for j in mine]), plan["active"][mine], rho, noise
            )
            for n, v in share.items():
                total[n] = total[n] + v if n in total else v
        new = weighted_average([results[k].state for k in kept], list(samples))  # (buffers)
        for n, v in total.items():
            new[n] = global_state[n] + v
        return new
