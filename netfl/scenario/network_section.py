"""The ``network`` section of scenario files: several cells instead of one (issue 23).

Without it a scenario is one BS at the origin serving the disc of ``cell.radius_m``
(the default, unchanged). With it:

- **sites** — a hexagonal grid of ``sites`` (1, 7 or 19) ``isd_m`` apart, with
  ``wrap_around`` (TR 36.814 A.2.1.1; default on for 7 and 19 sites), or explicit
  ``site_positions_m`` (no wrap-around; each site serves the disc of ``cell.radius_m``
  around it). Each site has ``sectors`` cells (1 omni or 3 at 30°/150°/270°), the
  TR 38.901 sector antenna (Table 7.3-1 element, ``antenna_rows`` × 1 array phased to
  ``tilt_zenith_deg``) or ``antenna: omni``; BS height and power are the channel
  profile's (``cell.link``).
- **devices** — ``devices.layout: uniform_disc`` (the default) drops them uniformly
  over the whole deployment (the union of the site hexagons, or of the site discs),
  or with ``drop: per_cell`` cell by cell in turn, each uniform over its cell's area;
  explicit layouts give absolute positions, each inside some cell. Every device, and
  every CUE, attaches to the cell with the highest RSRP (lowest coupling loss:
  path loss + shadowing − antenna gain). With ``indoor_fraction`` a randomly dropped
  device is indoors with that probability, at every drop: TR 38.901's floors and
  heights, and its O2I penetration loss (Table 7.4.3-2, low/high-loss walls by
  ``high_loss_fraction``) on its links to the BSs (not on D2D links; its LOS
  probability uses the whole 2-D distance, not the outdoor part).
- **carriers** — every cell has its own uplink and downlink carriers and scheduler
  (``cell.link``); CUEs (``cell.cues``, a PPP over the deployment) load the cell they
  attach to.
- **interference** — every other cell's transmitters are on air on a share η of the
  RBs (downlink: every other BS at its power; uplink: at each cell's BS, one UE of
  every other cell — the mean over its attached UEs and CUEs of their per-RB power,
  open-loop power control or the full-carrier spread, times the coupling gain to this
  BS). ``activity`` (the default): η is the cell's carrier occupancy now (CUE
  sessions and FL transfers), so a flow is re-rated whenever another cell's
  occupancy changes; ``load_factor``: η = ``load`` for every cell; ``none``: noise
  only. SINR replaces SNR on every link: a D2D pair, sent on its sender's cell's
  uplink, hears the other cells' uplink UEs and CUEs at their load (FedDif and FedSwap
  plan their pairs with it, one (16f) bandwidth pool per cell); a multicast keeps the
  SINRs of its start.
- **mobility** — ``devices.mobility`` (or a group's): static, constant velocity,
  random waypoint or Gauss–Markov (``channel_models.mobility``). A device's position
  is a function of time, brought up to date when it transfers or a round starts (no
  event of its own); its large-scale loss to every BS starts from the spatially
  consistent fields where it is dropped (shadowing and LOS state, TR 38.901 §7.6.3) and
  follows them along its path as ns-3 does (``mobility.shadowing: along_path``, an
  AR(1) update per measurement; ``spatially_consistent``: the fields everywhere), and
  the A3 rule (``handover``:
  hysteresis, time-to-trigger, measured every ``sample_ms``) hands it over along its
  path — the ``handovers`` table records each, and no transfer of the device starts
  within ``interruption_ms`` after one. A transfer in flight follows it: re-rated at
  every measurement, handed over with its undelivered bits.
- **server** — the FL server sits at site ``server_site`` (its co-located cells reach
  it directly) or, with ``server_site: cloud``, behind every site's backhaul; a cell
  → server hop is a timed ``backhaul`` transfer over a link of
  ``backhaul.capacity_mbps`` (processor-shared per site and direction) plus
  ``backhaul.latency_ms``.

A one-cell network (one site at the origin, ``sectors: 1``, ``antenna: omni``, the
server at site 0) is today's single cell, event for event (tested).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    Field,
    NonNegativeFloat,
    PositiveFloat,
    field_validator,
    model_validator,
)

from netfl.radio.mobility_models import MOBILITY_MODELS
from netfl.scenario.layout import Coordinate
from netfl.scenario.strict import _check_name, _Strict, check_options, refuse

__all__ = [
    "NetworkSection",
    "InterferenceSection",
    "BackhaulSection",
    "HandoverSection",
    "MobilitySection",
    "MIN_SITE_DISTANCE_M",
]

#: two explicit sites closer than this overlap (one site, entered twice)
MIN_SITE_DISTANCE_M = 10.0
#: the most explicit sites of a network (TR 38.901's largest layout has 19; each site
#: costs its cells' carriers and every link's gains to it)
MAX_SITES = 200


class InterferenceSection(_Strict):
    """Inter-cell interference on cellular links."""

    model: Literal["none", "load_factor", "activity"] = Field(
        "activity",
        description="none: SNR; load_factor: SINR with other cells at `load`; activity: "
        "SINR with other cells at their carriers' occupancy now",
    )
    load: float = Field(1.0, ge=0.0, le=1.0, description="share of RBs other cells use")

    @model_validator(mode="after")
    def _load_of_model(self) -> InterferenceSection:
        refuse(
            self.given({"load"}) if self.model != "load_factor" else [], f"to model {self.model!r}"
        )
        return self


class BackhaulSection(_Strict):
    """Each site's link to the FL server (a timed transfer: capacity and latency)."""

    capacity_mbps: PositiveFloat = Field(
        1000.0, le=1e7, description="per site and direction [Mbit/s]"
    )
    latency_ms: NonNegativeFloat = Field(5.0, le=1e4, description="one-way latency [ms]")


