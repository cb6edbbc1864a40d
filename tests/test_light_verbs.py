"""Light verbs start without torch: ``list``, ``schema`` and ``validate`` never import it,
nor does a timing run whose model facts (size, FLOPs) are in netfl's disk cache — and
the cached facts are the counted ones. (Start-up times are measured in
``benchmarks/startup.py``, not asserted here.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from netfl.compute.flops import ModelFlops
from netfl.sim import model_facts as mf
from tests.conftest import tiny_scenario

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import sys
from netfl.cli import main
code = main(sys.argv[1:])
print("TORCH" if "torch" in sys.modules else "NO-TORCH", code)
"""


def _probe(args: list[str], cache: Path) -> tuple[str, str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        env={**os.environ, "PYTHONPATH": str(ROOT), "NETFL_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1], out.stdout


@pytest.fixture
def scenario_file(tmp_path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(outputs={"figures": False, "progress": False})))
    return path


@pytest.mark.parametrize("args", [["list"], ["list", "models"], ["schema"]])
def test_list_and_schema_import_no_torch(args, tmp_path):
    last, _ = _probe(args, tmp_path)
    assert last == "NO-TORCH 0"


def test_validate_builds_the_data_without_torch(scenario_file, tmp_path):
    last, out = _probe(["validate", str(scenario_file)], tmp_path / "cache")
    assert last == "NO-TORCH 0" and "valid (tiny" in out


def test_a_timing_run_counts_flops_once_then_imports_no_torch(scenario_file, tmp_path):
    cache = tmp_path / "cache"
    first, _ = _probe(["run", str(scenario_file), "--out", str(tmp_path / "a")], cache)
    assert first == "TORCH 0"  # counted: the model was built
    facts = json.loads((cache / mf.FACTS_FILE).read_text())
    assert len(facts) == 1 and next(iter(facts)).startswith("logreg|1x8x8|10|torch ")
    second, _ = _probe(["run", str(scenario_file), "--out", str(tmp_path / "b")], cache)
    assert second == "NO-TORCH 0"
    a = (tmp_path / "a" / "rounds.csv").read_bytes()
    assert a == (tmp_path / "b" / "rounds.csv").read_bytes()


def test_cached_facts_equal_counted_facts_and_a_damaged_cache_is_recounted(tmp_path, monkeypatch):
    monkeypatch.setenv("NETFL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(mf, "_MEMORY", {})
    counted = mf._count("cnn", (1, 28, 28), 10)
    assert mf.model_facts("cnn", (1, 28, 28), 10) == counted  # counted and written
    monkeypatch.setattr(mf, "_MEMORY", {})
    monkeypatch.setattr(mf, "_count", lambda *a: pytest.fail("the cache was not used"))
    assert mf.model_facts("cnn", (1, 28, 28), 10) == counted  # read back, equal
    num_params, flops = counted
    assert num_params == 1663370 and flops.train_per_sample == 72384512.0
    (tmp_path / mf.FACTS_FILE).write_text("{not json")
    monkeypatch.setattr(mf, "_MEMORY", {})
    monkeypatch.setattr(mf, "_count", lambda *a: (1, ModelFlops(2.0, 3.0)))
    assert mf.model_facts("cnn", (1, 28, 28), 10) == (1, ModelFlops(2.0, 3.0))
    assert len(json.loads((tmp_path / mf.FACTS_FILE).read_text())) == 1  # rewritten whole


def test_changed_model_code_is_counted_again(tmp_path, monkeypatch):
    monkeypatch.setenv("NETFL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(mf, "_MEMORY", {})
    monkeypatch.setattr(mf, "_count", lambda *a: (1, ModelFlops(2.0, 3.0)))
    mf.model_facts("logreg", (1, 8, 8), 10)
    monkeypatch.setattr(mf, "_MEMORY", {})
    monkeypatch.setattr(mf, "_code_hash", lambda: "another")
    monkeypatch.setattr(mf, "_count", lambda *a: (5, ModelFlops(6.0, 7.0)))
    assert mf.model_facts("logreg", (1, 8, 8), 10) == (5, ModelFlops(6.0, 7.0))
    assert len(json.loads((tmp_path / mf.FACTS_FILE).read_text())) == 2
