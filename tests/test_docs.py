"""The documentation site builds without a warning (``mkdocs build --strict``), and every
tutorial runs as written: its files are written, its shell and Python blocks executed
in order, in a fresh folder where ``scenarios/`` and ``examples/`` are the repository's.

A tutorial's fenced blocks: ``yaml``/``python``/``toml`` blocks whose first line is
``# file: PATH`` are written to PATH; ``bash`` blocks run with ``bash -euo pipefail``
(``netfl`` and ``python`` are this environment's); other ``python`` blocks run as
scripts; ``text`` blocks are output, not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
BLOCK = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)
FILE = re.compile(r"^# file: (\S+)\n")


def blocks(path: Path) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced block of a Markdown file, in order."""
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(path.read_text())]


def test_every_tutorial_is_in_the_nav_and_has_runnable_blocks():
    nav = (ROOT / "mkdocs.yml").read_text()
    assert len(TUTORIALS) == 6
    for t in TUTORIALS:
        assert f"tutorials/{t.name}" in nav, t.name
        assert any(lang == "bash" for lang, _ in blocks(t)), t.name


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs_as_written(path, tmp_path):
    for name in ("scenarios", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "MPLBACKEND": "Agg",
    }
    for k, (lang, body) in enumerate(blocks(path)):
        where = f"{path.name}, block {k + 1} ({lang})"
        named = FILE.match(body)
        if named:
            target = tmp_path / named.group(1)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body[named.end() :])
            continue
        if lang == "bash":
            cmd = ["bash", "-euo", "pipefail", "-c", body]
        elif lang == "python":
            cmd = [sys.executable, "-c", body]
        else:
            continue
        done = subprocess.run(
            cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, (
            f"{where} failed:\n{body}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )


def test_the_docs_site_builds_strictly(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert not (tmp_path / "site" / "hooks.py").exists()
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "Build the world, run the algorithm" in api  # (run's docstring, rendered)
    assert (tmp_path / "site" / "scenario-reference" / "index.html").is_file()
    page = (tmp_path / "site" / "scenario-reference" / "index.html").read_text()
    assert "cell.link.downlink_allocation" in page  # (generated from the schema)
    assert "Reading this file as Markdown" not in page  # (the note is for the .md file)


def test_netfl_schema_markdown_prints_the_reference(capsys):
    """The scenario reference a reader of the Markdown files is pointed to."""
    from netfl.cli.app import main
    from netfl.scenario.reference import schema_markdown

    assert main(["schema", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == schema_markdown().strip() and "cell.link.downlink_allocation" in out
