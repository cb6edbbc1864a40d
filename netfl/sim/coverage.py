"""Which devices a cell (or a network) can serve at each drop: the ``coverage`` table
and the devices in coverage that algorithms use (:class:`~netfl.sim.world.World`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from netfl.core.nodes import Node
from netfl.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CoverageLog"]

log = logging.getLogger(__name__)


class CoverageLog:
    """Every drop's per-device coverage rows, and the devices in coverage now."""

    def __init__(
        self,
        source: str,
        directions: frozenset[str] = frozenset({"uplink", "downlink"}),
        ofdma: bool = True,
    ):
        self.source = source
        #: the directions the run's traffic needs (``downlink`` alone: a download test)
        self.directions = directions
        #: whether the run's table has it (OFDMA links; a fixed-rate link serves every device)
        self.ofdma = ofdma
        self.frames: list[pd.DataFrame] = []
        #: the devices whose downlink is served at the last drop (downlink-only traffic
        #: reaches them, whatever their uplink)
        self.downlink_served: list[Node] = []

    def update(self, radio: Any, bs: Node, devices: list[Node], round_: int) -> list[Node]:
        """The devices ``radio`` can serve at their positions: a device whose uplink or
        downlink to the BS has no rate even at a fading peak (e.g. below the lowest CQI
        of an LTE profile) is *starved* — a scheduler never serves it, so it takes no
        part in the rounds. Appends one row per device to the table (mean SNRs, starved
        or not); a starved device is logged; no device served in the directions the run
        needs is a :class:`~netfl.errors.UserError`."""
        frame = radio.coverage(bs, devices)
        frame.insert(0, "round", round_)
        self.frames.append(frame)
        starved = set(frame.loc[frame["starved"], "device"])
        covered = [d for d in devices if d.name not in starved]
        no_down = set(frame.loc[frame["downlink_starved"], "device"])
        self.downlink_served = [d for d in devices if d.name not in no_down]
        which = {
            row.device: "both"
            if row.uplink_starved and row.downlink_starved
            else "uplink"
            if row.uplink_starved
            else "downlink"
            for row in frame[frame["starved"]].itertuples()
        }
        if not (covered if "uplink" in self.directions else self.downlink_served):
            raise UserError(
                f"{self.source}: no device is in coverage of the BS (all {len(starved)} "
                "starved: no rate even at the lowest CQI/MCS); shrink cell.radius_m, move "
                "the devices closer (devices.layout) or raise the transmit power"
            )
        if starved:
            log.warning(
                "round %d: %d device(s) out of coverage (no rate at the lowest CQI/MCS), "
                "left out (the starved direction): %s",
                round_,
                len(starved),
                ", ".join(f"{n} ({which[n]})" for n in sorted(starved, key=lambda n: (len(n), n))),
            )
        return covered

    def tables(self) -> dict[str, pd.DataFrame]:
        """``coverage`` on OFDMA links (which devices the cell can serve, at each drop)."""
        return {"coverage": self.table()} if self.ofdma else {}

    def table(self) -> pd.DataFrame:
        """Every drop's rows."""
        import pandas as pd

        return pd.concat(self.frames, ignore_index=True)
