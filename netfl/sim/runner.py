"""Drive an algorithm's rounds on the SimPy clock; stop rules; round table.

Rounds run until ``training.rounds``, until the global model reaches
``training.target_accuracy`` (checked on evaluation rounds), or until the
simulated clock passes ``training.time_budget_s`` (checked at the end of each
round: the round in progress always completes).
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from netfl.algorithms import Algorithm, RoundSummary, get_algorithm
from netfl.core.gc_policy import fewer_collections
from netfl.core.invariants import check_records, check_round
from netfl.core.records import collect_tables
from netfl.core.threads import wait_policy
from netfl.core.usercode import attributed
from netfl.errors import UserCodeError, UserError, WorkerLost
from netfl.loading.plugins import origin
from netfl.loading.scenarios import algorithm_config
from netfl.scenario.schema import Scenario
from netfl.sim.accounting import (
    MeterSnapshot,
    devices_frame,
    refine_windows,
    round_row,
    snapshot,
)
from netfl.sim.checkpoint import (
    checkpoint_path,
    encode_checkpoint,
    load_checkpoint,
    save_checkpoint,
    scenario_fingerprint,
)
from netfl.sim.critical_path import CriticalPaths, critical_path, straggler_columns
from netfl.sim.result import RunResult
from netfl.sim.world import World

__all__ = ["run"]

log = logging.getLogger(__name__)


def run(
    scenario: Scenario,
    source: str = "scenario",
    on_round: Callable[[dict[str, Any]], None] | None = None,
    run_dir: str | Path | None = None,
    resume: bool = False,
    partial_on_interrupt: bool = False,
    partial_on_failure: bool | None = None,
) -> RunResult:
    """Build the world, run the algorithm's rounds, and return the tables.

    ``on_round`` is called with each finished row (the CLI's progress bar).
    ``run_dir``: where checkpoints go (every ``outputs.checkpoint_every`` rounds);
    ``resume``: continue from its last checkpoint (:mod:`netfl.sim.checkpoint`).
    ``partial_on_interrupt``: on Ctrl-C/SIGTERM return the finished rounds with
    ``stop_reason`` ``"interrupted"`` (the CLI writes them marked incomplete)
    instead of raising ``KeyboardInterrupt``; likewise ``"worker_lost"`` (and
    ``info["error"]``) when a parallel executor's worker dies
    (:class:`~netfl.errors.WorkerLost`), and ``"failed"`` when a researcher's own code
    fails (:class:`~netfl.errors.UserCodeError`: a plugin's algorithm, model or data
    set, a Flower app): then, where a plugin is in play, ``RunResult.resume_state``
    holds the checkpoint of the last finished round, which the CLI writes so that
    ``netfl run --resume`` continues once the code is fixed. Without
    ``partial_on_interrupt``, or before any round finished, these are raised.
    ``partial_on_failure`` (default: as ``partial_on_interrupt``) governs user code's
    failure alone (a sweep's worker keeps a failed run's rounds, not an interrupted's).
    """
    wall0 = time.perf_counter()
    with fewer_collections():
        with attributed("building the run (model, data set, partition)"):
            world = World(scenario, source=source)
        name = scenario.algorithm.name
        algorithm: Algorithm | None = None
        try:
            with attributed(f"algorithm {name!r} construction"):
                algorithm = get_algorithm(name)(world, algorithm_config(scenario))
            partial = (
                partial_on_interrupt,
                partial_on_interrupt if partial_on_failure is None else partial_on_failure,
            )
            return _run_world(world, algorithm, wall0, on_round, run_dir, resume, partial)
        finally:
            if algorithm is not None:
                algorithm.close()  # (a Flower ServerApp's thread)
            world.close()  # a parallel executor's workers stop here, whatever happened


def simulate_round(world: World, algorithm: Algorithm, r: int) -> RoundSummary:
    """Round ``r`` on the clock (the body a run and a resume's replay share): the
    world's start of round, the algorithm's round process, the radio settled. A failure
    that passed through user code is a :class:`~netfl.errors.UserCodeError`, and so is a
    ``round`` that is no generator or returns no :class:`RoundSummary`."""
    world.recorder.round = r
    world.round_faults = []
    world.begin_round(r)
    what = f"algorithm {algorithm.name!r} round {r}"
    with attributed(what):
        steps = algorithm.round(r)
        if not (inspect.isgenerator(steps) or hasattr(steps, "throw")):  # (as SimPy asks)
            raise _misbehaved(
                algorithm,
                f"round {r}: round() returned {_shown(steps)}, not a "
                "generator (a round yields its steps: transfers, computations)",
            )
        proc = world.env.process(steps)
        world.env.run(until=proc)
        world.radio.settle()
    if not isinstance(proc.value, RoundSummary):
        raise _misbehaved(
            algorithm, f"round {r}: round() returned {_shown(proc.value)}, not a RoundSummary"
        )
    return proc.value


def _evaluated(algorithm: Algorithm, r: int) -> tuple[float, float]:
    """``algorithm.evaluate()``, which must give ``(accuracy, loss)`` numbers."""
    got = algorithm.evaluate()
    try:
        acc, loss = (float(v) for v in got)
    except (TypeError, ValueError):
        raise _misbehaved(
            algorithm, f"after round {r}: evaluate() returned {_shown(got)}, not (accuracy, loss)"
        ) from None
    return acc, loss


def _state_of(algorithm: Algorithm, r: int) -> dict[str, Any]:
    """``algorithm.state_dict()``, which must be a dict (what a checkpoint holds)."""
    state = algorithm.state_dict()
    if not isinstance(state, dict):
        raise _misbehaved(
            algorithm, f"after round {r}: state_dict() returned {_shown(state)}, not a dict"
        )
    return state


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"a {type(value).__name__}"


def _misbehaved(algorithm: Algorithm, message: str) -> Exception:
    """An algorithm that broke the protocol: a plugin's fault (:class:`UserCodeError`
    naming it), else a bug of netfl's."""
    where = origin(algorithm.name)
    if where == "built-in":
        return AssertionError(f"algorithm {algorithm.name!r}: {message}")
    return UserCodeError(f"{where}: algorithm {algorithm.name!r}: {message}")


def _run_world(
    world: World,
    algorithm: Algorithm,
    wall0: float,
    on_round: Callable[[dict[str, Any]], None] | None,
    run_dir: str | Path | None,
    resume: bool,
    partial: tuple[bool, bool],
) -> RunResult:
    scenario = world.scenario
    setup_wall_s = time.perf_counter() - wall0
    tr = scenario.training
    env, rec = world.env, world.recorder
    nodes = {n.name: n for n in [*world.infrastructure, *world.all_devices]}
    rows: list[dict[str, Any]] = []
    stop_reason = "rounds"
    start = 0
    if resume and run_dir is None:
        raise ValueError("resume needs the run directory")
    fingerprint = scenario_fingerprint(scenario)
    if resume and checkpoint_path(run_dir).is_file():  # (none yet: start from round 0)
        start, rows = _resume(world, algorithm, nodes, run_dir, fingerprint)
    every = scenario.outputs.checkpoint_every
    n_tr, n_co = len(rec.transfers), len(rec.computes)
    n_po = world.policy.recorded()
    # the meters and the clock at the end of the last finished round (an interrupt keeps
    # the devices' energy and idle time up to there)
    kept = (snapshot(nodes), env.now)
    error, trace = None, ""
    # where user code runs, the state after the last finished round is kept in memory (a
    # failure writes it as the checkpoint --resume continues from); a checkpoint every
    # round holds it on disk already
    keep_state = run_dir is not None and every != 1 and _runs_user_code(world.scenario)
    resume_state: bytes | None = None
    name = algorithm.name
    try:
        for r in range(start, tr.rounds):
            t0 = env.now
            n_tr, n_co = len(rec.transfers), len(rec.computes)
            before = kept[0]
            summary = simulate_round(world, algorithm, r)
            with attributed(f"algorithm {name!r} evaluation after round {r}"):
                row, over_budget = _round_row(
                    world, algorithm, r, t0, n_tr, n_co, nodes, before, summary
                )
            rows.append(row)
            n_tr, n_co = len(rec.transfers), len(rec.computes)  # (an interrupt keeps them)
            n_po = world.policy.recorded()
            kept = (snapshot(nodes), env.now)
            checkpoint_now = (
                every and run_dir is not None and (r + 1) % every == 0 and r + 1 < tr.rounds
            )
            keep_now = keep_state and r + 1 < tr.rounds  # (after the last: nothing to resume)
            if checkpoint_now or keep_now:
                with attributed(f"algorithm {name!r} state_dict after round {r}"):
                    state = {
                        "next_round": r + 1,
                        "rows": list(rows),
                        "algorithm": _state_of(algorithm, r),
                        "policy": world.policy.state_dict(),
                        "scenario_sha256": fingerprint,
                    }
                if checkpoint_now:
                    save_checkpoint(run_dir, state)
                if keep_now:
                    try:
                        resume_state = encode_checkpoint(state)
                    except Exception as err:  # noqa: BLE001 - a state torch cannot save
                        log.warning("no resume state kept (%s: %s)", type(err).__name__, err)
                        keep_state, resume_state = False, None
            if on_round is not None:
                on_round(row)
            if tr.target_accuracy is not None and row["accuracy"] >= tr.target_accuracy:
                stop_reason = "target_accuracy"
                break
            if over_budget:
                stop_reason = "time_budget"
                break
            if algorithm.finished:
                stop_reason = "algorithm_finished"
                break
    except (KeyboardInterrupt, WorkerLost, UserCodeError, UserError) as err:
        if not partial[isinstance(err, UserCodeError)] or not rows:
            raise
        del rec.transfers[n_tr:], rec.computes[n_co:]  # the round in progress is dropped
        world.policy.forget_from(n_po)
        stop_reason = (
            "interrupted"  # (Ctrl-C, or SIGTERM: a KeyboardInterrupt subclass)
            if isinstance(err, KeyboardInterrupt)
            else "worker_lost"
            if isinstance(err, WorkerLost)
            else "failed"
            if isinstance(err, UserCodeError)
            else "error"  # (a UserError mid-run: the input cannot go on, e.g. no device
        )  # returns within the horizon, a link that can never deliver)
        error = None if isinstance(err, KeyboardInterrupt) else str(err)
        trace = getattr(err, "trace", "")
    else:
        kept = (snapshot(nodes), env.now)  # (the run's end: everything charged)
        resume_state = None
    result = _result(world, algorithm, rows, stop_reason, wall0, setup_wall_s, error, trace, kept)
    result.resume_state = resume_state if stop_reason == "failed" else None
    return result


def _runs_user_code(scenario: Scenario) -> bool:
    """Whether the run calls a researcher's own code that a resume can reload: a
    plugin, or an algorithm from an entry point (a Flower app cannot be resumed)."""
    return bool(scenario.plugins) or origin(scenario.algorithm.name) != "built-in"


def _resume(
    world: World, algorithm: Algorithm, nodes: dict, run_dir: str | Path, fingerprint: str
) -> tuple[int, list[dict[str, Any]]]:
    """The first round to run and the rows before it, from ``run_dir``'s checkpoint: the
    rounds before it replayed on the clock, the algorithm's state loaded."""
    ck = load_checkpoint(run_dir, fingerprint)
    start, rows = int(ck["next_round"]), list(ck["rows"])
    rounds = world.scenario.training.rounds
    if not 0 < start <= rounds or len(rows) != start:
        raise UserError(
            f"--resume: the checkpoint in {run_dir} is at round {start} with "
            f"{len(rows)} rows, for a run of {rounds} rounds: damaged"
        )
    _replay(world, algorithm, nodes, start)
    with attributed(f"algorithm {algorithm.name!r} load_state_dict (resume)"):
        algorithm.load_state_dict(ck["algorithm"])
    if "policy" in ck:  # (a checkpoint written before resource policies: random's)
        world.policy.load_state_dict(ck["policy"])
    log.info("resumed %s at round %d", run_dir, start)
    return start, rows


def _round_row(
    world: World,
    algorithm: Algorithm,
    r: int,
    t0: float,
    n_tr: int,
    n_co: int,
    nodes: dict,
    before: dict,
    summary: RoundSummary,
) -> tuple[dict[str, Any], bool]:
    """Round ``r``'s row of the rounds table (from ``t0``; its records from index
    ``n_tr``/``n_co`` on; the meters ``before`` it), evaluated where the schedule says,
    its invariants checked; and whether the run's time budget is spent."""
    tr, env, rec = world.scenario.training, world.env, world.recorder
    transfers, computes = rec.transfers[n_tr:], rec.computes[n_co:]
    device_names = {n.name for n in world.all_devices}
    after = snapshot(nodes)
    row = round_row(r, t0, env.now, transfers, computes, nodes, before, after, summary)
    path = critical_path(r, t0, transfers, computes, device_names, world.radio.server_aliases())
    row.update(straggler_columns(path, device_names))
    row["nonfinite_updates"] = len(world.round_faults)
    row["starved_devices"] = len(world.all_devices) - len(world.devices)
    over_budget = tr.time_budget_s is not None and env.now >= tr.time_budget_s
    last = r == tr.rounds - 1 or over_budget or algorithm.finished
    acc = loss = float("nan")
    on_clock = tr.eval_every_s is not None and (
        int(env.now // tr.eval_every_s) > int(t0 // tr.eval_every_s)
    )  # (the round crossed a multiple of eval_every_s)
    if world.learn and ((r + 1) % tr.eval_every == 0 or last or on_clock):
        acc, loss = _evaluated(algorithm, r)
        row.update(algorithm.evaluation_columns())
    row["accuracy"], row["loss"] = acc, loss
    check_records(transfers, computes, env.now)
    check_round(r, t0, env.now, before, snapshot(nodes), acc)
    return row, over_budget


def _result(
    world: World,
    algorithm: Algorithm,
    rows: list[dict[str, Any]],
    stop_reason: str,
    wall0: float,
    setup_wall_s: float,
    error: str | None,
    trace: str,
    kept: tuple[MeterSnapshot, float],
) -> RunResult:
    """The run's :class:`RunResult`: its rounds, records, tables and run information;
    ``devices.csv`` from the meters and clock ``kept`` at the last finished round."""
    scenario, rec = world.scenario, world.recorder
    device_names = {n.name for n in world.all_devices}
    nodes = {n.name: n for n in [*world.infrastructure, *world.all_devices]}
    refine_windows(rows, rec.transfers, rec.computes, nodes)  # (steps across rows)
    world.mobility.settle(kept[1])  # (moving devices where they are at the run's end)
    rounds = pd.DataFrame(rows)
    for column in ("nonfinite_updates", "starved_devices"):
        if column in rounds:
            rounds[column] = rounds[column].astype(int)
    first = ["round", "sim_time_s", "accuracy", "loss"]
    rounds = rounds[first + [c for c in rounds.columns if c not in first]]
    return RunResult(
        scenario=scenario,
        rounds=rounds,
        transfers=rec.transfers_frame(),
        computes=rec.computes_frame(),
        devices=devices_frame(world, *kept),
        stop_reason=stop_reason,
        wall_time_s=time.perf_counter() - wall0,
        tables=collect_tables(
            (
                world.radio,
                world.coverage,
                world.mobility,
                world.policy,
                algorithm,
                CriticalPaths(rec, device_names, world.radio.server_aliases()),
            )
        ),
        info={
            "setup_wall_s": setup_wall_s,
            # torch's intra-op threads change the order of float sums, hence learning curves
            "torch_num_threads": world.job_threads,
            "torch_num_threads_source": world.job_threads_source,
            **wait_policy(),
            "executor": scenario.learning.executor,
            "executor_workers": getattr(world.executor, "workers", 1),
            "model_params": world.model.num_params,
            "model_size_bits": world.model.size_bits,
            "train_flops_per_sample": world.model.flops.train_per_sample,
            "inference_flops_per_sample": world.model.flops.inference_per_sample,
            "num_train_samples": len(world.dataset.train_y_np),
            "num_test_samples": len(world.dataset.test_y_np),
            **algorithm.info(),
            **({"error": error} if error else {}),
            **({"error_trace": trace} if error and trace else {}),
        },
    )


def _replay(world: World, algorithm: Algorithm, nodes: dict, rounds: int) -> None:
    """Re-simulate rounds ``0 … rounds-1`` without torch work: the clock, radio, CUE
    sessions, meters and records come out as they were (they never depend on learned
    values); the algorithm's learned state is loaded afterwards."""
    learn, world.learn = world.learn, False
    try:
        for r in range(rounds):
            simulate_round(world, algorithm, r)
    finally:
        world.learn = learn
