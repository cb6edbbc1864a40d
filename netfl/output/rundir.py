"""Write and read run directories atomically.

A run directory holds ``scenario.yaml`` (fully resolved), ``manifest.json``,
``rounds.csv``, ``devices.csv``, ``transfers.parquet``, ``computes.parquet``,
the radio's and the algorithm's tables and ``figures/`` (drawn by a callback:
:func:`netfl.output.figures.write_run` passes the figure writer, so this module
imports neither the runner nor the report). Everything is written into a hidden temporary directory
next to the target and renamed into place at the end, so a run directory
that exists is complete; an interrupted run leaves nothing behind.
"""

from __future__ import annotations

import glob
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from netfl.errors import UserError
from netfl.loading.scenarios import parse_scenario, resolved
from netfl.sim.checkpoint import CHECKPOINT_DIR
from netfl.sim.result import RunResult
from netfl.version import torch_version

__all__ = [
    "write_run",
    "write_run_dir",
    "read_run",
    "default_run_dir",
    "reserve_run_dir",
    "is_complete",
    "is_incomplete",
    "read_manifest",
    "release_run_dir",
    "manifest",
    "INCOMPLETE",
]

#: stop reasons of a run that did not finish: written marked ``"complete": false``,
#: checkpoint kept, run again by sweeps (Ctrl-C/SIGTERM; a parallel executor's worker died;
#: a researcher's own code failed: a plugin, a Flower app — status ``failed``; the input
#: cannot go on mid-run, e.g. no device returns within the horizon — status ``failed``)
INCOMPLETE = ("interrupted", "worker_lost", "failed", "error")

#: the temporary folders a write leaves when killed: ``.NAME.XXXXXXXX.tmp`` (being
#: written) and ``.NAME.XXXXXXXX.old`` (a replaced run moved aside); matched by exact
#: name, so that a sibling run whose name extends this one's (``mu=1`` and ``mu=1.5``)
#: is never touched
_LEFTOVER = r"\.{name}\.[a-z0-9_]{{8}}\.{kind}"


def _leftovers(target: Path, kind: str) -> list[Path]:
    """This run's own leftovers beside ``target`` (``kind``: ``tmp`` or ``old``)."""
    pattern = re.compile(_LEFTOVER.format(name=re.escape(target.name), kind=kind))
    return sorted(
        p
        for p in target.parent.glob(f".{glob.escape(target.name)}.*.{kind}")
        if pattern.fullmatch(p.name)
    )


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def manifest(result: RunResult) -> dict[str, Any]:
    """Provenance of a run: versions, seed, wall time, host, git commit."""
    from netfl.version import __version__

    complete = result.stop_reason not in INCOMPLETE
    failed = result.stop_reason in ("failed", "error")
    return {
        # complete; incomplete (interrupted, a worker lost); failed (user code failed, or
        # the input could not go on: the manifest's "error" key says why)
        "status": "complete" if complete else "failed" if failed else "incomplete",
        "scenario": result.scenario.name,
        "seed": result.scenario.seed,
        "algorithm": result.scenario.algorithm.name,
        "mode": result.scenario.learning.mode,
        "stop_reason": result.stop_reason,
        # false: stopped by Ctrl-C/SIGTERM or a lost worker; `netfl run --resume`
        # continues from a checkpoint
        "complete": complete,
        "num_rounds": len(result.rounds),
        "sim_time_s": float(result.rounds["sim_time_s"].iloc[-1]) if len(result.rounds) else 0.0,
        "wall_time_s": result.wall_time_s,
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {
            "netfl": __version__,
            "torch": torch_version(),
            "numpy": np.__version__,
            "pandas": pd.__version__,
        },
        "git_commit": _git_commit(),
        **result.info,
    }


def default_run_dir(result: RunResult) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(result.scenario.outputs.dir) / f"{result.scenario.name}-{stamp}"


