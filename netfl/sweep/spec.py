"""Sweep files: one base scenario, named variants, a grid and zipped lists of overrides, seeds.

A sweep file (``*.sweep.yaml``)::

    name: feddif_alpha
    base: feddif.yaml              # the base scenario, relative to this file
    set:                           # overrides applied to every run
      training.rounds: 30
    variants:                      # named override sets, crossed with the grid
      fedavg: {algorithm: {name: fedavg}}
      feddif: {algorithm: {name: feddif}}
    grid:                          # Cartesian product of the lists
      data.partition.alpha: [0.1, 0.2, 0.5, 1.0, 100]
    zip:                           # lists of one length, taken together
      model.name: [logreg, fcn]
      training.lr: [0.01, 0.05]
    seeds: [1, 2, 3]               # replicates (default: the base scenario's seed)
    target_accuracy: 0.8           # optional: costs to reach it in the index

Runs are expanded as variants × grid × zip × seeds; each gets a readable name
(``feddif-alpha=0.1-seed1``) and its own run directory under the sweep
directory (:func:`netfl.sweep.run.run_sweep` runs them). Overrides may use any key
path of the scenario (a mapping value replaces the whole section).
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from netfl.errors import ScenarioError
from netfl.loading.scenarios import parse_scenario
from netfl.scenario.files import _problems, apply_values, read_yaml
from netfl.scenario.schema import Scenario
from netfl.sweep.labels import param_label, quantity

__all__ = ["SweepSpec", "SweepRun", "is_sweep_file", "load_sweep", "expand", "MAX_SWEEP_RUNS"]

#: runs of one sweep at most (each is a run directory; a study has a few hundred)
MAX_SWEEP_RUNS = 10_000

#: top-level keys of a scenario that a sweep file never has
SCENARIO_SECTIONS = frozenset(Scenario.model_fields) - {"name"}


class SweepSpec(BaseModel):
    """A sweep file, validated (unknown keys are errors)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    base: str = Field(description="base scenario file, relative to the sweep file")
    set: dict[str, Any] = Field(default_factory=dict, description="overrides for every run")
    variants: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="named override sets, crossed with the grid"
    )
    grid: dict[str, list[Any]] = Field(default_factory=dict, description="Cartesian product")
    zip: dict[str, list[Any]] = Field(
        default_factory=dict, description="lists of one length, taken together"
    )
    seeds: list[Annotated[int, Field(ge=0, le=2**63 - 1)]] | None = Field(
        None, min_length=1, description="replicate seeds"
    )
    target_accuracy: float | None = Field(None, gt=0.0, le=1.0)

    @field_validator("zip")
    @classmethod
    def _zip_lengths(cls, value: dict[str, list[Any]]) -> dict[str, list[Any]]:
        empty = [k for k, v in value.items() if not v]
        if empty:
            raise ValueError(f"empty list for {', '.join(empty)}")
        lengths = {len(v) for v in value.values()}
        if len(lengths) > 1:
            raise ValueError(f"the lists must have one length (got {sorted(lengths)})")
        return value

    @field_validator("variants")
    @classmethod
    def _variant_names(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        bad = [k for k in value if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", k)]
        if bad:
            raise ValueError(
                f"variant name {bad[0]!r}: letters, digits, '_', '.', '-' (it names a run "
                "directory; not starting with '.' or '-')"
            )
        return value

    @model_validator(mode="after")
    def _axes_override_nothing(self) -> SweepSpec:
        """An axis (``grid``, ``zip``, ``seeds``) that sets a value ``set`` or a variant
        also sets — the same key, or a section holding it — would leave that value
        unused in every run: an error, as is a ``grid`` and ``zip`` key on one value. (A
        variant may set a key ``set`` sets: its value takes precedence in its runs.)"""
        earlier = [("set", leaf) for k, v in self.set.items() for leaf in leaves(k, v)]
        earlier += [
            ("variants", leaf)
            for variant in self.variants.values()
            for k, v in variant.items()
            for leaf in leaves(k, v)
        ]
        axes = [("grid", k) for k in self.grid] + [("zip", k) for k in self.zip]
        if self.seeds is not None:
            axes.append(("seeds", "seed"))
        for i, (where, key) in enumerate(axes):
            for other_where, other in axes[i + 1 :]:
                if overlap(key, other):
                    raise ValueError(f"{where}: {key} is also set by {other_where} ({other})")
            for other_where, leaf in earlier:
                if leaf == key or leaf.startswith(key + "."):
                    raise ValueError(
                        f"{where}: {key} would override {leaf} ({other_where}) in every run"
                    )
        return self

    def axis_leaves(self) -> list[str]:
        """The key paths whose values name the runs (``grid``, ``zip``, ``seeds``), down
        to the leaves of mapping values."""
        out = [
            leaf
            for axis in (self.grid, self.zip)
            for k, values in axis.items()
            for v in values
            for leaf in leaves(k, v)
        ]
        return sorted(set(out)) + (["seed"] if self.seeds is not None else [])

    @field_validator("grid")
    @classmethod
    def _grid_lists(cls, value: dict[str, list[Any]]) -> dict[str, list[Any]]:
        empty = [k for k, v in value.items() if not v]
        if empty:
            raise ValueError(f"empty list for {', '.join(empty)}")
        return value


@dataclass
class SweepRun:
    """One expanded run: its name, the parameters that define it, and its scenario."""

    name: str
    params: dict[str, Any]
    scenario: Scenario
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def is_sweep_file(path: str | Path) -> bool:
    """Whether ``path`` holds a sweep (a mapping naming a ``base`` scenario), not a scenario."""
    data = read_yaml(Path(path))
    return isinstance(data, dict) and "base" in data


def load_sweep(path: str | Path) -> tuple[SweepSpec, Path]:
    """Read and validate a sweep file; errors name the file and key path."""
    path = Path(path)
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ScenarioError(str(path), [("", "a sweep must be a mapping")])
    if "base" not in data and SCENARIO_SECTIONS & data.keys():
        raise ScenarioError(
            str(path),
            [
                (
                    "",
                    "a scenario, not a sweep (no `base:`): run it with `netfl run`, or name it "
                    "as `base:` in a sweep file",
                )
            ],
        )
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as err:
        raise ScenarioError(str(path), _problems(err, root=SweepSpec)) from None
    return spec, path


def _short(key: str) -> str:
    """The last key of a path (``data.partition.alpha`` → ``alpha``; ``model.name`` → ``model``)."""
    parts = key.split(".")
    return parts[-2] if parts[-1] == "name" and len(parts) > 1 else parts[-1]


def _label(value: Any) -> str:
    """A value as part of a run name; a section reads ``NAME_key1value1_key2value2``
    (``{scheme: dirichlet, alpha: 0.5}`` → ``dirichlet_alpha0.5``)."""
    if isinstance(value, dict):
        key = next((k for k in ("name", "scheme") if k in value), None)
        parts = [_label(value[key])] if key else []
        parts += [f"{k}{_label(v)}" for k, v in value.items() if k != key]
        return "_".join(parts)
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)


def _name_part(key: str, value: Any) -> str:
    """``short=value`` in a run's name: a number with its unit where the key has one
    (``bandwidth=20MHz``, ``radius=250m``; :mod:`netfl.sweep.labels`)."""
    if quantity(key, value) is None:
        return f"{_short(key)}={_label(value)}"
    text = param_label(key, value, _short(key), space="").replace("µ", "u")
    return re.sub(r"[^A-Za-z0-9_.=-]", "_", text)


def overlap(a: str, b: str) -> bool:
    """Whether key paths ``a`` and ``b`` name the same value or one lies inside the other."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def leaves(key: str, value: Any) -> list[str]:
    """The key paths an override ``key: value`` sets: ``key`` itself, or the leaves of a
    mapping value (``algorithm: {name: fedavg}`` sets ``algorithm.name``)."""
    if isinstance(value, dict) and value:
        return [leaf for k, v in value.items() for leaf in leaves(f"{key}.{k}", v)]
    return [key]


def expand(
    spec: SweepSpec, path: str | Path, overrides: dict[str, Any] | None = None
) -> list[SweepRun]:
    """Every run of the sweep, validated, in order variants × grid × zip × seeds.

    ``overrides`` (``{key.path: value}``) apply to every run after the sweep's own (over
    ``set``'s and the variants' values); one on a value that names the runs (a grid, zip
    or seeds key) is an error.
    """
    path = Path(path)
    for key in overrides or {}:  # (over set's and the variants' values: allowed)
        hit = next((k for k in spec.axis_leaves() if k == key or k.startswith(key + ".")), None)
        if hit is not None:
            raise ScenarioError(
                str(path),
                [(f"--set {key}", f"the sweep's runs are named by {hit}; it would override it")],
            )
    base_path = path.parent / spec.base
    base = read_yaml(base_path)
    if not isinstance(base, dict):
        raise ScenarioError(str(base_path), [("", "a scenario must be a mapping of sections")])
    base_seed = base.get("seed", 0)
    count = (
        max(len(spec.variants), 1)
        * math.prod(len(v) for v in spec.grid.values())
        * (len(next(iter(spec.zip.values()))) if spec.zip else 1)
        * len(spec.seeds or [base_seed])
    )  # (counted before anything is expanded: a grid of 10^10 runs is refused at once)
    if count > MAX_SWEEP_RUNS:
        sizes = [f"{len(spec.variants)} variants"] if spec.variants else []
        sizes += [f"{len(v)} {k}" for k, v in spec.grid.items()]
        sizes += [f"{len(next(iter(spec.zip.values())))} zipped"] if spec.zip else []
        sizes += [f"{len(spec.seeds)} seeds"] if spec.seeds else []
        raise ScenarioError(
            str(path),
            [
                (
                    "grid",
                    f"{count:,} runs ({' × '.join(sizes)}); a sweep has at most {MAX_SWEEP_RUNS:,}",
                )
            ],
        )
    variants = list(spec.variants.items()) or [("", {})]
    grid_keys = list(spec.grid)
    grid = list(itertools.product(*spec.grid.values())) if grid_keys else [()]
    zip_keys = list(spec.zip)
    zipped = list(zip(*spec.zip.values(), strict=True)) if zip_keys else [()]
    seeds = spec.seeds or [base_seed]
    runs: list[SweepRun] = []
    names: set[str] = set()
    for (vname, vset), gvals, zvals, seed in itertools.product(variants, grid, zipped, seeds):
        params = {
            **dict(zip(grid_keys, gvals, strict=True)),
            **dict(zip(zip_keys, zvals, strict=True)),
        }
        parts = [vname] if vname else []
        parts += [_name_part(k, v) for k, v in params.items()]
        if spec.seeds:
            parts.append(f"seed{seed}")
        name = "-".join(parts) or "run"
        if name in names:
            raise ScenarioError(str(path), [("", f"two runs would be named {name!r}")])
        names.add(name)
        if spec.seeds is None:  # (the run's seed: a grid's, a variant's, set's or the base's)
            seed = params.get("seed", vset.get("seed", spec.set.get("seed", base_seed)))
        values = {**spec.set, **vset, **params, "seed": seed, **(overrides or {})}
        data = apply_values(base, values, str(path))
        data["name"] = f"{spec.name}-{name}".replace("=", "_")
        source = f"{path} (run {name})"
        scenario = parse_scenario(data, source, base_dir=base_path.parent)
        runs.append(
            SweepRun(name, {"variant": vname, **params, "seed": scenario.seed}, scenario, source)
        )
    return runs
