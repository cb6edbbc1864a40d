"""The ServerApp: one of Flower's own strategies, chosen by the run config's
``strategy`` (fedavg, fedprox, fedadam), driven by ``strategy.start`` as in Flower's
PyTorch quickstart."""

from __future__ import annotations

from flwr.app import ArrayRecord, ConfigRecord, Context
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAdam, FedAvg, FedProx

from netfl_flower_example.task import Net

app = ServerApp()


def make_strategy(context: Context):
    """The strategy the run config names, sampling ``fraction-train`` of the nodes."""
    cfg = context.run_config
    name = str(cfg.get("strategy", "fedavg"))
    common = {
        "fraction_train": float(cfg.get("fraction-train", 1.0)),
        "fraction_evaluate": float(cfg.get("fraction-evaluate", 1.0)),
        "min_available_nodes": int(cfg.get("min-nodes", 2)),
        "min_train_nodes": int(cfg.get("min-nodes", 2)),
        "min_evaluate_nodes": int(cfg.get("min-nodes", 2)),
    }
    if name == "fedavg":
        return FedAvg(**common)
    if name == "fedprox":
        return FedProx(**common, proximal_mu=float(cfg.get("proximal-mu", 0.01)))
    if name == "fedadam":
        return FedAdam(**common, eta=float(cfg.get("server-lr", 0.01)))
    raise ValueError(f"unknown strategy {name!r} (fedavg, fedprox, fedadam)")


@app.main()
def main(grid: Grid, context: Context) -> None:
    """Run the strategy for ``num-server-rounds`` rounds from a fresh model."""
    strategy = make_strategy(context)
    result = strategy.start(
        grid=grid,
        initial_arrays=ArrayRecord(Net().state_dict()),
        train_config=ConfigRecord({"lr": float(context.run_config["lr"])}),
        num_rounds=int(context.run_config["num-server-rounds"]),
    )
    context.state["final"] = result.arrays  # (kept with the ServerApp's context)
