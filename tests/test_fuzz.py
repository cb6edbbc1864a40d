"""Property-based fuzz over every section added since the first probe (issue 32):
layouts, the OFDMA/LTE/NR link layer, networks and mobility, the algorithms' options
and sweeps. Any value at any key path of a valid scenario of each kind either
validates — and then runs (timing mode, one round) in a few seconds or stops with a
one-line user error — or is refused in one bounded line per problem: never a
traceback, never a hang."""

from __future__ import annotations

import math
import signal
import time
from contextlib import contextmanager

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from netfl.errors import ScenarioError, UserError
from netfl.loading.scenarios import parse_scenario, resolved
from tests.conftest import tiny_scenario

MAX_LINE = 700
#: a fuzzed scenario that validates runs one timing round within this [s]
RUN_LIMIT_S = 5.0

OFDMA_NR = {"radius_m": 200, "link": {"mode": "ofdma", "channel_profile": "nr_fr1_uma"}}
BASES = {
    "cell_fixed_rate": tiny_scenario(
        devices={"count": 3, "layout": {"kind": "ring", "radius_m": 100, "height_m": 2.0}}
    ),
    "nr_mobile": tiny_scenario(
        cell={**OFDMA_NR, "cues": {"density_per_km2": 50, "session_rate_per_s": 0.2}},
        devices={
            "count": 3,
            "layout": {"kind": "annulus", "inner_m": 20, "outer_m": 150, "height_m": 1.5},
            "mobility": {"model": "gauss_markov", "speed_kmh": 30},
        },
    ),
    "lte_transfer_test": tiny_scenario(
        cell={"radius_m": 200, "link": {"mode": "ofdma", "channel_profile": "lte_20mhz"}},
        devices={"count": 3, "layout": {"kind": "line", "start_m": [10, 0], "end_m": [150, 0]}},
        algorithm={"name": "transfer_test", "upload_bytes": 1e5},
    ),
    "network_hierfavg": tiny_scenario(
        cell={"link": OFDMA_NR["link"]},  # (a hexagonal network: no cell radius)
        network={
            "sites": 7,
            "sectors": 1,
            "antenna": "omni",
            "isd_m": 200,
            "server_site": "cloud",
            "indoor_fraction": 0.3,
        },
        devices={"count": 4, "mobility": {"model": "random_waypoint"}},
        algorithm={"name": "hierfavg", "kappa2": 2},
    ),
    "feddif": tiny_scenario(
        cell={"radius_m": 150, "link": {"mode": "ofdma", "channel_profile": "feddif"}},
        devices={"count": 4},
        algorithm={"name": "feddif", "max_diffusion_rounds": 3},
    ),
    "fedzkt": tiny_scenario(
        devices={"count": 3, "models": ["logreg", "fcn"]},
        algorithm={
            "name": "fedzkt",
            "server_iterations": 2,
            "distill_batch_size": 8,
            "generator_width": 4,
        },
    ),
}
#: every base's resolved data (every default filled in: every key is a fuzz target)
RESOLVED = {name: resolved(parse_scenario(data, name)) for name, data in BASES.items()}


def _paths(node, prefix=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    yield prefix


PATHS = {name: [p for p in _paths(data) if p] for name, data in RESOLVED.items()}
#: keys whose largest valid values are legitimately long runs (the work they ask for is
#: bounded, not small): not fuzzed in the run test
WORKLOAD = {"count", "rounds", "local_epochs", "num_samples", "kappa1", "kappa2", "seed"}

JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 1e-12, 1e-3, 0.5, 2, 1e3, 1e6, 1e9, 1e15, 2**63, -(2**63)]),
    st.text(max_size=30),
    st.lists(st.one_of(st.floats(), st.booleans(), st.integers()), max_size=4),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


def _edited(base: str, edits) -> dict:
    data = yaml.safe_load(yaml.safe_dump(RESOLVED[base]))
    for path, value in edits:
        node = data
        for key in path[:-1]:
            if not isinstance(node, dict):
                break
            node = node.setdefault(key, {})
        else:
            if isinstance(node, dict):
                node[path[-1]] = value
    return data


def _finite(v) -> None:
    if isinstance(v, float):
        assert math.isfinite(v)
    elif isinstance(v, dict):
        for x in v.values():
            _finite(x)
    elif isinstance(v, list):
        for x in v:
            _finite(x)


def _one_line_each(err: ScenarioError) -> None:
    lines = err.lines()
    assert lines and all(len(line) <= MAX_LINE and "\n" not in line for line in lines)


