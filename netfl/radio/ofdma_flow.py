"""A transfer on an OFDMA carrier (:class:`OfdmaFlow`): what it carries, its link's
SNR terms, its fading generator, and — once it is delivered or withdrawn — its
accounting (RB·s, airtime, ∫SNR dt). While it is active that state lives in the
carrier's block grid (:mod:`netfl.radio.block_grid`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from netfl.radio.block_grid import LinkPath
from netfl.radio.sharing import Flow

__all__ = ["OfdmaFlow"]


@dataclass(eq=False)
class OfdmaFlow(Flow):
    """A transfer on an OFDMA carrier: its mean SNR, fading generator and accounting.

    While active, its remaining bits, share and accounting live in the
    carrier's grid; they are written back here when it completes.
    """

    mean_snr: float = 1.0
    rng: np.random.Generator | None = None
    k0: int = 0
    rb_seconds: float = 0.0
    snr_seconds: float = 0.0  # ∫ SNR(t) dt from start to delivery, for the mean SNR
    airtime_s: float = 0.0  # time holding RBs (share > 0)
    #: power control: SNR of one RB if the UE put all its power into it (inf: no PC)
    snr_total: float = math.inf
    #: multicast: the mean SNR of every receiver (the flow's SNR is their block-wise min)
    multicast_snrs: np.ndarray | None = None
    #: the link ``(src, dst)`` the flow carries (None: background traffic)
    link: tuple | None = None
    #: SINR / SNR factor in its SNRs now (interference; 1: none)
    snr_scale: float = 1.0
    #: the cap asked for, before the power-limited one (``cap`` is their minimum)
    requested_cap: float = math.inf
    #: a moving UE's link (:class:`LinkPath`): its SNR terms per block along the path;
    #: the row's gains then hold fading × the block's per-RB SNR, its SNR scalar is 1
    path: LinkPath | None = None
    #: a path flow's fading gains from its first block on (the path's SNR multiplies them)
    fading: np.ndarray | None = None
    #: a path flow's share when its blocks ahead were last rated
    path_share: float = -1.0
    #: columns of G blocks: mean gains drawn ahead from ``rng`` (a chunk per draw call)
    drawn: np.ndarray | None = None
    #: ``(k0, n) → gains`` of its link in absolute blocks k0…k0+n−1 (fading drawn per
    #: link, :mod:`netfl.radio.link_fading`; None: from ``rng``, per transfer)
    block_gains: Callable[[int, int], np.ndarray] | None = None
    #: the absolute block of its next keyed draw
    next_block: int = 0
