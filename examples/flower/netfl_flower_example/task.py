"""The model, local training and evaluation of the example: plain PyTorch, as in
Flower's own PyTorch quickstart (McMahan et al.'s 2NN on MNIST-5k)."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    """McMahan et al.'s "2NN": 784-200-200-10, ReLU."""

    def __init__(self, num_inputs: int = 784, num_classes: int = 10):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Flatten(),
            nn.Linear(num_inputs, 200),
            nn.ReLU(),
            nn.Linear(200, 200),
            nn.ReLU(),
            nn.Linear(200, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def train(
    net: Net,
    data: TensorDataset,
    epochs: int,
    lr: float,
    batch_size: int,
    proximal_mu: float = 0.0,
) -> float:
    """Local SGD (with FedProx's proximal term μ/2‖w − w_global‖² when μ > 0); the mean
    training loss."""
    loader = DataLoader(data, batch_size=batch_size, shuffle=True)
    global_params = [p.detach().clone() for p in net.parameters()]
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    criterion = nn.CrossEntropyLoss()
    net.train()
    total, batches = 0.0, 0
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(net(x), y)
            if proximal_mu > 0:
                prox = sum(
                    ((p - g) ** 2).sum()
                    for p, g in zip(net.parameters(), global_params, strict=True)
                )
                loss = loss + proximal_mu / 2 * prox
            loss.backward()
            optimizer.step()
            total += loss.item()
            batches += 1
    return total / max(batches, 1)


@torch.no_grad()
def test(net: Net, data: TensorDataset, batch_size: int = 500) -> tuple[float, float]:
    """Mean loss and accuracy on ``data``."""
    net.eval()
    criterion = nn.CrossEntropyLoss(reduction="sum")
    loss, correct = 0.0, 0
    for x, y in DataLoader(data, batch_size=batch_size):
        out = net(x)
        loss += float(criterion(out, y))
        correct += int((out.argmax(1) == y).sum())
    n = max(len(data), 1)
    return loss / n, correct / n
