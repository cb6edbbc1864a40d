"""Typed per-event records and the recorder that collects them.

A flat dataclass per event (Ciw style), appended during the run and turned
into ``pandas.DataFrame`` tables once at the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TransferRecord", "ComputeRecord", "Recorder", "TableProducer", "collect_tables"]


@dataclass
class TransferRecord:
    """One delivered transfer.

    ``direction`` is ``"uplink"`` (device → BS), ``"downlink"`` (BS → device)
    or ``"d2d"`` (device → device). ``num_models`` counts the model copies the
    payload carries (FedDif's "transmitted models"); 0 for other payloads.
    Energies are the radio energy of the sending and receiving UE [J]: tx/rx
    power × ``airtime_s`` (the time the transfer held resources) plus the
    waiting power × the rest of its duration; 0 for the BS (charged by its
    load-dependent power model). A multicast writes one record per receiver
    with the same ``multicast_group`` (≥ 1; −1 for unicast): its bits went on
    air once. ``rb_subframes`` (RBs held × airtime in 1 ms sub-frames) and ``mean_snr_db``
    (time-average SNR) exist on OFDMA links only (NaN otherwise);
    ``harq_retransmissions`` counts the HARQ retransmissions of the transfer's last
    transport block (the ``lte_bler`` link abstraction; 0 otherwise), whose round
    trips are in its duration. ``outcome`` is ``"delivered"``, or ``"left"`` / ``"late"``
    when its device left mid-transfer or the round's deadline cut it
    (:mod:`netfl.core.activity`): then ``delivered_bits`` (otherwise ``size_bits``) are
    the bits that arrived, the record ends at the cut and its energies are those spent
    until then.
    """

    round: int
    src: str
    dst: str
    kind: str
    direction: str
    size_bits: float
    start_s: float
    end_s: float
    num_models: int
    tx_energy_j: float
    rx_energy_j: float
    airtime_s: float = float("nan")
    multicast_group: int = -1
    rb_subframes: float = float("nan")
    mean_snr_db: float = float("nan")
    harq_retransmissions: int = 0
    delivered_bits: float = float("nan")
    outcome: str = "delivered"

    def __post_init__(self) -> None:
        if self.delivered_bits != self.delivered_bits:  # (NaN: all of them)
            self.delivered_bits = self.size_bits

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def mean_rate_bps(self) -> float:
        return self.delivered_bits / self.duration_s if self.duration_s > 0 else float("inf")


@dataclass
class ComputeRecord:
    """One compute step on a node: ``flops`` at the node's rate, ``energy_j`` at busy power.
    ``outcome`` is ``"done"``, or ``"left"`` / ``"late"`` for a step cut short
    (:mod:`netfl.core.activity`): then ``flops`` are those computed until the cut.

    On a DVFS node (:class:`~netfl.compute.engine.ComputeEngine`) ``frequency_hz`` is
    the CPU frequency f it ran at [Hz] and ``cycles`` the CPU cycles it ran (those
    until the cut, for a step cut short); it took ``cycles / f`` seconds and
    ``energy_j`` is κ·``cycles``·f² (Tran et al., INFOCOM 2019, eqs. (5)-(6), with
    Yang et al., TWC 2021's κ). Both are NaN for a FLOP/s step."""

    round: int
    node: str
    kind: str
    flops: float
    start_s: float
    end_s: float
    energy_j: float
    outcome: str = "done"
    frequency_hz: float = float("nan")
    cycles: float = float("nan")

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


def _frame(records: list, cls: type) -> pd.DataFrame:
    import pandas as pd

    columns = [f.name for f in fields(cls)]
    df = pd.DataFrame([vars(r) for r in records], columns=columns)
    df["duration_s"] = df["end_s"] - df["start_s"]
    if "delivered_bits" in df:
        df["mean_rate_bps"] = df["delivered_bits"] / df["duration_s"]
    return df


class Recorder:
    """Collects records; the runner sets :attr:`round` before each round."""

    def __init__(self) -> None:
        self.round = 0
        self.transfers: list[TransferRecord] = []
        self.computes: list[ComputeRecord] = []

    def transfers_frame(self) -> pd.DataFrame:
        return _frame(self.transfers, TransferRecord)

    def computes_frame(self) -> pd.DataFrame:
        return _frame(self.computes, ComputeRecord)


@runtime_checkable
class TableProducer(Protocol):
    """Anything that adds tables to a run directory beside ``rounds``, ``transfers``,
    ``computes`` and ``devices``: the radio, the world (coverage), the moving devices
    (trajectories) and the algorithm. ``tables()`` gives them by name (each written
    as ``NAME.parquet``; ``docs/tables.md`` lists every table and column)."""

    def tables(self) -> dict[str, pd.DataFrame]: ...


def collect_tables(producers: Iterable[TableProducer]) -> dict[str, pd.DataFrame]:
    """Every producer's tables, in order; a name given twice is a programming error."""
    out: dict[str, pd.DataFrame] = {}
    for producer in producers:
        for name, frame in producer.tables().items():
            if name in out:
                raise ValueError(f"table {name!r} produced twice ({type(producer).__name__})")
            out[name] = frame
    return out
