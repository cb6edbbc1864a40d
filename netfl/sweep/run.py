"""Running sweeps: every run of a sweep file on a local pool or on Ray, and the index.

:func:`run_sweep` runs the runs :func:`~netfl.sweep.spec.expand` made from a sweep
file (:mod:`netfl.sweep.spec`), skips runs whose directory is complete, records a
failing run's error without stopping the others, and writes the index
``sweep.csv`` / ``sweep.parquet``: each run's parameters and summary metrics.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pandas as pd

from netfl.algorithms import ALGORITHMS
from netfl.errors import ScenarioError, UserCodeError, UserError, WorkerLost
from netfl.output.run_directory import RunDirectory, scenario_mismatch
from netfl.scenario.schema import Scenario
from netfl.sim.result import RunResult
from netfl.sweep.spec import SweepRun, SweepSpec, expand, is_sweep_file, load_sweep

__all__ = [
    "SweepSpec",
    "SweepRun",
    "is_sweep_file",
    "load_sweep",
    "expand",
    "run_sweep",
    "summarize_rounds",
]


def summarize_rounds(rounds: pd.DataFrame, target: float | None = None) -> dict[str, Any]:
    """Summary metrics of one run's ``rounds.csv`` (and costs to ``target`` accuracy)."""
    acc = rounds["accuracy"]
    bits = rounds[["uplink_bits", "downlink_bits", "d2d_bits"]].sum(axis=1)
    out: dict[str, Any] = {
        "rounds": len(rounds),
        "final_accuracy": float(acc.dropna().iloc[-1]) if acc.notna().any() else float("nan"),
        "best_accuracy": float(acc.max()),
        "sim_time_s": float(rounds["sim_time_s"].iloc[-1]),
        "round_time_s": float(rounds["round_time_s"].mean()),
        "round_time_max_s": float(rounds["round_time_s"].max()),
        # (the most devices out of coverage at any drop; 0 on fixed-rate links)
        "starved_devices": int(rounds.get("starved_devices", pd.Series([0])).max()),
        "bits": float(bits.sum()),
        "device_energy_j": float(rounds["device_energy_j"].sum()),
        # (compute and modem only; absent from runs written before idle joined the total)
        "device_active_energy_j": float(
            rounds.get("device_active_energy_j", rounds["device_energy_j"]).sum()
        ),
        "subframes": float(rounds["subframes"].sum()),
        "models_sent": float(rounds["models_sent"].sum()),
    }
    if target is not None:
        hit = rounds.index[acc >= target]
        upto = rounds.loc[: hit[0]] if len(hit) else None
        out.update(
            {
                "rounds_to_target": float(hit[0] + 1) if len(hit) else float("nan"),
                "time_to_target_s": float(rounds.loc[hit[0], "sim_time_s"])
                if len(hit)
                else float("nan"),
                "bits_to_target": float(bits.loc[: hit[0]].sum()) if len(hit) else float("nan"),
                "energy_to_target_j": float(upto["device_energy_j"].sum())
                if upto is not None
                else float("nan"),
                "subframes_to_target": float(upto["subframes"].sum())
                if upto is not None
                else float("nan"),
            }
        )
    return out


def _run_one(
    scenario: Scenario, source: str, run_dir: str | None, threads: int | None = None
) -> dict[str, Any] | RunResult:
    """Run one variant (in a worker process, a Ray task, or inline).

    Writes its run directory when ``run_dir`` is given (a local worker) and returns
    a short summary; otherwise returns the :class:`RunResult` for the caller to
    write (a Ray task, whose machine may not share the sweep's file system).
    ``threads``: torch's intra-op threads (the cores divided among the parallel
    runs: oversubscribed OpenMP threads slow every run many-fold). With
    ``outputs.checkpoint_every`` and a ``run_dir`` it checkpoints there and resumes an
    earlier invocation's checkpoint of the same scenario (:func:`_prepare_checkpoint`).
    """
    from netfl.loading.plugins import load_entry_point, load_plugins
    from netfl.sim.runner import run

    # a Ray task's (or a spawned worker's) process imports the plugins again
    load_plugins(scenario.plugins)
    if scenario.algorithm.name not in ALGORITHMS:
        load_entry_point(scenario.algorithm.name)
    if threads is not None and not scenario.learning.num_threads:
        import torch

        torch.set_num_threads(threads)

    if run_dir is None:  # (the driver writes it, a failed run's finished rounds too)
        return run(scenario, source=source, partial_on_failure=True)
    rundir, resume = RunDirectory.in_sweep(run_dir, scenario)
    result = run(
        scenario,
        source=source,
        run_dir=run_dir,
        resume=resume,
        partial_on_failure=True,  # (user code failed: its finished rounds are written)
    )
    rundir.write(result)
    if result.stop_reason == "failed":  # (written, marked failed: the sweep says so)
        raise UserCodeError(result.info.get("error", "the run failed"))
    return {"stop_reason": result.stop_reason, "wall_time_s": result.wall_time_s}


