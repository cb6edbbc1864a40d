"""The ``policy`` section: the resource policy that decides each round
(:mod:`netfl.policies`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from netfl.policies import POLICIES
from netfl.scenario.strict import _check_name, _Strict, check_registered_options

__all__ = ["PolicySection"]


class PolicySection(_Strict):
    """Which devices take part each round and with what uplink share, transmit power and
    CPU frequency (docs/policies.md)."""

    name: str = Field(
        "random",
        description="a resource policy of the registry (`netfl list policies`; a plugin's: "
        "netfl.register_policy); random: FedAvg's sampling, as without this section",
        json_schema_extra=lambda schema: schema.update(enum=list(POLICIES)),
    )
    options: dict[str, Any] | None = Field(
        None, description="the policy's options (its Config: `netfl list policies`)"
    )
    outage_sinr_db: float | None = Field(
        None,
        ge=-30.0,
        le=60.0,
        description="θ of Yang et al. 2020's success rule [dB]: an update whose upload's "
        "SINR, averaged over its airtime, is below θ is not decoded — lost, its time and "
        "energy spent (rounds.csv clients_outage; OFDMA cells and networks); null: every "
        "delivered update is decoded",
    )

    _n = field_validator("name")(lambda v: _check_name("resource policy", v, POLICIES))

    @model_validator(mode="after")
    def _options(self) -> PolicySection:
        check_registered_options(POLICIES[self.name], self.options, f"policy {self.name!r}")
        return self