def read_manifest(run_dir: str | Path) -> dict[str, Any] | None:
    """The manifest a run wrote in ``run_dir`` (None: none, unreadable, or no JSON
    object)."""
    try:
        found = json.loads((Path(run_dir) / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def is_complete(run_dir: str | Path) -> bool:
    """A run directory whose manifest says the run finished (not interrupted)."""
    found = read_manifest(run_dir)
    return found is not None and found.get("complete", True) is not False


def is_incomplete(run_dir: str | Path) -> bool:
    """A run directory written by a run that did not finish (``"complete": false``):
    :func:`write_run_dir` may replace it with the resumed run's tables."""
    found = read_manifest(run_dir)
    return found is not None and found.get("complete", True) is False


def reserve_run_dir(scenario: Any, run_dir: str | Path | None = None) -> Path:
    """Create the (empty) run directory before simulating, so that an unusable path, a
    file in the way or a second run racing for the same directory fails at once.

    With ``run_dir`` None the default ``outputs.dir/NAME-TIMESTAMP`` gets ``-2``,
    ``-3``, … when a run started in the same second holds it. :func:`write_run_dir`
    fills a reserved directory; :func:`release_run_dir` removes it if the run fails.
    """
    explicit = run_dir is not None
    if explicit and not str(run_dir).strip():
        raise UserError("--out: empty path; name a run directory")
    if explicit:
        base = Path(run_dir)  # type: ignore[arg-type]
    else:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        base = Path(scenario.outputs.dir) / f"{scenario.name}-{stamp}"
    for attempt in range(1, 1000):
        target = base if attempt == 1 else base.with_name(f"{base.name}-{attempt}")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # a file where a folder of the path should be
            raise UserError(
                f"{'--out' if explicit else 'outputs.dir'}: cannot create {target} "
                "(a file is in the way)"
            ) from None
        except OSError as err:
            where = "--out" if explicit else "outputs.dir"
            raise UserError(f"{where}: cannot create {target} ({err.strerror})") from None
        try:
            os.mkdir(target)
            return target
        except FileExistsError:
            if explicit:
                raise UserError(
                    f"--out: {target} already exists; choose a new run directory"
                ) from None
        except OSError as err:
            where = "--out" if explicit else "outputs.dir"
            raise UserError(f"{where}: cannot create {target} ({err.strerror})") from None
    raise UserError(f"outputs.dir: no free run directory name next to {base}")


def _umask() -> int:
    """The process's file-mode creation mask (read by setting it and back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def release_run_dir(run_dir: Path) -> None:
    """Remove a reserved run directory that is still empty (the run did not finish)."""
    try:
        run_dir.rmdir()
    except OSError:
        pass


def write_run_dir(
    result: RunResult,
    run_dir: str | Path | None = None,
    draw: Callable[[RunResult, Path], Any] | None = None,
) -> Path:
    """Write ``result`` to ``run_dir`` (default ``outputs.dir/NAME-TIMESTAMP``); return it.

    ``draw(result, folder)`` may add files (figures) before the directory is
    renamed into place (onto an empty directory :func:`reserve_run_dir` made, or in
    place of an interrupted run's directory — one holding a checkpoint, or marked
    incomplete — that this run resumed: its tables stay until the new ones are whole,
    and a failure or a kill during the swap puts them, and the checkpoint, back). Fails
    if ``run_dir`` exists with other content, rather than mixing two runs.
    """
    target = Path(run_dir) if run_dir is not None else default_run_dir(result)
    if target.parent.is_dir():
        _recover(target)
    occupied = target.exists() and not (
        target.is_dir() and {p.name for p in target.iterdir()} <= {CHECKPOINT_DIR}
    )  # (empty or holding only a checkpoint: reserved by this run)
    # a directory holding a checkpoint, or an interrupted run's tables, is this run's: a
    # resume replaces it (stray files included) once its own tables are whole
    ours = target.is_dir() and ((target / CHECKPOINT_DIR).is_dir() or is_incomplete(target))
    if occupied and not ours:
        raise FileExistsError(f"run directory {target} already exists")
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in _leftovers(target, "tmp"):  # a write of this run killed half-way
        shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    os.chmod(tmp, 0o777 & ~_umask())  # (mkdtemp's 0700: results readable as the umask says)
    old: Path | None = None
    checkpoint_moved = False
    try:
        (tmp / "scenario.yaml").write_text(
            yaml.safe_dump(resolved(result.scenario), sort_keys=False)
        )
        result.rounds.to_csv(tmp / "rounds.csv", index=False)
        result.devices.to_csv(tmp / "devices.csv", index=False)
        result.transfers.to_parquet(tmp / "transfers.parquet", index=False)
        result.computes.to_parquet(tmp / "computes.parquet", index=False)
        for name, table in result.tables.items():
            table.to_parquet(tmp / f"{name}.parquet", index=False)
        if draw is not None:
            draw(result, tmp)
        (tmp / "manifest.json").write_text(json.dumps(manifest(result), indent=2))
        if (target / CHECKPOINT_DIR).is_dir() and result.stop_reason in INCOMPLETE:
            os.rename(target / CHECKPOINT_DIR, tmp / CHECKPOINT_DIR)  # the run can be resumed
            checkpoint_moved = True
        if result.resume_state is not None:  # (failed in user code: its last round's state)
            _write_resume_state(result, tmp)
        if occupied:  # the interrupted run's tables: replaced only now that ours are whole
            old = Path(
                tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent)
            )
            os.rename(target, old / "run")  # (a kill between these two renames: _recover)
            os.rename(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            if (target / CHECKPOINT_DIR).is_dir():
                shutil.rmtree(target / CHECKPOINT_DIR)
            os.rename(tmp, target)
    except BaseException:
        if old is not None and (old / "run").is_dir() and not target.exists():
            os.rename(old / "run", target)  # the previous tables back in place
        if checkpoint_moved and (tmp / CHECKPOINT_DIR).is_dir() and target.is_dir():
            if not (target / CHECKPOINT_DIR).exists():
                os.rename(tmp / CHECKPOINT_DIR, target / CHECKPOINT_DIR)  # never lost
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        raise
    return target


def _write_resume_state(result: RunResult, folder: Path) -> None:
    """The checkpoint a failed run resumes from (``result.resume_state``: its last
    finished round), with the resolved scenario ``--resume`` reads, in ``folder``."""
    from netfl.sim.checkpoint import write_checkpoint

    (folder / CHECKPOINT_DIR).mkdir(exist_ok=True)
    saved = folder / CHECKPOINT_DIR / "scenario.yaml"
    if not saved.is_file():
        saved.write_text(yaml.safe_dump(resolved(result.scenario), sort_keys=False))
    write_checkpoint(folder, result.resume_state)


def _recover(target: Path) -> None:
    """Undo a replacement of ``target`` that was killed half-way: an interrupted run's
    tables moved aside (``.NAME.*.old/run``) while ``target`` is missing go back."""
    for aside in _leftovers(target, "old"):
        if (aside / "run").is_dir() and not target.exists():
            os.rename(aside / "run", target)
        shutil.rmtree(aside, ignore_errors=True)


def read_run(run_dir: str | Path) -> RunResult:
    """Load a complete run directory as a :class:`~netfl.sim.result.RunResult`.

    Further tables (radio: ``occupancy``, ``cues``, ``coverage``; FedDif: ``diffusion``) land in
    ``tables``; ``manifest`` holds the provenance.
    """
    d = Path(run_dir)
    if not (d / "manifest.json").is_file():
        raise FileNotFoundError(f"{d} is not a complete run directory (no manifest.json)")
    try:
        return _read_run(d)
    except (FileNotFoundError, UserError):
        raise
    except Exception as err:  # noqa: BLE001 - a damaged file: one line naming it
        raise UserError(
            f"{d}: damaged run directory ({type(err).__name__}: {str(err)[:160]})"
        ) from None


#: columns every rounds.csv has (the report reads them)
ROUND_COLUMNS = ("round", "sim_time_s", "accuracy", "loss", "uplink_bits", "downlink_bits")


def _rounds_table(path: Path) -> pd.DataFrame:
    rounds = pd.read_csv(path)
    missing = [c for c in ROUND_COLUMNS if c not in rounds]
    if missing or not len(rounds):
        raise ValueError(f"rounds.csv lacks {', '.join(missing) or 'rows'}")
    return rounds


def _read_run(d: Path) -> RunResult:
    core = {"transfers", "computes"}
    tables = {p.stem: pd.read_parquet(p) for p in sorted(d.glob("*.parquet"))}
    man = json.loads((d / "manifest.json").read_text())
    scenario_path = d / "scenario.yaml"
    scenario = parse_scenario(yaml.safe_load(scenario_path.read_text()), str(scenario_path))
    return RunResult(
        scenario=scenario,
        rounds=_rounds_table(d / "rounds.csv"),
        transfers=tables.pop("transfers"),
        computes=tables.pop("computes"),
        devices=pd.read_csv(d / "devices.csv"),
        stop_reason=man.get("stop_reason", ""),
        wall_time_s=float(man.get("wall_time_s", float("nan"))),
        info={k: v for k, v in man.items() if k not in core},
        tables=tables,
        manifest=man,
    )


def write_run(
    result: RunResult, run_dir: str | Path | None = None, figures: bool | None = None
) -> Path:
    """Write a run directory with its figures (``figures``: default ``outputs.figures``).

    Atomic: a run directory that exists is complete. Returns its path.
    """
    draw = result.scenario.outputs.figures if figures is None else figures
    if not draw:
        return write_run_dir(result, run_dir, None)
    from netfl.output.figures import result_figures  # (matplotlib: only when drawing)

    return write_run_dir(result, run_dir, lambda res, tmp: result_figures(res, tmp / "figures"))
