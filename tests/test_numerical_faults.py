"""NaN/Inf device updates are left out of aggregation and counted, or abort the run."""

from __future__ import annotations

import pytest
import torch

from netfl.errors import NumericalFault
from netfl.learning.executor import SerialExecutor
from netfl.learning.params import all_finite
from netfl.loading.scenarios import parse_scenario
from netfl.sim.runner import run
from tests.conftest import tiny_scenario

ALGOS = {
    "fedavg": {"name": "fedavg"},
    "dfl": {"name": "dfl"},
    "fd": {"name": "fd"},
    "fedzkt": {
        "name": "fedzkt",
        "server_iterations": 2,
        "distill_batch_size": 8,
        "generator_width": 4,
    },
    "fedmd": {
        "name": "fedmd",
        "public_dataset": "mnist5k",
        "public_samples": 60,
        "alignment_size": 20,
    },
}


def _poison(value):
    """A copy of a job's result with NaN in its first floating-point tensor."""
    if isinstance(value, torch.Tensor):
        return torch.full_like(value, float("nan"))
    state = dict(value.state)
    key = next(k for k, v in state.items() if v.is_floating_point())
    state[key] = state[key].clone().fill_(float("nan"))
    value.state = state
    return value


def _scenario(algo: str, model: str = "logreg", **training):
    return parse_scenario(
        tiny_scenario(
            model={"name": model},
            devices={
                "count": 4,
                **({"models": ["logreg", "fcn"]} if algo in ("fedzkt", "fedmd") else {}),
            },
            learning={"mode": "learn"},
            training={"rounds": 2, "batch_size": 16, **training},
            algorithm=ALGOS[algo],
        )
    )


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_a_nan_update_is_dropped_and_counted(algo, monkeypatch):
    import netfl.sim.runner

    state = {"round": -1}
    original_submit = SerialExecutor.submit

    def submit(self, task):
        fut = original_submit(self, task)
        res = fut.result()
        world_round = netfl_round()
        if world_round != state["round"] and (
            isinstance(res, torch.Tensor) or hasattr(res, "state")
        ):
            state["round"] = world_round
            fut._result = _poison(res)
        return fut

    worlds = []
    original_world = netfl.sim.runner.World

    def world(*a, **k):
        w = original_world(*a, **k)
        worlds.append(w)
        return w

    def netfl_round():
        return worlds[-1].recorder.round

    monkeypatch.setattr(SerialExecutor, "submit", submit)
    monkeypatch.setattr(netfl.sim.runner, "World", world)
    result = run(_scenario(algo))
    assert list(result.rounds["nonfinite_updates"]) == [1, 1]
    assert result.rounds["accuracy"].between(0, 1).all()
    assert result.rounds["loss"].notna().all()


def test_diverging_training_leaves_the_global_model_untouched():
    result = run(_scenario("fedavg", "fcn", lr=1e3))
    assert (result.rounds["nonfinite_updates"] == 4).all()
    assert result.rounds["accuracy"].between(0, 1).all()
    fresh = run(_scenario("fedavg", "fcn", lr=1e3, rounds=1))
    # nothing was aggregated: the accuracy is the initial model's, round after round
    assert result.rounds["accuracy"].nunique() == 1
    assert fresh.rounds["accuracy"].iloc[0] == result.rounds["accuracy"].iloc[0]


def test_abort_policy_stops_with_one_line():
    with pytest.raises(
        NumericalFault, match=r"training.on_nonfinite: round 0: ue\d's update holds NaN"
    ):
        run(_scenario("fedavg", "fcn", lr=1e3, on_nonfinite="abort"))


def test_all_finite_looks_into_states_results_and_tensors():
    assert all_finite({"w": torch.ones(2), "n": torch.tensor(3)})
    assert not all_finite({"w": torch.tensor([1.0, float("inf")])})
    assert not all_finite([torch.zeros(1), torch.tensor([float("nan")])])

    class R:
        def __init__(self, s):
            self.state, self.mean_loss = s, float("nan")

    assert all_finite(R({"w": torch.ones(1)}))  # a NaN loss alone poisons nothing
    assert not all_finite(R({"w": torch.full((1,), float("nan"))}))


