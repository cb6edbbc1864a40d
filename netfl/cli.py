"""Command line: ``netfl run | sweep | validate | list | report | schema``.

User errors print one line (naming the file and key path) and exit with code
2; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
from pathlib import Path

from netfl.errors import ScenarioError, UserError, WorkerLost

EXIT_USER_ERROR = 2


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


def _cmd_run(args: argparse.Namespace) -> int:
    import yaml
    from tqdm import tqdm

    from netfl.checkpoint import CHECKPOINT_DIR, checkpoint_path
    from netfl.report import write_run
    from netfl.results import INCOMPLETE, is_complete, release_run_dir, reserve_run_dir
    from netfl.runner import run
    from netfl.scenario_io import load_scenario, resolved

    _last_interrupt.clear()
    resume = False
    if args.resume:
        if args.scenario or args.set or args.out:
            raise UserError("--resume RUN_DIR takes no scenario, --set or --out")
        out = Path(args.resume)
        saved = out / CHECKPOINT_DIR / "scenario.yaml"
        if is_complete(out):
            raise UserError(f"--resume: {out} is a complete run; nothing to resume")
        if not saved.is_file():
            raise UserError(f"--resume: {out} holds no checkpoint (outputs.checkpoint_every)")
        for item in out.iterdir():  # the interrupted run's partial tables go; the checkpoint stays
            if item.name != CHECKPOINT_DIR:
                shutil.rmtree(item) if item.is_dir() else item.unlink()
        source = str(saved)
        scenario = load_scenario(saved)
        resume = checkpoint_path(out).is_file()  # else killed before the first checkpoint
    else:
        if not args.scenario:
            raise UserError("run: give a scenario file, or --resume RUN_DIR")
        source = args.scenario
        scenario = load_scenario(args.scenario, args.set)
        out = reserve_run_dir(scenario, args.out)
        if scenario.outputs.checkpoint_every:
            (out / CHECKPOINT_DIR).mkdir()
            (out / CHECKPOINT_DIR / "scenario.yaml").write_text(
                yaml.safe_dump(resolved(scenario), sort_keys=False)
            )
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
            if checkpoint_path(out).is_file():
                err.args = (f"resume with: netfl run --resume {out}",)
            raise
        if result.stop_reason == "interrupted":
            signal_seen.append(_last_interrupt[0] if _last_interrupt else KeyboardInterrupt())
        run_dir = write_run(result, out)
    finally:
        bar.close()
        if not (out / CHECKPOINT_DIR).is_dir():
            release_run_dir(out)  # only if still empty: the run failed or was interrupted
    if result.stop_reason in INCOMPLETE:
        hint = (
            f"; resume with: netfl run --resume {run_dir}"
            if checkpoint_path(run_dir).is_file()
            else ""
        )
        written = (
            f"{len(result.rounds)} finished rounds written to {run_dir}, marked "
            f"incomplete in manifest.json{hint}"
        )
        if not signal_seen:  # a parallel executor's worker died
            print(f"error: {result.info['error']}; {written}", file=sys.stderr)
            return 1
        what = "terminated" if isinstance(signal_seen[0], Terminated) else "interrupted"
        print(f"{what}: {written}", file=sys.stderr)
        return 143 if isinstance(signal_seen[0], Terminated) else 130
    last = result.rounds.iloc[-1]
    print(
        f"{scenario.name}: {len(result.rounds)} rounds ({result.stop_reason}), "
        f"accuracy {last['accuracy']:.4f}, simulated {last['sim_time_s']:.2f} s, "
        f"device energy {result.rounds['device_energy_j'].sum():.1f} J, "
        f"wall {result.wall_time_s:.1f} s"
    )
    print(f"results: {run_dir}")
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from netfl.scenario_io import parse_overrides
    from netfl.sweep import expand, load_sweep, run_sweep

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
    print(f"{spec.name}: {len(index)} runs ({', '.join(f'{v} {k}' for k, v in counts.items())})")
    print(f"index: {out / 'sweep.csv'}")
    print(f"report (mean ± std over seeds, index.html): netfl report {out}")
    return 0 if counts.get("failed", 0) == 0 else 1


def _cmd_validate(args: argparse.Namespace) -> int:
    from netfl.rng import Streams
    from netfl.scenario_io import load_scenario, parse_overrides
    from netfl.sweep import expand, is_sweep_file, load_sweep
    from netfl.world import build_data

    if is_sweep_file(args.scenario):
        spec, path = load_sweep(args.scenario)
        runs = expand(spec, path, parse_overrides(args.set))
        for run in runs:  # every variant's data root and partition
            build_data(run.scenario, Streams(run.scenario.seed), run.source)
        shown = ", ".join(r.name for r in runs[:4]) + (", ..." if len(runs) > 4 else "")
        print(f"{args.scenario}: valid sweep ({spec.name}, {len(runs)} runs: {shown})")
        return 0
    scenario = load_scenario(args.scenario, args.set)
    build_data(scenario, Streams(scenario.seed), args.scenario)  # data root, partition
    print(
        f"{args.scenario}: valid ({scenario.name}, algorithm {scenario.algorithm.name}, "
        f"{scenario.devices.count} devices, {scenario.training.rounds} rounds)"
    )
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from channel_models import link_profiles
    from channel_models.channel_profiles import channel_profiles
    from netfl.algorithms import ALGORITHMS
    from netfl.compute import compute_profiles
    from netfl.learning import MODELS, PARTITIONERS
    from netfl.learning.datasets import DATASET_INFO

    tables = {
        "algorithms": {n: (c.__doc__ or "").strip().splitlines()[0] for n, c in ALGORITHMS.items()},
        "datasets": dict(DATASET_INFO),
        "models": {n: s.description for n, s in MODELS.items()},
        "partitions": {n: (f.__doc__ or "").strip() for n, f in PARTITIONERS.items()},
        "link-profiles": {
            n: f"up {p.uplink_bps / 1e6:g} Mbit/s, down {p.downlink_bps / 1e6:g} "
            f"Mbit/s  {p.description}"
            for n, p in link_profiles().items()
        },
        "channel-profiles": {
            n: f"{p.num_rbs} RBs, {p.bandwidth_hz / 1e6:g} MHz, {p.pathloss['model']}, "
            f"{p.fading['model']}  {p.description}"
            for n, p in channel_profiles().items()
        },
        "compute-profiles": {
            n: f"{p.effective_flops_per_s:.3g} FLOP/s, busy {p.busy_power_w:g} W,"
            f" idle {p.idle_power_w:g} W  {p.description}"
            for n, p in compute_profiles().items()
        },
    }
    for what in [args.what] if args.what else list(tables):
        print(f"{what}:")
        for name, text in tables[what].items():
            print(f"  {name:<20} {text}".rstrip())
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from netfl.report import compare_figures, cost_to_target, result_figures
    from netfl.results import read_run
    from netfl.sweep_report import is_sweep_dir, sweep_report

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
            labels[label], names[d] = r.rounds, label
        baseline = names.get(args.baseline) if args.baseline else None
        if args.baseline and baseline is None:
            raise UserError(f"--baseline: {args.baseline} is not one of the run directories")
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
        paths = compare_figures(labels, Path(args.out), baseline=baseline)
    for p in paths:
        print(p)
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from netfl.scenario_io import scenario_schema

    print(json.dumps(scenario_schema(), indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="netfl", description=__doc__.splitlines()[0])
    p.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = p.add_subparsers(dest="command", required=True)

    def with_set(sp: argparse.ArgumentParser, optional: bool = False) -> None:
        sp.add_argument("scenario", nargs="?" if optional else None, help="scenario YAML file")
        sp.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="KEY.PATH=VALUE",
            help="override a scenario value (repeatable)",
        )

    r = sub.add_parser("run", help="run a scenario and write a run directory")
    with_set(r, optional=True)
    r.add_argument("--out", help="run directory (default: outputs.dir/NAME-TIMESTAMP)")
    r.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="continue an interrupted run from its last checkpoint (outputs.checkpoint_every)",
    )
    r.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    r.set_defaults(func=_cmd_run)
    sw = sub.add_parser("sweep", help="run every variant of a sweep file")
    sw.add_argument("sweep", metavar="SWEEP.yaml")
    sw.add_argument("--out", help="sweep directory (default runs/sweeps/NAME)")
    sw.add_argument(
        "--workers",
        type=int,
        help="parallel runs (default: 1 on the local backend, one per CPU on Ray)",
    )
    sw.add_argument(
        "--backend",
        choices=["local", "ray"],
        default="local",
        help="a local process pool, or Ray tasks (pip install 'netfl[ray]')",
    )
    sw.add_argument(
        "--address",
        help="Ray: an existing cluster ('auto', 'ray://HOST:10001'; default: start Ray here)",
    )
    sw.add_argument("--no-progress", action="store_true")
    sw.add_argument("--set", action="append", metavar="KEY=VALUE", help="override for every run")
    sw.set_defaults(func=_cmd_sweep)
    v = sub.add_parser(
        "validate", help="check a scenario file, or every run of a sweep file (without running)"
    )
    with_set(v)
    v.set_defaults(func=_cmd_validate)
    ls = sub.add_parser("list", help="list algorithms, data sets, models, profiles")
    ls.add_argument(
        "what",
        nargs="?",
        choices=[
            "algorithms",
            "datasets",
            "models",
            "partitions",
            "link-profiles",
            "channel-profiles",
            "compute-profiles",
        ],
    )
    ls.set_defaults(func=_cmd_list)
    rp = sub.add_parser(
        "report",
        help="figures of one run, several runs overlaid, or a sweep (mean ± std over seeds, "
        "tables, index.html)",
    )
    rp.add_argument("run_dirs", nargs="+", metavar="RUN_DIR|SWEEP_DIR")
    rp.add_argument(
        "--out",
        help="figure folder (default: RUN_DIR/figures for one run, SWEEP_DIR/report for a sweep)",
    )
    rp.add_argument(
        "--baseline",
        metavar="RUN_DIR",
        help="run whose peak accuracy is the target of the cost table (default: the first)",
    )
    rp.set_defaults(func=_cmd_report)
    sc = sub.add_parser("schema", help="print the JSON schema of scenario files")
    sc.set_defaults(func=_cmd_schema)
    return p


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C (nothing half-written is left as complete)."""


