"""Flower apps the tests run through netfl's Grid and through an in-process driver:
logistic regression on the 8×8 digits, every strategy of ``flwr.serverapp.strategy``
that needs no extra set-up, chosen by the run config."""

from __future__ import annotations

import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp import strategy as strategies
from torch import nn

from netfl.flower import node_data

#: the final arrays of each ServerApp run, by run_config["tag"]
RESULTS: dict[str, dict[str, torch.Tensor]] = {}
#: run_config "mutate": what each train handler found in (and then wrote into) its
#: message's config record, ``seen``
SEEN: list[int] = []

client = ClientApp()
server = ServerApp()


def make_net() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 10))


def _fail(how: str) -> None:
    """Fail as a test asks: ``exit0``/``exit1`` (``sys.exit``), ``interrupt``
    (``KeyboardInterrupt``); ``raise`` falls through to the caller's exception."""
    import sys

    if how.startswith("exit"):
        sys.exit(int(how[4:]))
    if how == "interrupt":
        raise KeyboardInterrupt


@client.train()
def train(msg: Message, context: Context) -> Message:
    cfg = context.run_config
    if (cfg.get("fail-node"), cfg.get("fail-round")) == (
        context.node_config["partition-id"],
        msg.content["config"]["server-round"],
    ):
        _fail(cfg.get("fail-how", "raise"))
        raise RuntimeError("the test asked this node to fail\nsecond line")
    if cfg.get("mutate"):  # (a handler that writes into the message it received)
        seen = int(msg.content["config"].get("seen", 0)) + 1
        msg.content["config"]["seen"] = seen
        SEEN.append(seen)
    torch.manual_seed(
        1000 * int(msg.content["config"]["server-round"]) + int(context.node_config["partition-id"])
    )  # (fixed seeds: the same draws whoever runs the handler)
    net = make_net()
    net.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    data, _ = node_data(context)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    losses = []
    for x, y in torch.utils.data.DataLoader(data, batch_size=16, shuffle=True):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    count = context.state.config_records.get("calls", ConfigRecord({"n": 0}))
    context.state["calls"] = ConfigRecord({"n": int(count["n"]) + 1})
    metrics = MetricRecord({"train_loss": sum(losses) / len(losses), "num-examples": len(data)})
    return Message(
        RecordDict({"arrays": ArrayRecord(net.state_dict()), "metrics": metrics}), reply_to=msg
    )


@client.evaluate()
def evaluate(msg: Message, context: Context) -> Message:
    net = make_net()
    net.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    _, data = node_data(context)
    with torch.no_grad():
        out = net(data.tensors[0])
        loss = nn.functional.cross_entropy(out, data.tensors[1]).item()
        acc = (out.argmax(1) == data.tensors[1]).float().mean().item()
    metrics = MetricRecord({"eval_loss": loss, "eval_acc": acc, "num-examples": len(data)})
    return Message(RecordDict({"metrics": metrics}), reply_to=msg)


def make_strategy(cfg) -> strategies.Strategy:
    name = str(cfg.get("strategy", "FedAvg"))
    fraction = float(cfg.get("fraction-train", 1.0))
    nodes = int(cfg.get("min-nodes", 2))
    base = {
        "fraction_train": fraction,
        "fraction_evaluate": float(cfg.get("fraction-evaluate", 1.0)),
        "min_available_nodes": nodes,
        "min_train_nodes": nodes,
        "min_evaluate_nodes": nodes,
    }
    if name == "FedProx":
        return strategies.FedProx(**base, proximal_mu=0.1)
    if name in (
        "DifferentialPrivacyServerSideFixedClipping",
        "DifferentialPrivacyServerSideAdaptiveClipping",
    ):
        inner = strategies.FedAvg(**base)
        if name.endswith("FixedClipping"):
            return strategies.DifferentialPrivacyServerSideFixedClipping(
                inner, noise_multiplier=0.1, clipping_norm=10.0, num_sampled_clients=4
            )
        return strategies.DifferentialPrivacyServerSideAdaptiveClipping(
            inner, noise_multiplier=0.1, num_sampled_clients=4
        )
    if name in ("Krum", "MultiKrum", "Bulyan"):
        return getattr(strategies, name)(**base, num_malicious_nodes=0)
    if name == "QFedAvg":
        return strategies.QFedAvg(client_learning_rate=0.1, **base)
    return getattr(strategies, name)(**base)


@server.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    if cfg.get("server-fails"):
        _fail(cfg.get("fail-how", "raise"))
        raise ValueError("the ServerApp fails as asked")
    torch.manual_seed(7)
    for _ in range(int(cfg.get("extra-polls", 0))):  # (asking is free: e.g. to log them)
        grid.get_node_ids()
    result = make_strategy(cfg).start(
        grid=grid,
        initial_arrays=ArrayRecord(make_net().state_dict()),
        num_rounds=int(cfg["num-server-rounds"]),
        timeout=float(cfg.get("timeout", 3600.0)),
    )
    RESULTS[str(cfg.get("tag", ""))] = result.arrays.to_torch_state_dict()
