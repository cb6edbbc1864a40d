"""The Flower bridge's cost: Flower's FedAvg through netfl's Grid against netfl's own
``fedavg`` on the quickstart job (issue 33).

Both run the quickstart scenario (10 devices, 4G LTE, MNIST-5k, ``--model``,
``--rounds`` rounds, figures off) in this process, alternately, ``--repeats`` times;
the Flower side is ``benchmarks/flower_apps/netfl_bench_flower.py``: Flower's own
``FedAvg`` strategy and a ClientApp that trains with netfl's training function on the
node's partition and evaluates on its share of the test set (so both sides do the same
torch work, and the ratio is what the bridge costs: serialisation, the ServerApp's
thread, FLOP counting). Target: the bridge's median wall time at most 1.10× fedavg's.
``--compute model`` (the default) charges the model's known FLOPs per sample, as
netfl's fedavg does; ``--compute counted`` counts each handler's FLOPs (torch dispatch
per operation: measured 1.15× a CNN's training, 2.2× a 2NN's; its target is 1.25×).

    .venv/bin/python benchmarks/flower_bridge.py [--model cnn] [--rounds 5] [--repeats 3]
        [--compute model|counted]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from _result import report

from netfl.loading.scenarios import load_scenario
from netfl.sim.runner import run

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.10
#: counting every handler's FLOPs dispatches each torch operation through Python
TARGET_COUNTED = 1.25


def scenarios(model: str, rounds: int, compute: str):
    base = [f"model.name={model}", f"training.rounds={rounds}", "outputs.figures=false"]
    quickstart = ROOT / "scenarios" / "quickstart.yaml"
    own = load_scenario(quickstart, base)
    tr = own.training
    shape = "x".join(str(v) for v in (1, 28, 28))  # (MNIST-5k)
    data = {
        "name": "flower",
        "server_app": "netfl_bench_flower:server",
        "client_app": "netfl_bench_flower:client",
        "app_dir": str(Path(__file__).resolve().parent / "flower_apps"),
        "run_config": {
            "num-server-rounds": rounds,
            "model": model,
            "input-shape": shape,
            "num-classes": 10,
            "lr": tr.lr,
            "momentum": tr.momentum,
            "batch-size": tr.batch_size,
        },
        "compute": compute,
    }
    from netfl.algorithms.flower_bridge import APP_TRAINING_KEYS
    from netfl.loading.scenarios import parse_scenario, resolved

    plain = resolved(own)
    plain["algorithm"] = data
    for key in APP_TRAINING_KEYS:  # (the app's own: passed in its run_config above)
        plain["training"].pop(key, None)
    plain["learning"].pop("eval_batch_size", None)
    flower = parse_scenario(plain, "quickstart (flower)")
    return own, flower


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--compute", default="model", choices=["model", "counted"], help="algorithm.compute"
    )
    args = ap.parse_args()
    own, flower = scenarios(args.model, args.rounds, args.compute)
    walls: dict[str, list[float]] = {"fedavg": [], "flower": []}
    for _ in range(args.repeats):
        for name, scenario in (("fedavg", own), ("flower", flower)):
            t0 = time.perf_counter()
            res = run(scenario)
            walls[name].append(time.perf_counter() - t0)
            last = res.rounds.iloc[-1]
            print(
                f"{name:7s} {walls[name][-1]:6.2f} s wall, {len(res.rounds)} rounds, accuracy "
                f"{last['accuracy']:.3f}, simulated {last['sim_time_s']:.1f} s",
                flush=True,
            )
    ratio = statistics.median(walls["flower"]) / statistics.median(walls["fedavg"])
    print(
        f"median wall: fedavg {statistics.median(walls['fedavg']):.2f} s, flower bridge "
        f"{statistics.median(walls['flower']):.2f} s: {ratio:.3f}x"
    )
    target = TARGET if args.compute == "model" else TARGET_COUNTED
    report(f"flower_bridge_{args.model}_{args.compute}_wall_ratio", ratio, target, "x")


if __name__ == "__main__":
    main()
