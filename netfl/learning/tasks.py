"""The jobs a round's devices (and servers) hand to the executor: picklable dataclasses
of their inputs, importable without torch (tensors are only carried, and only typed
here), and the hyper-parameters of local SGD.

Each task type is run by one function registered for it in
:mod:`netfl.learning.executor` (``LearningContext.run`` looks the runner up by the
task's type); a new kind of job is one dataclass here and one registered runner there.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = [
    "TrainConfig",
    "DisagreementLoss",
    "ZKTServerConfig",
    "TrainTask",
    "SplitTask",
    "DistillTask",
    "ZKTServerTask",
    "FedMDTask",
    "EvalTask",
    "FlowerClientTask",
    "Task",
    "Executor",
]


@dataclass(frozen=True)
class TrainConfig:
    """Local SGD hyper-parameters."""

    lr: float = 0.01
    momentum: float = 0.0
    weight_decay: float = 0.0
    batch_size: int = 32
    epochs: int = 1
    #: on-the-fly augmentation of image batches (``"hflip"``); see ``train.augment_batch``
    augment: tuple[str, ...] = ()


@dataclass
class TrainTask:
    """One device's local training job (picklable)."""

    model: str
    state: dict[str, torch.Tensor]
    indices: np.ndarray
    config: TrainConfig
    seed: int
    proximal_weight: float = 0.0  # λ of λ‖w − w_start‖² (FedZKT (9)); 0: plain SGD


@dataclass
class ZKTServerTask:
    """FedZKT's server update (Algorithm 3; picklable; result: ``ZKTServerResult``).

    ``devices`` lists ``(model name, state)`` of the participating device models;
    ``value_range`` is the data's per-channel ``(lo, hi)`` for the generator.
    """

    model: str
    state: dict[str, torch.Tensor]
    generator_state: dict[str, torch.Tensor]
    devices: list[tuple[str, dict[str, torch.Tensor]]]
    config: ZKTServerConfig
    seed: int
    value_range: tuple[torch.Tensor, torch.Tensor]


@dataclass
class FedMDTask:
    """One device's FedMD job (picklable).

    ``kind``: ``"transfer"`` (``public_epochs`` on the labelled public set
    ``public_x``/``public_y``, then ``config.epochs`` on the private data;
    result: ``TrainResult``), ``"scores"`` (logits on ``public_x``; result: a
    tensor) or ``"digest"`` (``public_epochs`` towards the consensus
    ``public_y``, then revisit; result: ``TrainResult``).
    """

    kind: Literal["transfer", "scores", "digest"]
    model: str
    state: dict[str, torch.Tensor]
    indices: np.ndarray
    config: TrainConfig
    seed: int
    public_x: torch.Tensor
    public_y: torch.Tensor | None = None
    public_epochs: int = 1


@dataclass
class SplitTask:
    """One device's job of a split scheme (picklable).

    ``kind``: ``"activations"`` (a frozen device part's forward pass over the
    device's data; result: a tensor), ``"server"`` (train the server part on
    ``activations``/``labels``; result: :class:`TrainResult`) or
    ``"local_loss"`` (local-loss DPFL; result: ``LocalLossResult``).
    ``states`` holds the parts' states by name (``device``, ``server``, ``aux``).
    """

    kind: Literal["activations", "server", "local_loss"]
    model: str
    point: str
    states: dict[str, dict[str, torch.Tensor]]
    indices: np.ndarray
    config: TrainConfig
    seed: int
    activations: torch.Tensor | None = None
    labels: torch.Tensor | None = None


@dataclass
class DistillTask:
    """One device's DFL/FD job: weighted CE + KL to the soft targets, then its own
    soft targets (picklable; result: ``DistillResult``)."""

    model: str
    state: dict[str, torch.Tensor]
    indices: np.ndarray
    config: TrainConfig
    seed: int
    targets: torch.Tensor
    ce_weight: float
    kl_weight: float
    temperature: float = 1.0
    kl_direction: str = "model_to_targets"


@dataclass
class EvalTask:
    """Test rows ``[start, stop)`` of the context's test set scored with ``state`` of
    ``model``, in batches of ``batch_size`` (picklable; result: one ``(correct, summed
    loss)`` per batch). Evaluation is not simulated (not charged in time): it runs
    wherever the executor runs jobs, the test set split over its workers."""

    model: str
    state: dict[str, torch.Tensor]
    start: int
    stop: int
    batch_size: int


@dataclass
class FlowerClientTask:
    """A Flower ``ClientApp`` answering one message on one device (picklable; result:
    :class:`~netfl.learning.flower_client.FlowerClientResult`). ``client_app`` is the
    app's ``module:attribute`` reference, imported with ``app_dir`` on ``sys.path``;
    ``message`` and ``context`` are Flower's ``Message`` and the node's ``Context``;
    ``indices`` the device's partition and ``test_rows`` its ``[start, stop)`` share of
    the test set (what :func:`netfl.flower.node_data` hands the app); the handler runs
    with torch's, NumPy's and Python's global generators seeded from ``seed``, its FLOPs
    counted unless ``count_flops`` is False."""

    client_app: str
    app_dir: str
    message: Any
    context: Any
    indices: np.ndarray
    test_rows: tuple[int, int]
    seed: int
    count_flops: bool = True


Task = TrainTask | SplitTask | DistillTask | ZKTServerTask | FedMDTask | EvalTask | FlowerClientTask


class Executor(Protocol):
    """Where jobs run (:class:`~netfl.learning.executor.SerialExecutor`, a process pool or
    Ray actors): ``submit`` returns a future whose result is the job's outcome."""

    def submit(self, task: Task) -> Future[Any]: ...

    def close(self) -> None: ...


#: FedZKT's disagreement losses (:func:`netfl.learning.zkt.disagreement`)
DisagreementLoss = Literal["sl", "kl", "kl_ens", "l1"]


@dataclass(frozen=True)
class ZKTServerConfig:
    """Hyper-parameters of Algorithm 3 (defaults: the paper's Sec. IV-A)."""

    iterations: int = 200  # n_D (= n_G = n_S)
    batch_size: int = 256
    noise_dim: int = 100
    generator_width: int = 64
    generator_lr: float = 1e-3
    model_lr: float = 0.01
    model_momentum: float = 0.0
    lr_decay: float = 0.3
    loss: DisagreementLoss = "sl"
    #: device models' BatchNorm during distillation from generated images: ``frozen``
    #: (evaluation mode: real-data running statistics kept) or ``update``
    device_bn: Literal["frozen", "update"] = "frozen"