#: the last Ctrl-C/SIGTERM seen (the runner turns it into a partial result)
_last_interrupt: list[KeyboardInterrupt] = []


def _on_sigterm(signum, frame) -> None:
    _last_interrupt[:] = [Terminated()]
    raise _last_interrupt[0]


#: at most this many problem lines are printed (then a count of the rest)
MAX_ERROR_LINES = 20


def main(argv: list[str] | None = None) -> int:
    import signal
    import threading

    args = build_parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return args.func(args)
    except ScenarioError as err:
        if args.debug:
            raise
        lines = err.lines()
        for line in lines[:MAX_ERROR_LINES]:
            print(f"error: {line}", file=sys.stderr)
        if len(lines) > MAX_ERROR_LINES:
            print(f"error: … and {len(lines) - MAX_ERROR_LINES} more problems", file=sys.stderr)
        return EXIT_USER_ERROR
    except (UserError, FileExistsError) as err:
        if args.debug:
            raise
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt as err:
        what = "terminated" if isinstance(err, Terminated) else "interrupted"
        hint = f"; {err.args[0]}" if err.args else ""
        print(f"{what}: no run directory was written{hint}", file=sys.stderr)
        return 143 if isinstance(err, Terminated) else 130
    except WorkerLost as err:  # before a round finished (the environment, not the input)
        if args.debug:
            raise
        print(f"error: {err}; no round had finished", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
