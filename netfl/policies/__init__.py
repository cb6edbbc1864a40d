"""Resource policies: each round's participants and what each is given.

:mod:`netfl.policies.states` (what can be known of each device now),
:mod:`netfl.policies.resource_policy` (the policy protocol and its registry),
:mod:`netfl.policies.control` (a run's policy checked, honoured and recorded), and one
module per built-in policy: ``random`` (:mod:`~netfl.policies.random_selection`),
``round_robin`` (:mod:`~netfl.policies.round_robin_turns`), ``proportional_fair``
(:mod:`~netfl.policies.proportional_fair_selection`), ``best_channel``, ``fedcs``,
``min_energy``. docs/policies.md is the guide.
"""

from netfl.policies import (  # noqa: F401
    best_channel,
    fedcs,
    min_energy,
    proportional_fair_selection,
    random_selection,
    round_robin_turns,
)
from netfl.policies.resource_policy import (
    POLICIES,
    Allocation,
    Decision,
    PolicyConfig,
    ResourcePolicy,
    RoundWork,
    register_policy,
)
from netfl.policies.states import DeviceStates, MeasuredTransfer

__all__ = [
    "POLICIES",
    "Allocation",
    "Decision",
    "DeviceStates",
    "MeasuredTransfer",
    "PolicyConfig",
    "ResourcePolicy",
    "RoundWork",
    "register_policy",
]