def _error(err: BaseException) -> str:
    cause = getattr(err, "cause", None)  # a Ray task's error wraps the run's own
    err = cause if isinstance(cause, BaseException) else err
    return f"{type(err).__name__}: {err}".splitlines()[0]


def _failed(out: Path, name: str, err: BaseException, done) -> None:
    """Record a failed run: its one-line error in the index, its whole traceback (the
    worker's or the Ray task's own, where it ran elsewhere) in ``NAME.error.txt``."""
    done(name, _error(err))
    (out / f"{name}.error.txt").write_text("".join(traceback.format_exception(err)))


def _run_local(todo: list[SweepRun], out: Path, workers: int, done) -> None:
    """Runs on this machine: inline (one worker) or on a pool of forked processes
    (:func:`~netfl.learning.parallel.mp_context`); a worker keeps the data sets and partitions it built for the runs that follow."""
    if workers <= 1:
        for r in todo:
            try:
                _run_one(r.scenario, r.source, str(out / r.name))
                done(r.name, "")
            except Exception as err:  # noqa: BLE001 - a failing run must not stop the sweep
                _failed(out, r.name, err, done)
        return
    from netfl.learning.parallel import default_threads, mp_context, start_workers

    threads = default_threads(workers)
    queue = list(todo)
    while queue:  # a fresh pool after a worker died (the pool breaks with it)
        with ProcessPoolExecutor(workers, mp_context=mp_context()) as pool:
            start_workers(pool, workers)
            try:
                _drain(pool, queue, workers, threads, out, done)
            except KeyboardInterrupt:  # (Ctrl-C, or SIGTERM sent to this process alone)
                _interrupt_workers(pool)
                raise


