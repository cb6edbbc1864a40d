"""The ClientApp: Flower's Message API, unchanged but for where the data come from
(``netfl.flower.node_data``: the scenario's partition of this node)."""

from __future__ import annotations

from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from netfl.flower import node_data
from netfl_flower_example.task import Net, test, train

app = ClientApp()


@app.train()
def train_fn(msg: Message, context: Context) -> Message:
    """Train the received model on this node's partition; reply with it and its metrics."""
    net = Net()
    net.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    trainset, _ = node_data(context)
    config = msg.content["config"]
    loss = train(
        net,
        trainset,
        epochs=int(context.run_config["local-epochs"]),
        lr=float(config["lr"]),
        batch_size=int(context.run_config["batch-size"]),
        proximal_mu=float(config.get("proximal-mu", 0.0)),
    )
    metrics = MetricRecord({"train_loss": loss, "num-examples": len(trainset)})
    content = RecordDict({"arrays": ArrayRecord(net.state_dict()), "metrics": metrics})
    return Message(content=content, reply_to=msg)


@app.evaluate()
def evaluate_fn(msg: Message, context: Context) -> Message:
    """Evaluate the received model on this node's share of the test set."""
    net = Net()
    net.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    _, testset = node_data(context)
    loss, acc = test(net, testset)
    metrics = MetricRecord({"eval_loss": loss, "eval_acc": acc, "num-examples": len(testset)})
    return Message(content=RecordDict({"metrics": metrics}), reply_to=msg)
