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
thread *count* (``learning.num_threads``, else :func:`auto_threads`) changes the order
of float sums and so the learning curves, and a run's floats must not depend on what
else the machine is doing; the wait policy changes no float. ``benchmarks/threads.py`` measures the pair.

How *many* threads a training job gets, when ``learning.num_threads`` is unset, is
chosen from the scenario alone (:func:`auto_threads`), never from the load — the same
scenario gets the same count, and so the same floats, on the same machine: one thread
where a training step is too small for a second to pay — every parallel region of a
step wakes the sleeping threads and waits for them, which costs more than it saves on
the small dense layers of most FL models (the 2NN at batch 16: 1.36 ms a step on one
thread, 1.72 ms on two) — and the threads this process has otherwise (McMahan's CNN at
batch 10: 21.5 ms on one, 13.9 ms on two). The line is the step's training FLOPs
(``torch.utils.flop_counter``'s count of forward and backward × the batch; for the
``batched`` executor × the clients it may stack): :data:`ONE_THREAD_BELOW_FLOPS`.
"""

from __future__ import annotations

import os
import sys

__all__ = ["ONE_THREAD_BELOW_FLOPS", "auto_threads", "wait_policy", "use_passive_wait"]

#: training FLOPs per SGD step below which a job runs on one thread. Measured on a
#: 2-core Xeon (ms per step, one thread / two; flop_counter's MFLOP per step): the 2NN
#: at batch 16, 64, 128 (14, 56, 112 MFLOP): 1.36/1.72, 1.85/2.10, 2.48/2.66 — one
#: wins; 784-200-200 at 256 (225): 4.1/3.4, 784-1024-1024 at 16 (131): 4.9/4.6 — two
#: win; LeNet-5 at batch 10, 16 (39, 63): 4.2/4.0, 5.4/4.6 — two win by 7-15 %, the
#: price of one line for every architecture; McMahan's CNN at 10 (724): 21.5/13.9.
ONE_THREAD_BELOW_FLOPS = 100e6

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


def auto_threads(flops_per_step: float, available: int) -> tuple[int, str]:
    """A training job's torch threads when ``learning.num_threads`` is unset, and why:
    one below :data:`ONE_THREAD_BELOW_FLOPS` training FLOPs per step, else the
    ``available`` threads (this process's: the cores, or a sweep's share of them)."""
    size = f"{flops_per_step / 1e6:.4g} MFLOP per training step"
    if available <= 1:
        return 1, f"auto: {size}; this process has one thread"
    if flops_per_step < ONE_THREAD_BELOW_FLOPS:
        return 1, (
            f"auto: {size} < {ONE_THREAD_BELOW_FLOPS / 1e6:.0f}: one thread (a second "
            "costs more than it gives on steps this small; learning.num_threads overrides)"
        )
    return available, (
        f"auto: {size} >= {ONE_THREAD_BELOW_FLOPS / 1e6:.0f}: the {available} threads "
        "this process has (the cores, or a sweep's share of them)"
    )


def wait_policy() -> dict[str, str]:
    """``{"omp_wait_policy": …, "omp_wait_policy_source": …}`` (for the manifest)."""
    use_passive_wait()
    return dict(_CHOICE)