class NetworkMobilitySection(_Strict):
    """How moving devices' links change along their paths (docs/networks.md)."""

    shadowing: Literal["along_path", "spatially_consistent"] = Field(
        "along_path",
        description="along_path: each link's shadowing (and LOS-state normal) updated at "
        "every measurement as ns-3's ThreeGppPropagationLossModel does, s' = R·s + "
        "sqrt(1-R²)·N(0,1) with R = exp(-Δd/d_corr), from the fields' value where the path "
        "starts (fast); spatially_consistent: the sites' fields along the whole path (two "
        "devices close together, or one back where it was, see the same values)",
    )


class HandoverSection(_Strict):
    """The A3 event (TS 38.331 §5.5.4.4) for moving devices."""

    hysteresis_db: float = Field(3.0, ge=0.0, le=30.0, description="A3 offset + hysteresis [dB]")
    ttt_s: float = Field(0.16, ge=0.0, le=5.12, description="time-to-trigger [s]")
    interruption_ms: float = Field(
        30.0, ge=0.0, le=1000.0, description="no transfer starts for this long after a handover"
    )
    sample_ms: float = Field(
        40.0, ge=1.0, le=1000.0, description="RSRP measurement period along a trajectory [ms]"
    )
    filter_k: int = Field(
        4,
        ge=0,
        le=19,
        description="layer-3 RSRP filter coefficient k (TS 38.331; 0: none), a = 1/2^(k/4) "
        "per 200 ms L1 period, adapted to sample_ms",
    )


#: speeds are checked against channel_models.mobility.MAX_SPEED_KMH by the validator
_SPEED = {"minimum": 0.0, "maximum": 500.0}


