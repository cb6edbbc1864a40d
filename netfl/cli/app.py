"""Command line: ``netfl run | sweep | validate | describe | list | report | schema``.

User errors print one line (naming the file and key path) and exit with code
2; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from netfl.cli.commands import (
    Terminated,
    cmd_report,
    cmd_run,
    cmd_sweep,
    on_sigint,
    on_sigterm,
)
from netfl.errors import ScenarioError, UserCodeError, UserError, WorkerLost

#: bad input: a scenario key, a file, an option
EXIT_USER_ERROR = 2
#: a researcher's own code failed (a plugin, a Flower app), or a worker was lost
EXIT_FAILED = 1
#: standard output was closed before the command said all (128 + SIGPIPE, as a shell's)
EXIT_CLOSED_PIPE = 141


def _count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless one."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _cmd_validate(args: argparse.Namespace) -> int:
    from netfl.core.rng import Streams
    from netfl.loading.scenarios import load_scenario
    from netfl.scenario.files import parse_overrides
    from netfl.sim.data import build_data
    from netfl.sim.specs import data_spec
    from netfl.sweep.spec import expand, is_sweep_file, load_sweep

    if is_sweep_file(args.scenario):
        spec, path = load_sweep(args.scenario)
        runs = expand(spec, path, parse_overrides(args.set))
        for run in runs:  # every variant's data root and partition
            build_data(data_spec(run.scenario), Streams(run.scenario.seed), run.source)
        shown = ", ".join(r.name for r in runs[:4]) + (", ..." if len(runs) > 4 else "")
        print(f"{args.scenario}: valid sweep ({spec.name}, {len(runs)} runs: {shown})")
        return 0
    scenario = load_scenario(args.scenario, args.set)
    build_data(data_spec(scenario), Streams(scenario.seed), args.scenario)  # root, partition
    print(
        f"{args.scenario}: valid ({scenario.name}, algorithm {scenario.algorithm.name}, "
        f"{scenario.devices.count} devices, {_count(scenario.training.rounds, 'round')})"
    )
    return 0


def _cmd_describe(args: argparse.Namespace) -> int:
    from netfl.cli.describe import describe_lines
    from netfl.loading.scenarios import load_scenario

    scenario = load_scenario(args.scenario, args.set)
    for line in describe_lines(scenario, args.scenario):
        print(line)
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from channel_models import link_profiles
    from channel_models.fading import FADING_MODELS
    from channel_models.pathloss_laws import PATHLOSS_MODELS, pathloss_parameters
    from channel_models.profile_catalog import channel_profiles
    from netfl.algorithms import ALGORITHMS
    from netfl.codecs import CODECS
    from netfl.compute import compute_profiles
    from netfl.core.availability import AVAILABILITY_MODELS
    from netfl.learning.catalog import MODEL_CATALOG
    from netfl.learning.datasets import DATASET_INFO
    from netfl.learning.partition import PARTITIONERS
    from netfl.loading.plugins import (
        PluginCodeError,
        PluginError,
        load_all_entry_points,
        load_plugins,
        origin,
    )
    from netfl.policies import POLICIES
    from netfl.radio.mobility_models import MOBILITY_MODELS
    from netfl.radio.schedulers import SCHEDULERS

    try:
        load_plugins(list(args.plugin or []))
    except PluginCodeError as err:
        raise UserCodeError(f"--plugin: {err}", err.trace) from None
    except PluginError as err:
        raise UserError(f"--plugin: {err}") from None
    for problem in load_all_entry_points():
        print(f"warning: {problem}", file=sys.stderr)

    def summary(cls) -> str:
        lines = (cls.__doc__ or "").strip().splitlines()
        return lines[0] if lines else "(no description)"

    tables = {
        "algorithms": {n: summary(c) for n, c in ALGORITHMS.items()},
        "datasets": dict(DATASET_INFO),
        "models": {n: description for n, (_, description) in MODEL_CATALOG.items()},
        "partitions": {n: (f.__doc__ or "").strip() for n, f in PARTITIONERS.items()},
        "link-profiles": {
            n: f"up {p.uplink_bps / 1e6:g} Mbit/s, down {p.downlink_bps / 1e6:g} Mbit/s"
            + (f", modem {p.modem_profile}" if p.modem_profile else "")
            + f"  {p.description}"
            for n, p in link_profiles().items()
        },
        "channel-profiles": {
            n: f"{p.num_rbs} RBs, {p.bandwidth_hz / 1e6:g} MHz, {p.pathloss['model']}, "
            f"{p.fading['model']}, {p.efficiency['model']}, downlink "
            + (
                f"in groups of {p.rbg_size()} RBs (ns-3 LENA's round robin)"
                if p.downlink_allocation == "rbg_round_robin"
                else "fractional RBs"
            )
            + (f", modem {p.modem_profile}" if p.modem_profile else "")
            + f"  {p.description}"
            for n, p in channel_profiles().items()
        },
        "compute-profiles": {
            n: f"{p.effective_flops_per_s:.3g} FLOP/s, busy {p.busy_power_w:g} W,"
            f" idle {p.idle_power_w:g} W"
            + (
                f", DVFS {p.min_frequency_hz / 1e9:g}-{p.max_frequency_hz / 1e9:g} GHz"
                f" (κ {p.capacitance:g})"
                if p.dvfs
                else ""
            )
            + f"  {p.description}"
            for n, p in compute_profiles().items()
        },
        "schedulers": {
            n: c.description
            + (f"  (options: {', '.join(c.Config.model_fields)})" if c.Config.model_fields else "")
            for n, c in SCHEDULERS.items()
        },
        "pathloss-laws": {
            n: f"{c.description or n}  (parameters: {', '.join(pathloss_parameters(n))})"
            for n, c in PATHLOSS_MODELS.items()
        },
        "mobility-models": {
            n: c.description
            + (f"  (options: {', '.join(c.Config.model_fields)})" if c.Config else "")
            for n, c in MOBILITY_MODELS.items()
        },
        "fading-models": {n: c.description for n, c in FADING_MODELS.items()},
        "availability-models": {
            n: c.description
            + (f"  (options: {', '.join(c.Config.model_fields)})" if c.Config else "")
            for n, c in AVAILABILITY_MODELS.items()
        },
        "policies": {
            n: c.description
            + (f"  (options: {', '.join(c.Config.model_fields)})" if c.Config else "")
            for n, c in POLICIES.items()
        },
        "codecs": {
            n: c.description
            + (f"  (options: {', '.join(c.Config.model_fields)})" if c.Config else "")
            + ("" if "downlink" in c.directions else "  [uplink only]")
            for n, c in CODECS.items()
        },
    }
    kinds = {
        "algorithms": "algorithm",
        "datasets": "data set",
        "models": "model",
        "partitions": "partition",
        "link-profiles": "link profile",
        "compute-profiles": "compute profile",
        "schedulers": "scheduler",
        "pathloss-laws": "path-loss law",
        "mobility-models": "mobility model",
        "fading-models": "fading model",
        "availability-models": "availability model",
        "policies": "resource policy",
        "codecs": "update codec",
    }
    for what in [args.what] if args.what else list(tables):
        print(f"{what}:")
        for name, text in tables[what].items():
            where = origin(name, kinds[what]) if what in kinds else "built-in"
            text = str(text).strip().splitlines()[0] if str(text).strip() else ""
            text += f"  [{where}]" if where != "built-in" else ""
            print(f"  {name:<20} {text}".rstrip())
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    if args.markdown:  # (the scenario reference page, as the docs' site shows it)
        from netfl.loading.reference import schema_markdown

        print(schema_markdown())
        return 0
    from netfl.loading.scenarios import scenario_schema

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
    r.set_defaults(func=cmd_run)
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
    sw.set_defaults(func=cmd_sweep)
    v = sub.add_parser(
        "validate", help="check a scenario file, or every run of a sweep file (without running)"
    )
    with_set(v)
    v.set_defaults(func=_cmd_validate)
    de = sub.add_parser(
        "describe",
        help="print a scenario's effective link budget: propagation law, fading, powers, "
        "the first drop's SNR percentiles and starved devices (nothing is run)",
    )
    with_set(de)
    de.set_defaults(func=_cmd_describe)
    ls = sub.add_parser("list", help="list algorithms, data sets, models, profiles, schedulers")
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
            "schedulers",
            "pathloss-laws",
            "mobility-models",
            "fading-models",
            "availability-models",
            "policies",
            "codecs",
        ],
    )
    ls.add_argument(
        "--plugin",
        action="append",
        metavar="MODULE|FILE.py",
        help="also list what this plugin registers (as a scenario's plugins: key)",
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
    rp.set_defaults(func=cmd_report)
    sc = sub.add_parser("schema", help="print the JSON schema of scenario files")
    sc.add_argument(
        "--markdown",
        action="store_true",
        help="print the scenario reference (every key, its type, default and meaning)",
    )
    sc.set_defaults(func=_cmd_schema)
    return p


#: at most this many problem lines are printed (then a count of the rest)
MAX_ERROR_LINES = 20


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null: the interpreter's last flush then has nowhere to fail
    (Python's advice for a closed pipe)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    import signal
    import threading

    args = build_parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_sigterm)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, on_sigint)
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    code = None
    try:
        code = args.func(args)
        sys.stdout.flush()  # (here, where a closed pipe is caught; not at the exit)
        return code
    except BrokenPipeError:  # (`netfl run … | head`: the reader went away; end quietly)
        _stdout_to_devnull()
        return code if code is not None else EXIT_CLOSED_PIPE
    except ScenarioError as err:
        if args.debug:
            raise
        lines = err.lines()
        for line in lines[:MAX_ERROR_LINES]:
            print(f"error: {line}", file=sys.stderr)
        if len(lines) > MAX_ERROR_LINES:
            print(f"error: … and {len(lines) - MAX_ERROR_LINES} more problems", file=sys.stderr)
        return EXIT_USER_ERROR
    except UserCodeError as err:  # (before any round finished: nothing to keep)
        if args.debug:
            print(err.trace, file=sys.stderr)
        print(f"error: {err}", file=sys.stderr)
        return EXIT_FAILED
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
