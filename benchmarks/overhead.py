"""netfl's overhead over a bare torch loop doing the same SGD steps.

Runs the quickstart scenario's learning work (FedAvg, MNIST-5k, 10 devices,
McMahan CNN) twice: through netfl (SimPy world, radio, compute, records,
evaluation every round) and as a bare loop — the same data, the same
partition, the same per-device seeds, the same SGD steps, the same weighted
averaging and evaluation — and prints the wall-time ratio netfl / bare.
Both produce the same global model, which is checked. Target: ratio ≤ 1.10.

    .venv/bin/python benchmarks/overhead.py [--rounds 5] [--repeats 2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from _result import report  # (benchmarks/ is on sys.path when run as a script)

from netfl.core.rng import Streams
from netfl.learning import evaluate, get_model_spec, load_dataset, partition
from netfl.loading.scenarios import load_scenario
from netfl.sim.runner import run

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "quickstart.yaml"


def bare_loop(scenario) -> float:
    """FedAvg written directly in torch; returns the final test accuracy."""
    s = scenario
    streams = Streams(s.seed)
    ds = load_dataset(s.data.dataset, s.data.root, s.data.test_fraction, s.seed)
    parts = partition(
        s.data.partition.scheme,
        ds.train_y.numpy(),
        s.devices.count,
        streams.generator("partition"),
        **s.data.partition.params(),
    )
    spec = get_model_spec(s.model.name)
    loss_fn = spec.loss_fn()
    with torch.random.fork_rng():
        torch.manual_seed(streams.torch_seed("model_init"))
        model = spec.build(ds.input_shape, ds.num_classes)
    global_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    t = s.training
    acc = float("nan")
    for r in range(t.rounds):
        states, weights = [], []
        for k in range(s.devices.count):  # fraction 1.0: every device
            idx = torch.from_numpy(parts[k])
            x, y = ds.train_x[idx], ds.train_y[idx]
            model.load_state_dict(global_state)
            opt = torch.optim.SGD(
                model.parameters(), lr=t.lr, momentum=t.momentum, weight_decay=t.weight_decay
            )
            gen = torch.Generator().manual_seed(streams.torch_seed("torch", r, k))
            for _ in range(t.local_epochs):
                perm = torch.randperm(len(y), generator=gen)
                for i in range(0, len(y), t.batch_size):
                    b = perm[i : i + t.batch_size]
                    opt.zero_grad(set_to_none=True)
                    loss_fn(model(x[b]), y[b]).backward()
                    opt.step()
            states.append({k2: v.detach().clone() for k2, v in model.state_dict().items()})
            weights.append(len(y))
        total = float(sum(weights))
        global_state = {
            key: sum(w / total * st[key] for w, st in zip(weights, states, strict=True))
            for key in states[0]
        }
        acc, _ = evaluate(model, global_state, ds.test_x, ds.test_y, loss_fn, 1000)
    return acc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    scenario = load_scenario(
        SCENARIO,
        [f"training.rounds={args.rounds}", "outputs.figures=false", "outputs.progress=false"],
    )
    print(f"torch threads: {torch.get_num_threads()}, rounds: {args.rounds}")
    t_netfl, t_bare = [], []
    for rep in range(args.repeats):
        t0 = time.perf_counter()
        result = run(scenario)
        t_netfl.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        acc_bare = bare_loop(scenario)
        t_bare.append(time.perf_counter() - t0)
        acc_netfl = float(result.rounds["accuracy"].iloc[-1])
        print(
            f"repeat {rep}: netfl {t_netfl[-1]:.2f} s (acc {acc_netfl:.4f}), "
            f"bare {t_bare[-1]:.2f} s (acc {acc_bare:.4f})"
        )
        if not np.isclose(acc_netfl, acc_bare, atol=2e-3):
            raise SystemExit("netfl and the bare loop disagree: not the same SGD steps")
    ratio = min(t_netfl) / min(t_bare)
    print(f"wall-time ratio netfl / bare (best of {args.repeats}): {ratio:.3f}  (target <= 1.10)")
    report("learning overhead vs bare loop", ratio, 1.10, "x")


if __name__ == "__main__":
    main()