class MobilitySection(_Strict):
    """How a device moves (``channel_models.mobility``); speeds in km/h, at most 500."""

    model: str = Field(
        "static",
        description="a mobility model of the registry (`netfl list mobility-models`; a "
        "plugin's: netfl.register_mobility)",
        json_schema_extra=lambda schema: schema.update(enum=list(MOBILITY_MODELS)),
    )
    options: dict[str, Any] | None = Field(
        None, description="a plugin's model: its options (the model's Config)"
    )
    speed_kmh: float = Field(
        3.0, json_schema_extra=_SPEED, description="constant_velocity speed; gauss_markov mean"
    )
    heading_deg: float | None = Field(
        None,
        ge=-360.0,
        le=360.0,
        description="constant_velocity / gauss_markov heading (none: uniform per device)",
    )
    v_min_kmh: float = Field(
        1.0,
        json_schema_extra=_SPEED,
        description="random_waypoint: lowest leg speed (above 0, at most v_max_kmh)",
    )
    v_max_kmh: float = Field(
        5.0, json_schema_extra=_SPEED, description="random_waypoint: highest leg speed"
    )
    pause_s: float = Field(
        0.0, ge=0.0, le=1e6, description="random_waypoint: pause at a waypoint [s]"
    )
    alpha: float = Field(0.75, ge=0.0, le=1.0, description="gauss_markov memory")
    step_s: float = Field(
        1.0,
        ge=0.01,
        le=3600.0,
        description="gauss_markov update period [s] (at least 10 ms: a path point each step)",
    )
    speed_std_kmh: float = Field(
        1.0, json_schema_extra=_SPEED, description="gauss_markov speed spread"
    )
    heading_std_deg: float = Field(
        20.0, ge=0.0, le=360.0, description="gauss_markov heading spread"
    )
    record_every_s: float = Field(
        1.0,
        ge=0.01,
        le=1e6,
        description="period of the trajectories table's position samples [s] (the table holds "
        "at most 20 million rows)",
    )

    @model_validator(mode="after")
    def _speeds(self) -> MobilitySection:
        from channel_models.mobility import MAX_SPEED_KMH

        for key in ("speed_kmh", "v_min_kmh", "v_max_kmh", "speed_std_kmh"):
            v = getattr(self, key)
            if not 0.0 <= v <= MAX_SPEED_KMH:
                raise ValueError(
                    f"{key}: {v:g} km/h is {'negative' if v < 0 else 'absurd'} "
                    f"(valid: 0 to {MAX_SPEED_KMH:g})"
                )
        if self.model == "random_waypoint" and not 0.0 < self.v_min_kmh <= self.v_max_kmh:
            raise ValueError("random_waypoint needs 0 < v_min_kmh ≤ v_max_kmh")
        kind = MOBILITY_MODELS[self.model]
        reads = set(kind.keys) | ({"options", "record_every_s"} if kind.Config else set())
        keys = set(type(self).model_fields) - {"model"} - reads
        refuse(self.given(keys), f"to model {self.model!r}")
        if kind.Config is not None:
            check_options(kind.Config, self.options, "options", f"model {self.model!r}")
        return self

    _m = field_validator("model")(lambda v: _check_name("mobility model", v, MOBILITY_MODELS))

    @property
    def moves(self) -> bool:
        return MOBILITY_MODELS[self.model].moves

    def settings(self) -> Any:
        """What the model reads: this section (a built-in), or its validated options."""
        kind = MOBILITY_MODELS[self.model]
        return kind.Config(**(self.options or {})) if kind.Config is not None else self


