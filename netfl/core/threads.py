"""How netfl's torch threads share the machine with other work.

torch's CPU kernels run on an OpenMP pool (GNU libgomp in the pip wheels) whose idle
threads *spin* for a while at every barrier by default. On a machine where another
process also wants the cores — a second ``netfl run`` from another terminal, a sweep,
any torch work — the spinning threads of each process take the cores the other's
working threads need, and both slow down many-fold (two 2-thread runs of the
quickstart CNN at once on 2 cores: 56 s against 29 s at one thread each).

netfl therefore asks OpenMP to *sleep* while idle (``OMP_WAIT_POLICY=PASSIVE``),
set before torch is first imported, unless the user set ``OMP_WAIT_POLICY`` or
``GOMP_SPINCOUNT`` (``GOMP_SPINCOUNT=300000``, libgomp's default, gives a run alone on
a dedicated machine its spinning back: the same CNN alone, 2 threads, 18 s against
23 s; ``OMP_WAIT_POLICY=ACTIVE`` spins without end, 23x slower in a pair). The
thread *count* is left as chosen (``learning.num_threads``, else torch's default: the
cores): it changes the order of float sums and so the learning curves, and a run's
floats must not depend on what else the machine is doing. The wait policy changes no
float. ``benchmarks/threads.py`` measures the pair.
"""

from __future__ import annotations

import os
import sys

__all__ = ["wait_policy", "use_passive_wait"]

#: the wait policy in effect for this process and where it came from (manifest)
_CHOICE: dict[str, str] = {}


def use_passive_wait() -> None:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` for this process (and its children) if torch is
    not loaded yet and the user chose no OpenMP wait policy; called on ``import netfl``."""
    if _CHOICE:
        return
    user = next((k for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT") if k in os.environ), None)
    if user is not None:
        _CHOICE.update(
            omp_wait_policy=f"{user}={os.environ[user]}", omp_wait_policy_source="environment"
        )
    elif "torch" in sys.modules:  # its OpenMP runtime read the environment already
        _CHOICE.update(
            omp_wait_policy="default (spinning)",
            omp_wait_policy_source="torch imported before netfl",
        )
    else:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
        _CHOICE.update(omp_wait_policy="PASSIVE", omp_wait_policy_source="netfl default")


def wait_policy() -> dict[str, str]:
    """``{"omp_wait_policy": …, "omp_wait_policy_source": …}`` (for the manifest)."""
    use_passive_wait()
    return dict(_CHOICE)
