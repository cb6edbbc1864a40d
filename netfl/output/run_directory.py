"""A run's directory through its life (:class:`RunDirectory`): reserved, found again to
resume, its checkpoint folder prepared, written atomically (:mod:`netfl.output.rundir`),
released, and asked whether it holds a run and whether that run finished; and whether a
directory stands for a scenario (:func:`scenario_mismatch`)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from netfl.errors import UserError
from netfl.loading.scenarios import parse_scenario, resolved
from netfl.output.rundir import (
    is_complete,
    is_incomplete,
    read_manifest,
    release_run_dir,
    reserve_run_dir,
    write_run,
)
from netfl.sim.checkpoint import CHECKPOINT_DIR
from netfl.sim.result import RunResult

__all__ = ["RunDirectory", "scenario_mismatch"]


def scenario_mismatch(folder: str | Path, scenario: Any) -> str:
    """Why ``folder`` (a run directory, or its checkpoint folder) cannot stand for
    ``scenario`` ("" if it can): its ``scenario.yaml`` must be the same resolved
    scenario (e.g. not one run with other ``--set`` values)."""
    folder = Path(folder)
    try:
        stored = yaml.safe_load((folder / "scenario.yaml").read_text(encoding="utf-8"))
        same = resolved(parse_scenario(stored, str(folder))) == resolved(scenario)
    except Exception as err:  # noqa: BLE001 - any unreadable directory is stale
        return f"stale: {folder} is unreadable ({type(err).__name__}); delete it to rerun"
    if same:
        return ""
    return f"stale: {folder} holds a run of a different scenario; delete it or use another --out"


class RunDirectory:
    """One run's directory through its life — ``netfl run``, a sweep's runs and the
    analysis studies (through sweeps) all go through it: reserved before simulating
    (:meth:`reserve`: an unusable path fails at once), or found again to go on
    (:meth:`to_resume`, :meth:`in_sweep`); its checkpoint folder prepared with the
    resolved scenario (:meth:`prepare_checkpoint`); written atomically (:meth:`write`:
    an interrupted run's finished rounds and checkpoint replaced only once the new tables
    are whole); released when the run left nothing in it (:meth:`release`)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def __fspath__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"RunDirectory({str(self.path)!r})"

    @property
    def checkpoint_dir(self) -> Path:
        return self.path / CHECKPOINT_DIR

    @property
    def written(self) -> bool:
        """Whether a run wrote its tables here (its manifest is there), complete or
        not."""
        return (self.path / "manifest.json").is_file()

    @property
    def complete(self) -> bool:
        """Whether the run written here finished (:func:`is_complete`)."""
        return is_complete(self.path)

    @property
    def interrupted(self) -> bool:
        """Whether the run written here stopped before its end (:func:`is_incomplete`:
        its finished rounds, marked incomplete)."""
        return is_incomplete(self.path)

    def manifest(self) -> dict[str, Any]:
        """The manifest the run wrote ({} when none, or when it cannot be read)."""
        return read_manifest(self.path) or {}

    @property
    def has_checkpoint(self) -> bool:
        """Whether a checkpoint of a finished round is there (:func:`checkpoint_path`)."""
        from netfl.sim.checkpoint import checkpoint_path

        return checkpoint_path(self.path).is_file()

    @classmethod
    def reserve(cls, scenario: Any, out: str | Path | None = None) -> RunDirectory:
        """A new, empty run directory for ``scenario`` (:func:`reserve_run_dir`), with
        its checkpoint folder when the scenario checkpoints."""
        found = cls(reserve_run_dir(scenario, out))
        if scenario.outputs.checkpoint_every:
            found.prepare_checkpoint(scenario)
        return found

    @classmethod
    def to_resume(cls, path: str | Path) -> tuple[RunDirectory, Any, bool]:
        """An interrupted or failed run's directory (``netfl run --resume``): it, the
        scenario its
        checkpoint folder saved, and whether a checkpoint of a finished round is there
        (validated against that scenario; without one the run starts again in place).
        Nothing of the interrupted run is removed: its finished rounds and manifest stay
        until the resumed run has written its own."""
        from netfl.loading.scenarios import load_scenario
        from netfl.sim.checkpoint import load_checkpoint, scenario_fingerprint

        found = cls(path)
        saved = found.checkpoint_dir / "scenario.yaml"
        if is_complete(found.path):
            raise UserError(f"--resume: {found.path} is a complete run; nothing to resume")
        if not saved.is_file():
            raise UserError(
                f"--resume: {found.path} holds no checkpoint (outputs.checkpoint_every)"
            )
        scenario = load_scenario(saved)
        resume = found.has_checkpoint
        if resume:  # (a damaged or foreign checkpoint fails here)
            load_checkpoint(found.path, scenario_fingerprint(scenario))
        return found, scenario, resume

    @classmethod
    def in_sweep(cls, path: str | Path, scenario: Any) -> tuple[RunDirectory, bool]:
        """A sweep's run directory for ``scenario``, and whether it holds a checkpoint
        of this very scenario (an earlier invocation stopped: Ctrl-C, a kill, a lost
        worker, a failure of user code) to resume from; otherwise its checkpoint folder is made afresh (when the
        scenario checkpoints)."""
        found = cls(path)
        folder = found.checkpoint_dir
        if (
            found.has_checkpoint
            and (folder / "scenario.yaml").is_file()
            and not scenario_mismatch(folder, scenario)
        ):  # (of a checkpointing run, or of one that failed in user code)
            return found, True
        if not scenario.outputs.checkpoint_every:
            return found, False
        shutil.rmtree(folder, ignore_errors=True)  # none, or one of another scenario
        found.prepare_checkpoint(scenario)
        return found, False

    def prepare_checkpoint(self, scenario: Any) -> None:
        """The checkpoint folder with the resolved scenario (what ``--resume`` reads)."""
        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        (self.checkpoint_dir / "scenario.yaml").write_text(
            yaml.safe_dump(resolved(scenario), sort_keys=False)
        )

    def write(self, result: RunResult, figures: bool | None = None) -> Path:
        """Write ``result`` here with its figures (:func:`write_run`)."""
        return write_run(result, self.path, figures)

    def release(self) -> None:
        """Remove the directory if the run left nothing in it: nothing written and no
        checkpoint of a finished round (it failed or was interrupted before one; the
        checkpoint folder's scenario alone is removed with it, so the same command runs
        again)."""
        if self.has_checkpoint:
            return
        if self.checkpoint_dir.is_dir() and [p.name for p in self.path.iterdir()] == [
            CHECKPOINT_DIR
        ]:
            shutil.rmtree(self.checkpoint_dir, ignore_errors=True)
        release_run_dir(self.path)
