"""Device layouts in scenario files: where the devices (or one group of them) stand.

``devices.layout`` places the devices that no group places; ``devices.groups[i].layout``
places that group's devices. ``kind`` picks the layout, each with its own keys:

==============  =============================================================  ==========
kind            keys                                                           random
==============  =============================================================  ==========
uniform_disc    (none: the cell's ``radius_m``; today's default drop)          yes
annulus         ``inner_m``, ``outer_m`` (default: the cell radius)            yes
line            ``start_m: [x, y]``, ``end_m: [x, y]`` (evenly spaced)         no
ring            ``radius_m``, ``phase_deg`` (evenly spaced in angle)           no
grid            ``spacing_m``, ``columns`` (centred on the BS)                 no
positions       ``positions_m: [[x, y], ...]`` or ``[[x, y, z], ...]``, one     no
                per device
csv             ``file`` (columns ``x_m, y_m`` or ``x, y``, optionally ``z_m`` no
                or ``z``; relative paths are relative to the scenario file)
==============  =============================================================  ==========

Every kind also takes ``height_m``: the antenna height of its devices [m]. A third
coordinate ``z`` of an explicit position is that device's height (it wins over
``height_m``). Without either, the path-loss law's UE height (``height_rx_m``) applies.

A ``csv`` layout is read when the scenario is validated and becomes a ``positions``
layout, so a run directory's ``scenario.yaml`` records every position. The base
station stands at the origin; a position outside the cell (farther than
``cell.radius_m``) is an error.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt, model_validator

from netfl.radio.geometry import (
    drop_uniform_annulus,
    drop_uniform_disc,
    grid_positions,
    line_positions,
    ring_positions,
)
from netfl.scenario.strict import _Strict, beside

__all__ = ["LayoutSection", "KIND_KEYS", "read_positions_csv"]

#: the keys each kind takes (besides ``kind``)
KIND_KEYS: dict[str, set[str]] = {
    "uniform_disc": set(),
    "annulus": {"inner_m", "outer_m"},
    "line": {"start_m", "end_m"},
    "ring": {"radius_m", "phase_deg"},
    "grid": {"spacing_m", "columns"},
    "positions": {"positions_m"},
    "csv": {"file"},
}
_REQUIRED = {
    "line": {"start_m", "end_m"},
    "ring": {"radius_m"},
    "grid": {"spacing_m"},
    "positions": {"positions_m"},
    "csv": {"file"},
}
MAX_LAYOUT_POSITIONS = 100_000
#: a coordinate or distance of a layout beyond this is no cell's [m]
MAX_COORDINATE_M = 1e6
#: the highest antenna a device may have [m] (aerial UEs of TR 36.777 fly at up to 300 m)
MAX_HEIGHT_M = 1000.0
#: a coordinate [m]
Coordinate = Annotated[float, Field(ge=-MAX_COORDINATE_M, le=MAX_COORDINATE_M)]


#: a layout CSV larger than this is refused before it is parsed (100,000 rows of three
#: long numbers fit in 8 MiB)
MAX_CSV_BYTES = 8 << 20


def read_positions_csv(path: Path) -> list[tuple[float, ...]]:
    """``(x, y)`` — or ``(x, y, z)`` with a ``z_m`` (or ``z``) column — per row of a CSV
    with columns ``x_m, y_m`` (or ``x, y``) [m]; ``ValueError`` says what is wrong
    (not a regular file, too large, missing columns, a value that is no number, a height
    that is not positive). Read bounded (:data:`MAX_CSV_BYTES`, at most
    :data:`MAX_LAYOUT_POSITIONS` rows, counted as they are parsed); a UTF-8 byte-order
    mark, as spreadsheets export it, is allowed."""
    from netfl.scenario.reading import read_text_bounded

    try:
        text = read_text_bounded(path, MAX_CSV_BYTES, "layout CSV")
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = [h.strip() for h in reader.fieldnames or []]
        rows = []
        for row in reader:
            rows.append(row)
            if len(rows) > MAX_LAYOUT_POSITIONS:
                raise ValueError(
                    f"{path} has over {MAX_LAYOUT_POSITIONS:,} rows (the most devices)"
                )
    except csv.Error as err:
        raise ValueError(f"{path} is not a CSV file ({err})") from None
    cols = next(((x, y) for x, y in (("x_m", "y_m"), ("x", "y")) if {x, y} <= set(header)), None)
    if cols is None:
        raise ValueError(f"{path} has no x_m, y_m (or x, y) columns (columns: {header[:10]})")
    zcol = next((z for z in ("z_m", "z") if z in header), None)
    names = [*cols, *([zcol] if zcol else [])]
    out = []
    for i, row in enumerate(rows, start=2):
        row = {k.strip(): v for k, v in row.items() if k is not None}
        try:
            values = tuple(float(row[c]) for c in names)
        except (TypeError, ValueError):
            raise ValueError(f"{path} line {i}: {', '.join(names)} must be numbers") from None
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"{path} line {i}: positions must be finite")
        if any(abs(v) > MAX_COORDINATE_M for v in values):
            raise ValueError(f"{path} line {i}: a coordinate beyond ±{MAX_COORDINATE_M:g} m")
        if zcol and not 0 < values[2] <= MAX_HEIGHT_M:
            raise ValueError(
                f"{path} line {i}: {zcol} {values[2]:g} is no antenna height (0 < z ≤ "
                f"{MAX_HEIGHT_M:g} m)"
            )
        out.append(values)
    return out


class LayoutSection(_Strict):
    """Where a set of devices stands (see the module docstring for the kinds)."""

    kind: Literal["uniform_disc", "annulus", "line", "ring", "grid", "positions", "csv"] = (
        "uniform_disc"
    )
    inner_m: NonNegativeFloat | None = Field(
        None, le=MAX_COORDINATE_M, description="annulus: inner radius [m]"
    )
    outer_m: PositiveFloat | None = Field(
        None, le=MAX_COORDINATE_M, description="annulus: outer radius [m]"
    )
    start_m: tuple[Coordinate, Coordinate] | None = Field(
        None, description="line: first position [m]"
    )
    end_m: tuple[Coordinate, Coordinate] | None = Field(None, description="line: last position [m]")
    radius_m: PositiveFloat | None = Field(
        None, le=MAX_COORDINATE_M, description="ring: radius [m]"
    )
    phase_deg: float | None = Field(
        None, ge=-360.0, le=360.0, description="ring: angle of the first device [deg]"
    )
    spacing_m: PositiveFloat | None = Field(
        None, le=MAX_COORDINATE_M, description="grid: pitch [m]"
    )
    columns: PositiveInt | None = Field(
        None, le=MAX_LAYOUT_POSITIONS, description="grid: devices per row"
    )
    positions_m: list[list[Coordinate]] | None = Field(
        None, max_length=MAX_LAYOUT_POSITIONS, description="positions: [[x, y], ...] [m]"
    )
    file: str | None = Field(None, description="csv: a file with x_m, y_m (and z_m) columns")
    height_m: PositiveFloat | None = Field(
        None,
        le=MAX_HEIGHT_M,
        description="antenna height of these devices [m] (default: the law's height_rx_m)",
    )

    @model_validator(mode="after")
    def _keys_of_kind(self) -> LayoutSection:
        given = self.model_fields_set - {"kind", "height_m"}
        stray = sorted(given - KIND_KEYS[self.kind])
        if stray:
            raise ValueError(
                f"{', '.join(stray)} does not apply to kind {self.kind!r} "
                f"(its keys: {', '.join(sorted(KIND_KEYS[self.kind])) or 'none'})"
            )
        set_ = {k for k in given if getattr(self, k) is not None}  # (null is not given)
        missing = sorted(_REQUIRED.get(self.kind, set()) - set_)
        if missing:
            raise ValueError(f"kind {self.kind!r} needs {', '.join(missing)}")
        if self.kind == "annulus" and self.outer_m is not None:
            if (self.inner_m or 0.0) >= self.outer_m:
                raise ValueError(f"inner_m ({self.inner_m}) must be below outer_m ({self.outer_m})")
        if self.positions_m is not None:
            for i, p in enumerate(self.positions_m):
                if len(p) not in (2, 3):
                    raise ValueError(
                        f"positions_m[{i}]: expected [x, y] or [x, y, z] [m], got {p[:4]}"
                    )
                if len(p) == 3 and not 0 < p[2] <= MAX_HEIGHT_M:
                    raise ValueError(
                        f"positions_m[{i}]: height z = {p[2]} m is no antenna height "
                        f"(0 < z ≤ {MAX_HEIGHT_M:g} m)"
                    )
        return self

    @property
    def random(self) -> bool:
        """Whether the layout is drawn from the ``placement`` stream."""
        return self.kind in ("uniform_disc", "annulus")

    def fixed_count(self) -> int | None:
        """How many devices an explicit layout places (None: any number)."""
        return len(self.positions_m) if self.positions_m is not None else None

    def resolve_file(self, base_dir: Path | None) -> LayoutSection:
        """A ``csv`` layout read into a ``positions`` layout (a relative ``file`` is taken
        relative to ``base_dir``, the scenario file's folder); any other kind as it is."""
        if self.kind != "csv":
            return self
        assert self.file is not None
        points = read_positions_csv(Path(beside(self.file, base_dir)))
        return LayoutSection(
            kind="positions", positions_m=[list(p) for p in points], height_m=self.height_m
        )

    def positions(self, count: int, rng: np.random.Generator, cell_radius_m: float) -> np.ndarray:
        """``(count, 2)`` positions [m]; random kinds draw from ``rng``."""
        if self.kind == "uniform_disc":
            return drop_uniform_disc(rng, count, cell_radius_m)
        if self.kind == "annulus":
            return drop_uniform_annulus(
                rng, count, self.inner_m or 0.0, self.outer_m or cell_radius_m
            )
        if self.kind == "line":
            return line_positions(count, self.start_m, self.end_m)  # type: ignore[arg-type]
        if self.kind == "ring":
            return ring_positions(count, self.radius_m, self.phase_deg or 0.0)  # type: ignore[arg-type]
        if self.kind == "grid":
            return grid_positions(count, self.spacing_m, self.columns)  # type: ignore[arg-type]
        if self.kind == "positions":
            return np.array([p[:2] for p in self.positions_m or []], dtype=float).reshape(-1, 2)
        raise ValueError("a csv layout must be resolved (resolve_file) before use")

    def heights(self, count: int) -> np.ndarray:
        """``(count,)`` antenna heights [m]: an explicit position's ``z``, else
        ``height_m``, else NaN (the path-loss law's UE height applies)."""
        out = np.full(count, np.nan if self.height_m is None else float(self.height_m))
        if self.kind == "positions":
            for i, p in enumerate(self.positions_m or []):
                if len(p) == 3:
                    out[i] = float(p[2])
        return out

    def max_extent_m(self, count: int, cell_radius_m: float) -> float:
        """The largest distance from the BS a device of this layout can have [m] (a
        ``csv`` layout is read first: :meth:`resolve_file`)."""
        if self.kind == "uniform_disc":
            return cell_radius_m
        if self.kind == "annulus":
            return self.outer_m or cell_radius_m
        pts = self.positions(count, np.random.default_rng(0), cell_radius_m)
        return float(np.hypot(pts[:, 0], pts[:, 1]).max()) if len(pts) else 0.0