def test_all_finite_finds_one_bad_value_anywhere_in_large_tensors():
    """A single NaN, +inf or -inf at a random place of a large tensor (multi-threaded
    reductions), in each floating dtype, is found; clean tensors and empty ones pass."""
    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        x = torch.randn(300_000, generator=g).to(dtype)
        assert all_finite(x) and all_finite(torch.empty(0, dtype=dtype))
        for bad in (float("nan"), float("inf"), float("-inf")):
            for _ in range(5):
                y = x.clone()
                y[int(torch.randint(0, y.numel(), (1,), generator=g))] = bad
                assert not all_finite(y), (dtype, bad)
                assert not all_finite(y.view(600, 500).t())  # a strided view too


def _clock(result) -> tuple[list, list, float]:
    """Every compute step and transfer as (node, kind, amount, start, end), and the end."""
    c = result.computes[["node", "kind", "flops", "start_s", "end_s"]]
    t = result.transfers[["src", "dst", "kind", "size_bits", "start_s", "end_s"]]
    return (
        [tuple(row) for row in c.itertuples(index=False)],
        [tuple(row) for row in t.itertuples(index=False)],
        float(result.rounds["sim_time_s"].iloc[-1]),
    )


@pytest.mark.parametrize("algo", [*sorted(ALGOS), "ecofed"])
def test_dropped_updates_leave_the_clock_as_timing_mode_runs_it(algo):
    """Diverging training (every update NaN, dropped) runs on the clock of the same
    scenario in timing mode: what an algorithm charges never depends on learned values
    (a resumed run replays its finished rounds without learning, on that clock)."""
    if algo == "ecofed":
        from tests.algorithms.test_split_algorithms import TINY_PRETRAIN
        from tests.algorithms.test_split_algorithms import _scenario as split_scenario

        def scenario(mode):
            return split_scenario(
                {"name": "ecofed", "rho": 1, "pretrain": TINY_PRETRAIN},
                mode,
                training={"rounds": 2, "batch_size": 16, "lr": 1e3},
            )
    else:

        def scenario(mode):
            s = tiny_scenario(
                model={"name": "fcn"},
                devices={"count": 4, "models": ["logreg", "fcn"]}
                if algo in ("fedzkt", "fedmd")
                else {"count": 4},
                learning={"mode": mode},
                training={"rounds": 2, "batch_size": 16, "lr": 1e3},
                algorithm=ALGOS[algo],
            )
            return parse_scenario(s)

    learnt = run(scenario("learn"))
    assert (learnt.rounds["nonfinite_updates"] > 0).all()
    assert _clock(learnt) == _clock(run(scenario("timing")))


def test_fedmd_with_every_score_dropped_charges_the_digest_as_timing_mode(monkeypatch):
    """Every device's class scores NaN (no consensus to digest): the digest steps are
    still charged, on timing mode's clock."""
    original_submit = SerialExecutor.submit

    def submit(self, task):
        fut = original_submit(self, task)
        if isinstance(fut.result(), torch.Tensor):  # (a device's class scores)
            fut._result = _poison(fut.result())
        return fut

    def scenario(mode):
        return parse_scenario(
            tiny_scenario(
                model={"name": "fcn"},
                devices={"count": 4, "models": ["logreg", "fcn"]},
                learning={"mode": mode},
                training={"rounds": 2, "batch_size": 16},
                algorithm=ALGOS["fedmd"],
            )
        )

    monkeypatch.setattr(SerialExecutor, "submit", submit)
    learnt = run(scenario("learn"))
    assert (learnt.rounds["nonfinite_updates"] == 4).all()
    assert _clock(learnt) == _clock(run(scenario("timing")))