class NetworkSection(_Strict):
    sites: Literal[1, 7, 19] | None = Field(
        None,
        description="hexagonal grid of 1, 7 or 19 sites; a network names this or "
        "site_positions_m (a section without either is refused: one network.* key set on a "
        "single cell would otherwise turn it into a 7-site network)",
    )
    site_positions_m: list[tuple[Coordinate, Coordinate]] | None = Field(
        None,
        max_length=MAX_SITES,
        description=f"explicit site positions [[x, y], ...] instead of a grid (at most {MAX_SITES})",
    )
    isd_m: PositiveFloat = Field(
        500.0, ge=MIN_SITE_DISTANCE_M, le=1e5, description="inter-site distance of the grid [m]"
    )
    sectors: Literal[1, 3] = Field(3, description="cells per site: 1 (omni) or 3")
    wrap_around: bool | None = Field(
        None, description="wrap-around (default: on for 7 and 19 grid sites)"
    )
    antenna: Literal["tr38901", "omni"] = Field(
        "tr38901", description="BS antenna: TR 38.901 sector element + vertical array, or omni"
    )
    antenna_rows: int = Field(10, ge=1, le=64, description="vertical array elements")
    tilt_zenith_deg: float = Field(102.0, ge=90.0, le=180.0, description="electrical downtilt")
    drop: Literal["area", "per_cell"] = Field(
        "area",
        description="uniform_disc devices: uniform over the whole deployment, or cell by "
        "cell in turn, each uniform over its cell (site hexagon or disc; a sector's third)",
    )
    indoor_fraction: float = Field(
        0.0, ge=0.0, le=1.0, description="share of randomly dropped devices indoors (TR 38.901)"
    )
    high_loss_fraction: float = Field(
        0.5, ge=0.0, le=1.0, description="share of indoor devices behind high-loss walls"
    )
    interference: InterferenceSection = InterferenceSection()
    server_site: Annotated[int, Field(ge=0, le=MAX_SITES)] | Literal["cloud"] = Field(
        0, description="site hosting the FL server, or cloud (behind every backhaul)"
    )
    backhaul: BackhaulSection = BackhaulSection()
    handover: HandoverSection = HandoverSection()
    mobility: NetworkMobilitySection = NetworkMobilitySection()

    @model_validator(mode="after")
    def _consistent(self) -> NetworkSection:
        if self.antenna == "omni":
            refuse(self.given({"antenna_rows", "tilt_zenith_deg"}), "to antenna: omni")
        if self.site_positions_m is not None:
            refuse(self.given({"isd_m"}), "to site_positions_m (isd_m spaces a grid)")
        if self.indoor_fraction == 0:
            refuse(self.given({"high_loss_fraction"}), "without indoor devices (indoor_fraction)")
        if self.site_positions_m is not None:
            if self.sites is not None and "sites" in self.model_fields_set:
                raise ValueError("give either sites (a grid) or site_positions_m, not both")
            if not self.site_positions_m:
                raise ValueError("site_positions_m: no site")
            if self.wrap_around:
                raise ValueError("wrap_around: explicit site_positions_m have no wrap-around")
            pts = np.asarray(self.site_positions_m, dtype=float)
            d = np.hypot(*(pts[:, None, :] - pts[None, :, :]).transpose(2, 0, 1))
            d[np.triu_indices(len(pts))] = np.inf  # (pairs j < i)
            close = np.argwhere(d < MIN_SITE_DISTANCE_M)
            if len(close):
                i, j = (int(v) for v in close[0])
                raise ValueError(
                    f"site_positions_m: sites {j} and {i} overlap ({d[i, j]:g} m apart, "
                    f"at least {MIN_SITE_DISTANCE_M:g} m)"
                )
        elif self.sites is None:
            raise ValueError(
                "a network needs sites (1, 7 or 19) or site_positions_m; without a network "
                "section the scenario is one cell, and its network.* keys do not apply"
            )
        if self.antenna == "omni" and self.sectors == 3:
            raise ValueError("antenna: omni with sectors: 3 (sectors need the sector antenna)")
        if isinstance(self.server_site, int) and not 0 <= self.server_site < self.num_sites:
            raise ValueError(
                f"server_site: {self.server_site} (valid: 0..{self.num_sites - 1} or cloud)"
            )
        return self

    @property
    def num_sites(self) -> int:
        if self.site_positions_m is not None:
            return len(self.site_positions_m)
        return int(self.sites or 1)

    @property
    def wraps(self) -> bool:
        if self.site_positions_m is not None:
            return False
        return (self.num_sites > 1) if self.wrap_around is None else self.wrap_around

    def deployment(self, cell_radius_m: float, bs_height_m: float):
        """The geometry (:class:`channel_models.site_layouts.HexLayout` or ``SiteList``)."""
        from channel_models.site_layouts import HexLayout, SiteList

        if self.site_positions_m is not None:
            return SiteList(tuple(self.site_positions_m), cell_radius_m, self.sectors, bs_height_m)
        rings = {1: 0, 7: 1, 19: 2}[self.num_sites]
        return HexLayout(self.isd_m, rings, self.sectors, bs_height_m, self.wraps)
