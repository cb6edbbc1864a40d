"""The verbs that simulate and write: ``netfl run``, ``netfl sweep``, ``netfl report``.

Each takes the parsed arguments and returns the exit code; user errors are raised as
:class:`~netfl.errors.UserError` for :func:`netfl.cli.app.main` to print. Ctrl-C and
SIGTERM (:class:`Terminated`) end a run or a sweep with what finished written.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from netfl.errors import SignalInterrupt, UserError


class Terminated(SignalInterrupt):
    """SIGTERM, handled like Ctrl-C (nothing half-written is left as complete)."""


#: the last Ctrl-C/SIGTERM seen (the runner turns it into a partial result)
_last_interrupt: list[KeyboardInterrupt] = []


def on_sigterm(signum, frame) -> None:
    _last_interrupt[:] = [Terminated()]
    raise _last_interrupt[0]


def on_sigint(signum, frame) -> None:
    """Ctrl-C as a :class:`~netfl.errors.SignalInterrupt`: told apart from a
    ``KeyboardInterrupt`` that user code raises (a failure, not an interrupt)."""
    _last_interrupt[:] = [SignalInterrupt()]
    raise _last_interrupt[0]


def _output_dir(path: Path, key: str, create: bool = False) -> Path:
    """``path`` if it is, or can be created as, a writable directory (created when
    ``create``), else a one-line ``UserError`` naming ``key`` (the option, or what it
    is for)."""
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            pass  # a file in the way: said below
        except OSError as err:
            raise UserError(f"{key}: cannot create {path} ({err.strerror or err})") from None
    if path.exists() and not path.is_dir():
        raise UserError(f"{key}: {path} exists and is not a directory")
    base = path
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise UserError(f"{key}: cannot create {path} ({base} is not a directory)")
    if not os.access(base, os.W_OK | os.X_OK):
        raise UserError(f"{key}: {base} is not writable")
    return path


def cmd_run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from netfl.loading.scenarios import load_scenario
    from netfl.output.run_directory import RunDirectory
    from netfl.output.rundir import INCOMPLETE
    from netfl.sim.checkpoint import signals_deferred
    from netfl.sim.runner import run

    _last_interrupt.clear()
    resume = False
    if args.resume:
        if args.scenario or args.set or args.out:
            raise UserError("--resume RUN_DIR takes no scenario, --set or --out")
        rundir, scenario, resume = RunDirectory.to_resume(args.resume)
        source = str(rundir.checkpoint_dir / "scenario.yaml")
    else:
        if not args.scenario:
            raise UserError("run: give a scenario file, or --resume RUN_DIR")
        source = args.scenario
        scenario = load_scenario(args.scenario, args.set)
        rundir = RunDirectory.reserve(scenario, args.out)
    out = rundir.path
    show = scenario.outputs.progress and not args.no_progress
    bar = tqdm(
        total=scenario.training.rounds,
        desc=scenario.name,
        unit="round",
        disable=not show,
        file=sys.stderr,
    )

    def on_round(row: dict) -> None:
        acc = row["accuracy"]
        bar.set_postfix_str(
            f"acc={acc:.3f} t_sim={row['sim_time_s']:.1f}s"
            if acc == acc
            else f"t_sim={row['sim_time_s']:.1f}s"
        )
        bar.update(1)

    signal_seen: list[KeyboardInterrupt] = []
    try:
        try:
            result = run(
                scenario,
                source=source,
                on_round=on_round,
                run_dir=out,
                resume=resume,
                partial_on_interrupt=True,
            )
        except KeyboardInterrupt as err:  # before a round finished: nothing to write
            if rundir.has_checkpoint:
                err.args = (f"resume with: netfl run --resume {out}",)
            raise
        if result.stop_reason == "interrupted":
            signal_seen.append(_last_interrupt[0] if _last_interrupt else KeyboardInterrupt())
        late: KeyboardInterrupt | None = None
        try:
            with signals_deferred():  # (a signal now would lose every finished round)
                run_dir = rundir.write(result)
        except KeyboardInterrupt as err:  # (held until the run directory was written)
            late = err
    finally:
        bar.close()
        rundir.release()  # only if still empty: the run failed or was interrupted
    if result.stop_reason in INCOMPLETE:
        if late is not None and not signal_seen:
            signal_seen.append(late)
        hint = f"; resume with: netfl run --resume {run_dir}" if rundir.has_checkpoint else ""
        written = (
            f"{len(result.rounds)} finished rounds written to {run_dir}, marked "
            f"incomplete in manifest.json{hint}"
        )
        if not signal_seen:  # a parallel executor's worker died, or user code failed
            if getattr(args, "debug", False) and result.info.get("error_trace"):
                print(result.info["error_trace"], file=sys.stderr)
            if result.stop_reason in ("failed", "error"):
                written = written.replace("marked incomplete", "marked failed")
                if rundir.has_checkpoint and result.stop_reason == "failed":
                    written = written.replace("; resume with:", "; once it is fixed, resume with:")
                elif result.stop_reason == "error":  # (the same input stops the same way)
                    written = written.split("; resume with:")[0]
            print(f"error: {result.info['error']}; {written}", file=sys.stderr)
            return 2 if result.stop_reason == "error" else 1  # (bad input / code failed)
        what = "terminated" if isinstance(signal_seen[0], Terminated) else "interrupted"
        print(f"{what}: {written}", file=sys.stderr)
        return 143 if isinstance(signal_seen[0], Terminated) else 130
    last = result.rounds.iloc[-1]
    accuracy = (
        f"{last['accuracy']:.4f}"
        if last["accuracy"] == last["accuracy"]  # (NaN: no evaluation in the last round)
        else "n/a (timing mode)"
        if scenario.learning.mode == "timing"
        else "n/a (not evaluated in the last round)"
    )
    print(
        f"{scenario.name}: {len(result.rounds)} round{'' if len(result.rounds) == 1 else 's'} "
        f"({result.stop_reason}), "
        f"accuracy {accuracy}, simulated {last['sim_time_s']:.2f} s, "
        f"device energy {result.rounds['device_energy_j'].sum():.1f} J, "
        f"wall {result.wall_time_s:.1f} s"
    )
    print(f"results: {run_dir}")
    if late is not None:  # (the run had finished: its directory is whole)
        what = "terminated" if isinstance(late, Terminated) else "interrupted"
        print(f"{what} while writing; the run had finished: {run_dir} is complete", file=sys.stderr)
        return 143 if isinstance(late, Terminated) else 130
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from netfl.scenario.files import parse_overrides
    from netfl.sweep.run import expand, load_sweep, run_sweep

    if args.out is not None and not args.out.strip():
        raise UserError("--out: empty path; name a sweep directory")
    if args.workers is not None and args.workers < (1 if args.backend == "local" else 0):
        raise UserError(f"--workers: {args.workers} is not a number of parallel runs")
    if args.address and args.backend != "ray":
        raise UserError("--address: only with --backend ray")
    workers = args.workers if args.workers is not None else (1 if args.backend == "local" else 0)
    spec, path = load_sweep(args.sweep)
    runs = expand(spec, path, parse_overrides(args.set or []))
    out = _output_dir(Path(args.out) if args.out else Path("runs") / "sweeps" / spec.name, "--out")
    bar = tqdm(
        total=len(runs), desc=spec.name, unit="run", disable=args.no_progress, file=sys.stderr
    )

    def on_done(name: str, status: str) -> None:
        bar.set_postfix_str(f"{name}: {status}")
        bar.update(1)

    try:
        index = run_sweep(
            runs, out, workers, spec.target_accuracy, on_done, args.backend, args.address
        )
    except ImportError as err:
        raise UserError(f"--backend {args.backend}: {err}") from None
    except ConnectionError as err:  # Ray could not start, or --address is unreachable
        raise UserError(f"{'--address' if args.address else '--backend ray'}: {err}") from None
    except KeyboardInterrupt as err:
        what = "terminated" if isinstance(err, Terminated) else "interrupted"
        print(
            f"{what}: the runs that finished are kept under {out} (index so far: "
            f"{out / 'sweep.csv'}; `netfl report {out}` shows them); the same command "
            "skips them and runs the rest",
            file=sys.stderr,
        )
        return 143 if isinstance(err, Terminated) else 130
    finally:
        bar.close()
    counts = index["status"].value_counts().to_dict()
    for _, row in index[index["status"] == "failed"].iterrows():  # (the reason, not only
        print(f"error: run {row['run']} failed: {row['error']}", file=sys.stderr)  # the csv)
    print(f"{spec.name}: {len(index)} runs ({', '.join(f'{v} {k}' for k, v in counts.items())})")
    print(f"index: {out / 'sweep.csv'}")
    print(f"report (mean ± std over seeds, index.html): netfl report {out}")
    return 0 if counts.get("failed", 0) == 0 else 1


def cmd_report(args: argparse.Namespace) -> int:
    from netfl.output.figures import (
        compare_figures,
        cost_to_target,
        has_accuracy,
        result_figures,
    )
    from netfl.output.rundir import read_run
    from netfl.output.timing_report import timing_summary
    from netfl.sweep.report import is_sweep_dir, sweep_report

    if args.out:
        _output_dir(Path(args.out), "--out", create=True)
    if len(args.run_dirs) == 1 and is_sweep_dir(args.run_dirs[0]):
        try:
            paths = sweep_report(args.run_dirs[0], args.out)
        except (OSError, KeyError, ValueError) as err:
            raise UserError(f"{args.run_dirs[0]}: not a readable sweep directory ({err})") from None
        for p in paths:
            print(p)
        return 0
    runs = {}
    for d in args.run_dirs:
        try:
            runs[d] = read_run(d)
        except FileNotFoundError as err:
            raise UserError(str(err)) from None
    if len(runs) == 1:
        d, r = next(iter(runs.items()))
        figures = Path(args.out) if args.out else _output_dir(Path(d) / "figures", d, True)
        paths = result_figures(r, figures)
    else:
        if not args.out:
            raise UserError("--out: required when comparing several runs")
        labels, names = {}, {}
        for d, r in runs.items():
            label = f"{r.scenario.name} ({r.scenario.algorithm.name})"
            label = label if label not in labels else Path(d).name
            if r.manifest.get("complete") is False:  # (stopped before its end)
                label += f" [incomplete: {r.manifest.get('stop_reason', '')}]"
            labels[label], names[d] = r.rounds, label
        baseline = names.get(args.baseline) if args.baseline else None
        if args.baseline and baseline is None:
            raise UserError(f"--baseline: {args.baseline} is not one of the run directories")
        if has_accuracy(labels):
            costs = cost_to_target(labels, baseline=baseline)
            print(
                f"cost to reach {costs['target_accuracy'].iloc[0]:.4f} accuracy "
                f"(peak of {baseline or next(iter(labels))}):"
            )
            show = [
                "run",
                "round",
                "sim_time_s",
                "subframes",
                "models_sent",
                "models_d2d",
                "device_energy_j",
            ]
            print(costs[[c for c in show if c in costs]].to_string(index=False))
        timing = timing_summary(labels)
        print("round latency, device energy and bits (each run's rounds):")
        show = [
            "run",
            "rounds",
            "round_time_mean_s",
            "round_time_std_s",
            "sim_time_s",
            "device_energy_j",
            "uplink_bits",
            "downlink_bits",
        ]
        print(timing[show].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        paths = compare_figures(labels, Path(args.out), baseline=baseline)
    for p in paths:
        print(p)
    return 0
