"""Sweeps: the sweep file (:mod:`~netfl.sweep.spec`: base scenario, variants, grid, zip,
seeds, expanded into named runs), running them on a local process pool or on Ray
(:mod:`~netfl.sweep.run`, which writes the index ``sweep.csv``) and the sweep report
(:mod:`~netfl.sweep.report`: mean ± std over seeds, figures, ``index.html``).

It may import :mod:`netfl.sim`, :mod:`netfl.output` and :mod:`netfl.scenario`. The
names below are re-exported lazily: validating a sweep file imports no torch.
"""

from typing import TYPE_CHECKING

from netfl._lazy import lazy_exports

_EXPORTS = {
    "SweepSpec": "netfl.sweep.spec",
    "SweepRun": "netfl.sweep.spec",
    "is_sweep_file": "netfl.sweep.spec",
    "load_sweep": "netfl.sweep.spec",
    "expand": "netfl.sweep.spec",
    "run_sweep": "netfl.sweep.run",
    "summarize_rounds": "netfl.sweep.run",
    "sweep_report": "netfl.sweep.report",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from netfl.sweep.report import sweep_report
    from netfl.sweep.run import run_sweep, summarize_rounds
    from netfl.sweep.spec import SweepRun, SweepSpec, expand, is_sweep_file, load_sweep

__all__ = list(_EXPORTS)
