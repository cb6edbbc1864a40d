"""The quickstart job as Flower apps, for ``benchmarks/flower_bridge.py``: Flower's own
FedAvg strategy; a ClientApp that trains the scenario's model with the scenario's local
SGD (netfl's training function, so both sides do the same torch work and the benchmark
measures the bridge)."""

from __future__ import annotations

from functools import cache

import torch
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from netfl.flower import node_data
from netfl.learning.models import get_model_spec
from netfl.learning.tasks import TrainConfig
from netfl.learning.train import evaluate_batches, train_local

client = ClientApp()
server = ServerApp()


@cache
def _model(name: str, shape: tuple[int, ...], classes: int) -> torch.nn.Module:
    with torch.random.fork_rng():  # (built once per process: draws from no handler's stream)
        return get_model_spec(name).build(shape, classes)


def _net(context: Context, x: torch.Tensor) -> torch.nn.Module:
    cfg = context.run_config
    return _model(str(cfg["model"]), tuple(x.shape[1:]), int(cfg["num-classes"]))


@client.train()
def train(msg: Message, context: Context) -> Message:
    cfg = context.run_config
    data, _ = node_data(context)
    x, y = data.tensors
    net = _net(context, x)
    config = TrainConfig(
        lr=float(cfg["lr"]), momentum=float(cfg["momentum"]), batch_size=int(cfg["batch-size"])
    )
    result = train_local(
        net,
        msg.content["arrays"].to_torch_state_dict(),
        x,
        y,
        config,
        int(torch.randint(0, 2**31, ()).item()),
        get_model_spec(str(cfg["model"])).loss_fn(),
    )
    metrics = MetricRecord({"train_loss": result.mean_loss, "num-examples": len(y)})
    content = RecordDict({"arrays": ArrayRecord(result.state), "metrics": metrics})
    return Message(content, reply_to=msg)


@client.evaluate()
def evaluate(msg: Message, context: Context) -> Message:
    _, data = node_data(context)
    x, y = data.tensors
    net = _net(context, x)
    rows = evaluate_batches(
        net,
        msg.content["arrays"].to_torch_state_dict(),
        x,
        y,
        get_model_spec(str(context.run_config["model"])).loss_fn(),
        1000,
        torch.device("cpu"),
    )
    correct, loss = sum(c for c, _ in rows), sum(s for _, s in rows)
    metrics = MetricRecord(
        {"eval_acc": correct / len(y), "eval_loss": loss / len(y), "num-examples": len(y)}
    )
    return Message(RecordDict({"metrics": metrics}), reply_to=msg)


@server.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    shape = tuple(int(v) for v in str(cfg["input-shape"]).split("x"))
    net = get_model_spec(str(cfg["model"])).build(shape, int(cfg["num-classes"]))  # (fresh)
    FedAvg(fraction_train=1.0, fraction_evaluate=1.0).start(
        grid=grid,
        initial_arrays=ArrayRecord(net.state_dict()),
        num_rounds=int(cfg["num-server-rounds"]),
    )
