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
    assert len(TUTORIALS) == 8
    for t in TUTORIALS:
        assert f"tutorials/{t.name}" in nav, t.name
        assert any(lang == "bash" for lang, _ in blocks(t)), t.name


#: the tutorial the default suite runs as a smoke check; the others (about 3½ minutes
#: together) are ``slow``: ``make test-slow``, which CI runs too
SMOKE_TUTORIAL = "first-cell"


@pytest.mark.parametrize(
    "path",
    [p if p.stem == SMOKE_TUTORIAL else pytest.param(p, marks=pytest.mark.slow) for p in TUTORIALS],
    ids=lambda p: p.stem,
)
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
    assert not (tmp_path / "site" / "generate.py").exists()
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "Build the world, run the algorithm" in api  # (run's docstring, rendered)
    assert (tmp_path / "site" / "scenario-reference" / "index.html").is_file()
    page = (tmp_path / "site" / "scenario-reference" / "index.html").read_text()
    assert "cell.link.downlink_allocation" in page  # (generated from the schema)
    assert "network.handover.ttt_s" in page


#: the command that regenerates the generated pages (docs/generate.py)
GENERATE = [sys.executable, str(ROOT / "docs" / "generate.py")]


def test_generated_pages_are_what_the_code_says_now():
    """docs/scenario-reference.md and docs/api.md are committed Markdown, generated from
    the schema and the docstrings: a change of either needs the pages regenerated."""
    done = subprocess.run(
        [*GENERATE, "--check"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, (
        f"{done.stderr.strip()}\n(the generated pages differ from what the code gives now: "
        "run `.venv/bin/python docs/generate.py` and commit docs/scenario-reference.md and "
        "docs/api.md)"
    )


def test_every_page_reads_as_markdown():
    """No page is a generation marker only: the Markdown in the repository is the page."""
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text()
        assert not re.search(r"^:::", text, re.M), f"{page.name}: a mkdocstrings directive"
        assert "<!-- generated: " not in text, f"{page.name}: a generation marker"
        assert len(text.split()) > 100, f"{page.name}: (almost) empty"


def test_the_api_page_documents_the_public_api_and_the_extension_protocol():
    import netfl
    from netfl.algorithms.context import CellCarriers, LinkStates, RoundContext

    api = (ROOT / "docs" / "api.md").read_text()
    for name in netfl.__all__:
        if name != "__version__":
            assert f"### `netfl.{name}`" in api, name
    members = {
        "FedAvg": [
            "select_clients",
            "wait_for_clients",
            "model_bits",
            "configure_client",
            "payload",
            "client_round",
            "local_update",
            "aggregation_flops",
            "aggregator",
            "server_update",
            "guarded",
        ],
        "Algorithm": ["round_honours"],
        "RoundContext": [n for n in dir(RoundContext) if not n.startswith("_")]
        + list(RoundContext.__annotations__),
        "LinkStates": [n for n in vars(LinkStates) if not n.startswith("_")],
        "CellCarriers": [n for n in vars(CellCarriers) if not n.startswith("_")],
        "RunDirectory": ["written", "complete", "interrupted", "manifest"],
    }
    for owner, names in members.items():
        for name in names:
            assert f"#### `{owner}.{name}`" in api, f"{owner}.{name}"
    for name in (
        "register_model",
        "register_dataset",
        "register_partition",
        "register_compute_profile",
        "register_link_profile",
        "register_scheduler",
        "register_pathloss",
        "register_fading",
        "register_mobility",
        "register_availability",
    ):
        assert f"### `netfl.{name}`" in api
        assert "```python\n" + name + "(" in api, f"{name}: its signature"


def _key_paths(node: dict, defs: dict, prefix: str) -> set[str]:
    """Every key path under ``node`` of a JSON schema (a second implementation of the
    reference's walk): through ``$ref``, alternatives (``anyOf``/``oneOf``) and the
    items of lists (``path[].key``)."""
    if "$ref" in node:
        node = {**defs[node["$ref"].rsplit("/", 1)[-1]], **node}
        node.pop("$ref")
    paths: set[str] = set()
    for alternative in node.get("anyOf", []) + node.get("oneOf", []):
        paths |= _key_paths(alternative, defs, prefix)
    if isinstance(node.get("items"), dict):
        paths |= _key_paths(node["items"], defs, f"{prefix}[]")
    for key, sub in node.get("properties", {}).items():
        path = f"{prefix}.{key}" if prefix else key
        paths |= {path} | _key_paths(sub, defs, path)
    return paths


def test_netfl_schema_markdown_prints_the_reference(capsys):
    """The scenario reference (docs/scenario-reference.md), in a terminal: every key path
    of the schema, the network section's included, and every algorithm's options in a
    table of its own."""
    from netfl.algorithms import ALGORITHMS
    from netfl.cli.app import main
    from netfl.loading.reference import schema_markdown
    from netfl.loading.scenarios import scenario_schema

    assert main(["schema", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == schema_markdown().strip() and "cell.link.downlink_allocation" in out
    schema = scenario_schema()
    paths = _key_paths(schema, schema["$defs"], "")
    assert {"network.handover.ttt_s", "devices.groups[].count", "algorithm.name"} <= paths
    missing = sorted(p for p in paths if f"`{p}`" not in out)
    assert not missing, f"keys missing from the reference: {missing}"
    for name, cls in ALGORITHMS.items():
        heading = f"### `algorithm: {name}`\n"
        assert heading in out, name
        table = out.split(heading, 1)[1].split("\n#")[0]
        for option in cls.Config.model_fields:
            assert f"| `algorithm.{option}` |" in table, f"{name}: algorithm.{option}"


def test_the_networks_page_gives_every_handover_setting_with_its_default():
    """A user looking for the A3 settings finds each ``network.handover`` key on
    docs/networks.md, in a table row with its current default."""
    from netfl.scenario.network_section import HandoverSection

    page = (ROOT / "docs" / "networks.md").read_text()
    for key, field in HandoverSection.model_fields.items():
        row = next(
            (r for r in page.splitlines() if r.startswith(f"| `network.handover.{key}` |")), ""
        )
        assert row, f"network.handover.{key} has no row on docs/networks.md"
        assert f"`{field.default}`" in row, f"network.handover.{key}: default {field.default}"


def test_the_public_apis_docstring_examples_run():
    """Every ``>>>`` example in the docstrings of what ``netfl`` exports runs as written
    (doctest, in each object's defining module); the radio's model kinds have some."""
    import doctest
    import inspect

    import netfl

    modules = {inspect.getmodule(getattr(netfl, name)) for name in netfl._EXPORTS}
    modules.discard(None)
    attempted = 0
    for module in sorted(modules, key=lambda m: m.__name__):
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, module.__name__
        attempted += result.attempted
    assert attempted >= 15