@st.composite
def _fuzzed(draw, run: bool = False):
    base = draw(st.sampled_from(sorted(BASES)))
    paths = [
        p
        for p in PATHS[base]
        if not (run and (p[-1] in WORKLOAD or p[0] in ("training", "learning", "outputs")))
    ]
    chosen = draw(st.lists(st.sampled_from(paths), min_size=1, max_size=3))
    edits = []
    for path in chosen:
        # (1 in 4 junk, 1 in 8 for runs; st.one_of would flatten JUNK's branches)
        junk = draw(st.integers(0, 7 if run else 3)) == 0
        edits.append((path, draw(JUNK if junk else _near(_value(base, path)))))
    return base, edits


def _value(base: str, path: tuple):
    node = RESOLVED[base]
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _near(value):
    """Values near a valid one (3 edits in 4): the scenario often stays valid, so the
    accepted paths and the runs are fuzzed too, not only the refusals."""
    if isinstance(value, bool) or value is None:
        return st.sampled_from([True, False, None])
    if isinstance(value, (int, float)):
        factors = [0, 0.01, 0.5, 0.9, 1.1, 2, 10, 100, -1]
        kind = int if isinstance(value, int) else float
        return st.sampled_from([kind(value * f) for f in factors] + [kind(value) + 1])
    if isinstance(value, list):
        return st.sampled_from([value[:1], value + value[:1], list(reversed(value)), []])
    return st.just(value)


@pytest.mark.slow  # (about 30 s: `make test-slow`, which CI runs too)
@settings(
    max_examples=1000,
    deadline=5000,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(_fuzzed())
def test_fuzzed_scenarios_of_every_section_validate_or_fail_in_one_line(case):
    base, edits = case
    try:
        scenario = parse_scenario(_edited(base, edits), "fuzz.yaml")
    except ScenarioError as err:
        _one_line_each(err)
        event("refused")
        return
    event("accepted")
    _finite(resolved(scenario))  # accepted: every number finite, no boolean for a number


@contextmanager
def _time_limit(seconds: float):
    def fail(signum, frame):
        raise TimeoutError(f"a fuzzed scenario ran over {seconds:g} s")

    old = signal.signal(signal.SIGALRM, fail)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(_fuzzed(run=True))
def test_fuzzed_scenarios_that_validate_run_in_seconds_or_stop_in_one_line(case):
    from netfl.sim.runner import run

    base, edits = case
    data = _edited(base, edits)
    data["training"] = {**data.get("training", {}), "rounds": 1}
    data["learning"] = {**data.get("learning", {}), "mode": "timing"}
    try:
        scenario = parse_scenario(data, "fuzz.yaml")
    except ScenarioError as err:
        _one_line_each(err)
        event("refused")
        return
    event("ran")
    t0 = time.perf_counter()
    with _time_limit(RUN_LIMIT_S):
        try:
            run(scenario)
        except UserError as err:
            assert "\n" not in str(err).strip() and len(str(err)) <= MAX_LINE
    assert time.perf_counter() - t0 < RUN_LIMIT_S


SWEEP_JUNK = st.one_of(JUNK, st.lists(JUNK, min_size=0, max_size=4))


@settings(max_examples=150, deadline=5000, derandomize=True)
@given(
    st.dictionaries(
        st.sampled_from(["set", "variants", "grid", "zip", "seeds", "target_accuracy", "name"]),
        SWEEP_JUNK,
        max_size=3,
    ),
    st.lists(
        st.sampled_from(["training.lr", "devices.count", "cell.radius_m", "seed"]), max_size=2
    ),
)
def test_fuzzed_sweeps_expand_or_fail_in_one_line(tmp_path_factory, fields, grid_keys):
    from netfl.sweep.spec import expand, load_sweep

    folder = tmp_path_factory.mktemp("sweep")
    (folder / "base.yaml").write_text(yaml.safe_dump(tiny_scenario()))
    spec = {"name": "fz", "base": "base.yaml", **fields}
    if grid_keys and "grid" not in fields:
        spec["grid"] = {k: [1, 2] for k in grid_keys}
    path = folder / "s.sweep.yaml"
    path.write_text(yaml.safe_dump(spec))
    try:
        runs = expand(*load_sweep(path))
    except ScenarioError as err:
        _one_line_each(err)
        event("refused")
        return
    event("expanded")
    assert len(runs) >= 1 and len({r.name for r in runs}) == len(runs)


@pytest.mark.parametrize("base", sorted(BASES))
def test_every_fuzz_base_is_valid_and_runs(base):
    """The fuzz starts from valid scenarios of each kind (so accepted edits are tested
    through a run, not only refused ones)."""
    from netfl.sim.runner import run

    assert len(run(parse_scenario(BASES[base], base)).rounds) == 2
