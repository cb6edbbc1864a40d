"""The tables of one run (:class:`RunResult`), in memory or read back from disk."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from netfl.scenario.schema import Scenario

__all__ = ["RunResult"]


@dataclass
class RunResult:
    """The tables of one run, before or after they are written to disk.

    ``rounds`` has one row per round, ``devices`` one per node, ``transfers`` and
    ``computes`` one per event; ``tables`` holds further tables by name, from every
    :class:`~netfl.core.records.TableProducer` of the run: the radio's (OFDMA:
    ``occupancy``, ``cues``; a network's ``cells`` and ``handovers``), the coverage log's
    ``coverage`` (OFDMA), the moving devices' ``trajectories`` and the algorithm's
    (FedDif: ``diffusion``). ``docs/tables.md`` lists every table and column with
    its unit. ``manifest`` is filled when read from a run directory (provenance:
    versions, host, git commit).
    """

    scenario: Scenario
    rounds: pd.DataFrame
    transfers: pd.DataFrame
    computes: pd.DataFrame
    devices: pd.DataFrame
    stop_reason: str
    wall_time_s: float
    info: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    #: a run that failed in user code (``stop_reason`` ``"failed"``): the checkpoint of
    #: its last finished round (:func:`netfl.sim.checkpoint.encode_checkpoint`), which
    #: writing the run directory stores for ``netfl run --resume``; else None
    resume_state: bytes | None = field(default=None, repr=False)
