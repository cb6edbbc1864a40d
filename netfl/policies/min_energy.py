"""``min_energy``: the uplink shares, transmit powers and CPU frequencies that spend the
least device energy in a round that must end by its deadline.

Z. Yang, M. Chen, W. Saad, C. S. Hong, M. Shikh-Bahaei, "Energy Efficient Federated
Learning over Wireless Communication Networks", IEEE TWC 2021 (§II: computation time
c_k·D_k/f_k and energy κ·c_k·D_k·f_k², FDMA upload time s/r_k with r_k = b_k·log2(1 +
g_k·p_k/(N0·b_k)) and energy p_k·s/r_k; §III–IV: minimise the devices' total energy
subject to the completion time, Σ_k b_k ≤ B, 0 ≤ p_k ≤ p_max, 0 ≤ f_k ≤ f_max), with
N. H. Tran et al., INFOCOM 2019 (eqs. (5)–(6)) for the same computation model.

Per round, for the participants (``count`` of the candidates, drawn as ``random`` draws
them), with T the deadline less the download's expected time and ``overhead_s``:

1. For a participant k and a share b, its least energy E_k(b) = min over p of
   κ·c_k·f(p)² + P_el(p)·s_k/r_k(b, p), where f(p) = c_k / (T − s_k/r_k(b, p)) is the
   lowest frequency that still meets T (Yang et al.'s observation that the time
   constraint is tight at the optimum; clipped to f_min, infeasible above f_max),
   r_k(b, p) netfl's expected rate (:meth:`netfl.policies.states.DeviceStates.expected_rate_bps`:
   the cell's own efficiency and fading, not only Shannon's formula) and P_el(p) the
   modem's electrical power at transmit power p (the compute profile's ``tx_power_w +
   tx_power_per_w · p``, what netfl charges). The scalar p-step is a grid then a
   bounded Brent refinement (``scipy.optimize.minimize_scalar``).
2. The shares solve min Σ_k E_k(b_k) s.t. Σ_k b_k ≤ 1 through its Lagrangian: each b_k
   minimises E_k(b) + λ·b over a grid of shares, and the multiplier λ ≥ 0 is found by
   bisection so that the shares fill the uplink (Yang et al. solve their bandwidth step
   by bisection on its multiplier likewise). Where every E_k is convex in b this meets
   the KKT conditions (up to the grid); otherwise it is the Lagrangian heuristic — a
   test holds it within 1 % of a brute-force grid on two devices.

Participants are left out, the one needing the largest share first, until the least
shares that meet T (at full power and frequency) add up to at most 1 (with
``equal_shares``: until each needs at most 1/K) — they would be late. Without DVFS a device's computation is fixed (its FLOP/s
profile) and only its share and power are chosen; on fixed-rate links (no transmit
power) only shares and frequencies. ``equal_shares`` keeps b_k = 1/K and optimises
powers and frequencies alone: the equal-bandwidth baseline.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import Field
from scipy.optimize import minimize_scalar

from netfl.core.nodes import Node
from netfl.policies.random_selection import sample_candidates
from netfl.policies.resource_policy import (
    Allocation,
    Decision,
    PolicyConfig,
    ResourcePolicy,
    RoundWork,
    download_time_s,
    register_policy,
)

__all__ = ["MinEnergy", "MinEnergyConfig"]

_SHARE_GRID = 96
_POWER_GRID = 24
_BISECTIONS = 60


class MinEnergyConfig(PolicyConfig):
    overhead_s: float = Field(
        0.0, ge=0.0, le=1e6, description="the round's time outside download, update and upload [s]"
    )
    equal_shares: bool = Field(
        False, description="every participant 1/K of the uplink; powers and frequencies optimised"
    )
    slack: float = Field(
        0.0,
        ge=0.0,
        lt=1.0,
        description="share of the deadline held back: plan to (1 - slack) of it (the "
        "expected rates are means over the fading; a plan that fills the deadline exactly "
        "is late about as often as a transfer is slower than its mean)",
    )
    min_power_fraction: float = Field(
        1e-3, gt=0.0, le=1.0, description="the lowest transmit power tried, as a share of the class"
    )


@dataclass
class _Plan:
    """A participant's best (energy, power, frequency, time) at one share."""

    energy_j: float
    power_w: float | None
    frequency_hz: float | None
    time_s: float


