"""The run's resource policy at work: its decisions checked, honoured and recorded.

:class:`PolicyControl` is the round context's ``policy``. An algorithm asks it for a
round's :meth:`~PolicyControl.decide` (FedAvg's ``select_clients``), then for each
participant :meth:`~PolicyControl.hold` when its part starts — the radio grants its
uplink the share and power, the compute engine sets its CPU frequency — and
:meth:`~PolicyControl.release` when it ends, arrived or cut. Every decision is checked
(participants among the candidates and once each; shares in (0, 1] adding up to at most
1 in each cell; powers within the power class; frequencies within the DVFS range): a
plugin policy's wrong answer is one line naming it. Each round's candidates, their
allocations and the expected and actual times of the participants are the ``policy``
table (docs/tables.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from netfl.core.usercode import user_code_error
from netfl.policies.resource_policy import Allocation, Decision, ResourcePolicy, RoundWork
from netfl.radio.radio import UplinkGrant

if TYPE_CHECKING:
    import simpy

    from netfl.compute.engine import ComputeEngine
    from netfl.core.nodes import Node
    from netfl.radio.radio import Radio

__all__ = ["PolicyControl", "POLICY_COLUMNS"]

#: the ``policy`` table's columns (docs/tables.md)
POLICY_COLUMNS = [
    "round",
    "device",
    "selected",
    "share",
    "power_w",
    "frequency_hz",
    "expected_time_s",
    "actual_time_s",
    "outcome",
]

_SHARE_TOLERANCE = 1e-9


class PolicyControl:
    """A run's policy, its checks, its grants and its records."""

    def __init__(
        self,
        policy: ResourcePolicy,
        env: simpy.Environment,
        radio: Radio,
        compute: ComputeEngine,
        outage_sinr_db: float | None = None,
    ):
        self.policy = policy
        #: θ [dB]: an update whose upload's mean SINR is below it is lost (None: never)
        self.outage_sinr_db = outage_sinr_db
        self.env = env
        self.radio = radio
        self.compute = compute
        self._decision: dict[int, Decision] = {}
        self._start_s: dict[int, float] = {}
        self._rows: list[dict[str, Any]] = []
        self._open: dict[tuple[int, str], int] = {}  # (round, device) → its row

    @property
    def name(self) -> str:
        return self.policy.name

    # -- a round's decision -----------------------------------------------------------
    def decide(self, r: int, candidates: Sequence[Node], count: int, work: RoundWork) -> list[Node]:
        """Round ``r``'s participants (the policy's decision, checked and recorded)."""
        candidates = list(candidates)
        count = min(count, len(candidates))
        decision = self.policy.decide(r, candidates, count, work)
        self._check(decision, candidates)
        self._decision[r] = decision
        self._start_s[r] = self.env.now
        chosen = {d.name for d in decision.participants}
        for d in candidates:
            a = decision.allocation(d) if d.name in chosen else Allocation()
            if d.name in chosen:
                self._open[(r, d.name)] = len(self._rows)
            self._rows.append(
                {
                    "round": r,
                    "device": d.name,
                    "selected": d.name in chosen,
                    "share": _nan(a.share),
                    "power_w": _nan(a.power_w),
                    "frequency_hz": _nan(a.frequency_hz),
                    "expected_time_s": float(a.expected_time_s),
                    "actual_time_s": math.nan,
                    "outcome": "" if d.name in chosen else "not_selected",
                }
            )
        return list(decision.participants)

    def allocation(self, r: int, device: Node) -> Allocation:
        """What round ``r``'s decision gives ``device`` (nothing: ``Allocation()``)."""
        decision = self._decision.get(r)
        return decision.allocation(device) if decision is not None else Allocation()

    def _check(self, decision: Decision, candidates: list[Node]) -> None:
        def wrong(message: str) -> Exception:
            return user_code_error(
                type(self.policy), f"resource policy {self.policy.name!r}: {message}"
            )

        if not isinstance(decision, Decision):
            raise wrong(f"decide() returned {type(decision).__name__}, not a Decision")
        names = [d.name for d in decision.participants]
        allowed = {d.name for d in candidates}
        if len(set(names)) != len(names):
            raise wrong("a participant is chosen twice")
        if not set(names) <= allowed:
            raise wrong(f"{sorted(set(names) - allowed)[0]} is not a candidate of the round")
        if not set(decision.allocations) <= set(names):
            raise wrong("an allocation is given to a device that does not take part")
        shares: dict[int, float] = {}
        for d in decision.participants:
            a = decision.allocation(d)
            try:
                self._validate(d, a)
            except ValueError as err:
                raise wrong(str(err)) from None
            if a.share is not None:
                pool = self.radio.uplink_pool(d)
                shares[pool] = shares.get(pool, 0.0) + a.share
        over = [p for p, s in shares.items() if s > 1.0 + _SHARE_TOLERANCE]
        if over:
            raise wrong(f"the uplink shares add up to {shares[over[0]]:.6g} > 1 in one cell")

    def _validate(self, device: Node, a: Allocation) -> None:
        if a.share is not None or a.power_w is not None:
            self.radio.check_grant(device, UplinkGrant(a.share, a.power_w))
        if a.frequency_hz is not None:
            self.compute.check_frequency(device, a.frequency_hz)

    # -- a participant's part ---------------------------------------------------------
    def hold(
        self,
        device: Node,
        share: float | None,
        power_w: float | None,
        frequency_hz: float | None,
    ) -> None:
        """``device``'s part starts: its uplink grant and CPU frequency in force."""
        self.radio.grant(device, UplinkGrant(share, power_w))
        if device.compute.dvfs:
            self.compute.set_frequency(device, frequency_hz)

    def release(self, r: int, device: Node, outcome: str) -> bool:
        """``device``'s part of round ``r`` ended now (``outcome``: ``"arrived"`` or the
        cut's reason): its grant withdrawn, its frequency back to the maximum, its time
        recorded. Returns whether an arrived update is decoded: False — outcome
        ``"outage"`` — where its upload's SINR averaged over its airtime (the record's
        ``mean_snr_db``) is below :attr:`outage_sinr_db` (Yang et al. 2020: an update
        succeeds if its SINR exceeds θ)."""
        self.radio.grant(device, None)
        if device.compute.dvfs:
            self.compute.set_frequency(device, None)
        decoded = outcome != "arrived" or self.decoded(device)
        if not decoded:
            outcome = "outage"
        row = self._open.pop((r, device.name), None)
        if row is not None:
            self._rows[row]["outcome"] = outcome
            if outcome == "arrived":
                self._rows[row]["actual_time_s"] = self.env.now - self._start_s[r]
        return decoded

    def decoded(self, device: Node) -> bool:
        """Whether ``device``'s last upload passes the success rule (no θ: yes)."""
        if self.outage_sinr_db is None:
            return True
        record = self.radio.last_transfers.get((device.name, "uplink"))
        return record is None or not record.mean_snr_db < self.outage_sinr_db

    def end_round(self, r: int) -> None:
        """Round ``r`` is over: forget its decision."""
        self._decision.pop(r, None)
        self._start_s.pop(r, None)

    # -- records and checkpoints ------------------------------------------------------
    def recorded(self) -> int:
        """How many rows the ``policy`` table has now."""
        return len(self._rows)

    def forget_from(self, n: int) -> None:
        """Drop the rows from the ``n``-th on (a round a stopped run does not keep)."""
        del self._rows[n:]
        self._open = {k: i for k, i in self._open.items() if i < n}

    def close_round(self, r: int, outcomes: dict[str, str]) -> None:
        """Round ``r`` is over: a participant whose part never ran (cut before it began)
        gets its outcome from ``outcomes`` (device name → reason); its decision is
        forgotten."""
        for (rr, name), row in list(self._open.items()):
            if rr == r:
                self._rows[row]["outcome"] = outcomes.get(name, "cut")
                del self._open[(rr, name)]
        self.end_round(r)

    def tables(self) -> dict[str, pd.DataFrame]:
        """``policy``: one row per round and candidate (none: no decision was made)."""
        if not self._rows:
            return {}
        return {"policy": pd.DataFrame(self._rows, columns=POLICY_COLUMNS)}

    def state_dict(self) -> dict[str, Any]:
        return {"policy": self.policy.state_dict(), "rows": [dict(row) for row in self._rows]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.policy.load_state_dict(state["policy"])
        self._rows = [dict(row) for row in state["rows"]]


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)