def _interrupt_workers(pool: ProcessPoolExecutor, grace_s: float = 30.0) -> None:
    """Stop the pool's workers' runs (a SIGTERM sent to the sweep alone never reaches
    them): SIGTERM to each — a forked worker of ``netfl sweep`` stops its run as the
    sweep does, keeping its checkpoint — the queued runs cancelled, and a worker still
    there after ``grace_s`` killed."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for proc in processes:
        proc.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + grace_s
    for proc in processes:
        proc.join(max(deadline - time.monotonic(), 0.0))
        if proc.is_alive():
            proc.kill()
            proc.join()


def _drain(
    pool: ProcessPoolExecutor,
    queue: list[SweepRun],
    workers: int,
    threads: int,
    out: Path,
    done,
) -> None:
    """Keep ``workers`` runs of ``queue`` going on ``pool`` until it is empty, or until
    the pool broke (a worker died: the runs still queued go to a fresh one)."""
    running: dict[Future, SweepRun] = {}
    broken = False
    while running or (queue and not broken):
        while queue and not broken and len(running) < workers:
            r = queue.pop(0)
            running[pool.submit(_run_one, r.scenario, r.source, str(out / r.name), threads)] = r
        finished, _ = wait(running, return_when=FIRST_COMPLETED)
        for fut in finished:
            r = running.pop(fut)
            err = fut.exception()
            if isinstance(err, BrokenProcessPool) and not RunDirectory(out / r.name).complete:
                broken = True
                err = WorkerLost(
                    "the sweep worker running this run (or one beside it) ended without "
                    "writing it: killed (e.g. by the out-of-memory killer), crashed, or "
                    "ended by user code (os._exit); the sweep went on "
                    "on a fresh pool, and running it again retries this run"
                )
            elif isinstance(err, BrokenProcessPool):  # it had finished and written
                err = None
            if err is None:
                done(r.name, "")
            else:
                _failed(out, r.name, err, done)


def _run_ray_task(
    scenario: Scenario, source: str, run_dir: str, threads: int, driver_node: str
) -> dict[str, Any] | RunResult:
    """A Ray task: on the driver's machine it writes its run directory itself (in
    parallel with the others); elsewhere it returns the result for the driver to write."""
    import ray

    here = ray.get_runtime_context().get_node_id() == driver_node
    return _run_one(scenario, source, run_dir if here else None, threads)


def _run_ray(todo: list[SweepRun], out: Path, workers: int | None, address, done) -> None:
    """Runs as Ray tasks declaring their CPUs. A task on this machine writes its run
    directory; one on another machine returns its result, written here by the driver
    (a cluster's machines need not share this file system). Ray reuses its worker
    processes, so their data caches serve later runs too."""
    from netfl.learning.parallel import start_ray

    ray, own = start_ray(address)
    try:
        # the cluster's CPUs divided among the parallel runs, as the local backend does
        cpus = int(ray.cluster_resources().get("CPU", 1))
        threads = max(1, cpus // (workers or cpus))
        task = ray.remote(num_cpus=threads, max_retries=0)(_run_ray_task)
        node = ray.get_runtime_context().get_node_id()
        pending = {
            task.remote(r.scenario, r.source, str((out / r.name).resolve()), threads, node): r
            for r in todo
        }
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            r = pending.pop(ready[0])
            try:
                result = ray.get(ready[0])
                if isinstance(result, RunResult):  # run on another machine
                    RunDirectory(out / r.name).write(result)
                    if result.stop_reason == "failed":
                        raise UserCodeError(result.info.get("error", "the run failed"))
                done(r.name, "")
            except Exception as err:  # noqa: BLE001 - a failing run must not stop the sweep
                _failed(out, r.name, err, done)
    finally:
        if own:
            ray.shutdown()


def run_sweep(
    runs: list[SweepRun],
    out_dir: str | Path,
    workers: int = 1,
    target_accuracy: float | None = None,
    on_done: Callable[[str, str], None] | None = None,
    backend: str = "local",
    address: str | None = None,
) -> pd.DataFrame:
    """Run every run not yet complete under ``out_dir``; write and return the index.

    ``backend="local"``: ``workers`` > 1 runs them in a process pool (forked
    workers), each run with the cores / ``workers`` torch threads. ``backend="ray"``:
    Ray tasks on this machine (``ray.init()``) or on the cluster at ``address``, as many
    at once as ``workers`` (0: one per CPU), each declaring the CPUs / ``workers``
    threads it uses; on 2 CPUs with 2 workers both backends give the same runs. A run whose
    directory holds a ``manifest.json`` of the same resolved scenario is complete and
    skipped (of another scenario: recorded as failed, "stale", never overwritten); a failing run
    is recorded with status ``failed`` and its error, and the others go on.
    ``on_done(name, status)`` is called as each run finishes.
    """
    if backend == "ray":
        nested = next((r for r in runs if r.scenario.learning.executor == "ray"), None)
        if nested is not None:  # its actors would wait for CPUs the sweep's tasks hold
            raise ScenarioError(
                nested.source or nested.name,
                [
                    (
                        "learning.executor",
                        f"'ray' in run {nested.name!r}: a Ray sweep runs each variant as a "
                        "Ray task holding its CPUs, so the run's Ray actors could never start; "
                        "use executor serial or process, or sweep with --backend local",
                    )
                ],
            )
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:  # (a path writable in name only: /proc, a full disk)
        raise UserError(
            f"cannot create the sweep directory {out} ({err.strerror or err})"
        ) from None
    status: dict[str, tuple[str, str]] = {}
    todo = []
    for r in runs:
        # an interrupted run (marked incomplete) runs again, from its checkpoint if any; its
        # finished rounds stay until the new run has written its own
        found = RunDirectory(out / r.name)
        if found.written and not found.interrupted:
            stale = scenario_mismatch(out / r.name, r.scenario)
            status[r.name] = ("failed", stale) if stale else ("skipped", "")
            if on_done:
                on_done(r.name, status[r.name][0])
        else:
            (out / f"{r.name}.error.txt").unlink(missing_ok=True)  # an earlier failure's
            todo.append(r)

    def done(name: str, error: str) -> None:
        status[name] = ("failed", error) if error else ("complete", "")
        if on_done:
            on_done(name, status[name][0])

    try:
        if backend == "ray":
            _run_ray(todo, out, workers if workers > 0 else None, address, done)
        elif backend == "local":
            _run_local(todo, out, workers, done)
        else:
            raise ValueError(f"unknown backend {backend!r} (local, ray)")
    except KeyboardInterrupt:  # the index of what finished, for a report of the sweep so far
        why = "the sweep was interrupted before this run finished; the same command runs it"
        for r in runs:
            status.setdefault(r.name, ("interrupted", why))
        _write_index(runs, status, out, target_accuracy)
        raise
    return _write_index(runs, status, out, target_accuracy)


def _write_index(
    runs: list[SweepRun],
    status: dict[str, tuple[str, str]],
    out: Path,
    target_accuracy: float | None,
) -> pd.DataFrame:
    """``sweep.csv`` and ``sweep.parquet``: each run's parameters, status, error and
    summary metrics (:func:`summarize_rounds`)."""
    rows = []
    for r in runs:
        st, error = status[r.name]
        row: dict[str, Any] = {"run": r.name, **r.params, "status": st, "error": error}
        rounds_csv = out / r.name / "rounds.csv"
        found = RunDirectory(out / r.name)
        man = found.manifest()
        # a failed run's finished rounds are summarised too (not a stale directory's)
        failed_here = st == "failed" and man.get("status") == "failed"
        if (st != "failed" or failed_here) and rounds_csv.is_file():
            if failed_here:
                row["error"] = row["error"] or man.get("error", "")
            elif found.complete:
                row["status"], row["error"] = "complete", ""
            else:  # (its finished rounds, summarised; the same command runs it again)
                row["status"] = "interrupted"
                row["error"] = (
                    row["error"]
                    or man.get("error")
                    or f"the run stopped before its end ({man.get('stop_reason', '?')})"
                )
            row.update(summarize_rounds(pd.read_csv(rounds_csv), target_accuracy))
            row["stop_reason"] = man.get("stop_reason", "")
            row["wall_time_s"] = man.get("wall_time_s", float("nan"))
        rows.append(row)
    index = pd.DataFrame(rows)
    index.to_csv(out / "sweep.csv", index=False)
    index.astype({c: str for c in index.columns if index[c].dtype == object}).to_parquet(
        out / "sweep.parquet", index=False
    )
    return index