class _Device:
    """One participant's energy as a function of its share (step 1)."""

    def __init__(self, policy: MinEnergy, device: Node, work: RoundWork, budget_s: float):
        self.states, self.device, self.budget_s = policy.states, device, budget_s
        c = device.compute
        flops, samples = work.train_flops(device), work.train_samples(device)
        self.bits = work.upload_bits(device)
        self.dvfs = c.dvfs
        if self.dvfs:
            self.cycles = policy.states.compute.cycles(device, flops, samples)
            self.f_min = max(c.min_frequency_hz, 1e-9 * c.max_frequency_hz)
            self.f_max = c.max_frequency_hz
            self.kappa = c.capacitance
        else:
            self.compute_s = policy.states.compute_time_s(device, flops, samples)
            self.compute_j = policy.states.compute_energy_j(device, flops, samples)
        p_class = policy.states.power_class_w(device)
        self.p_class = None if math.isnan(p_class) else p_class
        self.p_low = (
            None if self.p_class is None else self.p_class * policy.config.min_power_fraction
        )
        self.tx_w, self.tx_per_w = c.tx_power_w, c.tx_power_per_w

    def plan(self, share: float, power_w: float | None) -> _Plan:
        """Energy, frequency and time at ``share`` and ``power_w`` (inf: misses T)."""
        rate = self.states.expected_rate_bps(self.device, "uplink", share, power_w)
        up_s = self.bits / rate if rate > 0 else math.inf
        radiated = power_w if power_w is not None else (self.p_class or 0.0)
        p_el = self.tx_w + self.tx_per_w * radiated  # (fixed-rate links radiate nothing)
        if self.dvfs:
            left = self.budget_s - up_s
            if not left > 0:
                return _Plan(math.inf, power_w, None, math.inf)
            f = max(self.cycles / left, self.f_min)
            if f > self.f_max * (1 + 1e-12):
                return _Plan(math.inf, power_w, None, math.inf)
            f = min(f, self.f_max)
            energy = self.kappa * self.cycles * f * f + p_el * up_s
            return _Plan(energy, power_w, f, self.cycles / f + up_s)
        total = self.compute_s + up_s
        if total > self.budget_s * (1 + 1e-12):
            return _Plan(math.inf, power_w, None, math.inf)
        return _Plan(self.compute_j + p_el * up_s, power_w, None, total)

    def best(self, share: float) -> _Plan:
        """E_k(share): the power (and so frequency) of least energy."""
        if self.p_class is None:
            return self.plan(share, None)
        grid = np.geomspace(self.p_low, self.p_class, _POWER_GRID)
        plans = [self.plan(share, float(p)) for p in grid]
        i = int(np.argmin([pl.energy_j for pl in plans]))
        if not math.isfinite(plans[i].energy_j):
            return plans[i]
        lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
        if hi > lo:
            found = minimize_scalar(
                lambda p: min(self.plan(share, float(p)).energy_j, 1e300),
                bounds=(float(lo), float(hi)),
                method="bounded",
                options={"xatol": 1e-6 * float(hi)},
            )
            refined = self.plan(share, float(found.x))
            if refined.energy_j < plans[i].energy_j:
                return refined
        return plans[i]

    def min_share(self) -> float:
        """The least share that meets T at full power and frequency (inf: none does)."""
        fast = self.p_class

        def meets(b: float) -> bool:
            rate = self.states.expected_rate_bps(self.device, "uplink", b, fast)
            up_s = self.bits / rate if rate > 0 else math.inf
            need = self.cycles / self.f_max if self.dvfs else self.compute_s
            return need + up_s <= self.budget_s

        if not meets(1.0):
            return math.inf
        lo, hi = 0.0, 1.0
        for _ in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if meets(mid) else (mid, hi)
        return hi


@register_policy
class MinEnergy(ResourcePolicy):
    """Yang et al. 2021's least-energy shares, powers and frequencies under the deadline."""

    name = "min_energy"
    description = (
        "shares, powers and CPU frequencies of least device energy within algorithm.deadline_s"
    )
    Config = MinEnergyConfig
    config: MinEnergyConfig
    needs_deadline = True

    def decide(self, r: int, candidates: Sequence[Node], count: int, work: RoundWork) -> Decision:
        chosen = sample_candidates(self.streams, r, candidates, count)
        deadline = work.deadline_s if work.deadline_s is not None else math.inf
        while chosen:
            down = download_time_s(self.states, chosen, work)
            # (a millionth below: a plan that ends on the deadline is not cut there)
            budget = deadline * (1.0 - self.config.slack - 1e-6) - down - self.config.overhead_s
            devices = [_Device(self, d, work, budget) for d in chosen]
            need = [d.min_share() for d in devices]
            fits = max(need) <= 1.0 / len(need) if self.config.equal_shares else sum(need) <= 1.0
            if fits:
                break
            # (the one that needs the most bandwidth goes; ties: the later device)
            worst = max(range(len(need)), key=lambda i: (need[i], chosen[i].index))
            chosen = chosen[:worst] + chosen[worst + 1 :]
        if not chosen:
            return Decision([])
        shares = (
            [1.0 / len(devices)] * len(devices)
            if self.config.equal_shares
            else self._shares(devices, need)
        )
        allocations = {}
        for d, b in zip(devices, shares, strict=True):
            plan = d.best(b)
            allocations[d.device.name] = Allocation(
                share=b,
                power_w=plan.power_w,
                frequency_hz=plan.frequency_hz,
                expected_time_s=down + plan.time_s,
            )
        return Decision(sorted(chosen, key=lambda n: n.index), allocations)

    @staticmethod
    def _shares(devices: list[_Device], need: list[float]) -> list[float]:
        """Step 2: b_k = argmin E_k(b) + λ·b on each device's grid of shares, λ by
        bisection until Σ b_k ≤ 1 (KKT of min Σ E_k(b_k) s.t. Σ b_k ≤ 1)."""
        grids = [np.geomspace(max(n, 1e-9), 1.0, _SHARE_GRID) for n in need]
        energy = [
            np.array([d.best(float(b)).energy_j for b in g])
            for d, g in zip(devices, grids, strict=True)
        ]

        def at(lam: float) -> list[float]:
            return [
                float(g[int(np.argmin(e + lam * g))]) for g, e in zip(grids, energy, strict=True)
            ]

        if sum(at(0.0)) <= 1.0:
            return at(0.0)
        lo, hi = 0.0, 1.0
        while sum(at(hi)) > 1.0:
            hi *= 4.0
            if hi > 1e300:
                return [n / sum(need) for n in need]
        for _ in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if sum(at(mid)) > 1.0 else (lo, mid)
        shares = at(hi)
        spare = 1.0 - sum(shares)  # (the grid's rounding: give what is left in proportion)
        return [b + spare * b / sum(shares) for b in shares]
