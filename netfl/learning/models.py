"""Model zoo: every model maps images ``(N, C, H, W)`` to class logits ``(N, classes)``.

=========  ==========================================================  ==========
name       architecture                                                loss
=========  ==========================================================  ==========
logreg     flatten → linear                                            cross-entropy
svm        flatten → linear (multi-class linear SVM)                   multi-class hinge
fcn / 2nn  flatten → 200 → 200 → C, ReLU (McMahan et al. "2NN")        cross-entropy
cnn        McMahan et al. CNN: 5×5 conv 32 → pool → 5×5 conv 64 →      cross-entropy
           pool → FC 512 → C ("same" padding so 8×8 inputs work)
lenet      LeNet-5 style: 5×5 conv 6 → pool → 5×5 conv 16 → pool →     cross-entropy
           FC 120 → 84 → C ("same" padding)
lenet_wide LeNet-like, wider: 5×5 conv 16 → pool → 5×5 conv 32 → pool →  cross-entropy
           FC 256 → 128 → C (FedZKT's heterogeneous devices)
lenet_deep LeNet-like, deeper: 3×3 conv 8 → pool → conv 16 → pool →     cross-entropy
           conv 32 → FC 120 → 84 → C (FedZKT's heterogeneous devices)
shufflenet_v2_x0_5 / shufflenet_v2_x1_0 / mobilenet_v2_x0_5 /           cross-entropy
mobilenet_v2_x1_0: torchvision's ShuffleNetV2 and MobileNetV2 at two widths each
           (FedZKT's CIFAR-10 devices), first convolution adapted to C input channels
cifar_cnn  FedDif's CIFAR CNN: 3×3 conv 64 → pool → 3×3 conv 128 → pool →  cross-entropy
           3×3 conv 256 → pool → FC 4096 (for 32×32) → 256 → C
lstm       image rows as a sequence (H steps of C·W features), 2-layer  cross-entropy
           LSTM with 128 hidden units → FC C (FedDif's FMNIST task)
vgg11      CIFAR VGG11 (EcoFed): 3×3 conv+BN+ReLU 64, M, 128, M, 256,   cross-entropy
           256, M, 512, 512, M, 512, 512 → FC 2048 → 4096 → 4096 → C
resnet9    CIFAR ResNet9 (EcoFed): conv-BN-ReLU 64, M, 128, M, residual   cross-entropy
           blocks 256 (pool), 512 (pool), 512 (avg pool) → FC C
=========  ==========================================================  ==========
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod

import torch
from torch import nn

from channel_models.registry import lookup
from netfl.learning.catalog import MODEL_CATALOG

__all__ = ["MODELS", "ModelSpec", "get_model_spec", "num_parameters"]


def _flat_features(body: nn.Module, input_shape: tuple[int, ...]) -> int:
    with torch.no_grad():
        return int(body(torch.zeros(1, *input_shape)).numel())


def _logreg(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(prod(input_shape), num_classes))


def _fcn(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(prod(input_shape), 200),
        nn.ReLU(),
        nn.Linear(200, 200),
        nn.ReLU(),
        nn.Linear(200, num_classes),
    )


def _cnn(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    body = nn.Sequential(
        nn.Conv2d(input_shape[0], 32, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
    )
    n = _flat_features(body, input_shape)
    return nn.Sequential(*body, nn.Linear(n, 512), nn.ReLU(), nn.Linear(512, num_classes))


def _lenet(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    body = nn.Sequential(
        nn.Conv2d(input_shape[0], 6, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
    )
    n = _flat_features(body, input_shape)
    return nn.Sequential(
        *body,
        nn.Linear(n, 120),
        nn.ReLU(),
        nn.Linear(120, 84),
        nn.ReLU(),
        nn.Linear(84, num_classes),
    )


def _lenet_like(
    convs: tuple[tuple[int, int], ...], pools: int, hidden: tuple[int, ...]
) -> Callable[[tuple[int, ...], int], nn.Module]:
    """A LeNet-like builder: ``convs`` of (channels, kernel) with ReLU ("same" padding),
    a 2×2 max-pool after each of the first ``pools``, then FC ``hidden`` → C."""

    def build(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
        layers: list[nn.Module] = []
        c = input_shape[0]
        for i, (width, kernel) in enumerate(convs):
            layers += [nn.Conv2d(c, width, kernel, padding=kernel // 2), nn.ReLU()]
            if i < pools:
                layers.append(nn.MaxPool2d(2))
            c = width
        body = nn.Sequential(*layers, nn.Flatten())
        n = _flat_features(body, input_shape)
        head: list[nn.Module] = []
        for h in hidden:
            head += [nn.Linear(n, h), nn.ReLU()]
            n = h
        return nn.Sequential(*body, *head, nn.Linear(n, num_classes))

    return build


def _torchvision_net(factory: str, **kwargs) -> Callable[[tuple[int, ...], int], nn.Module]:
    """A torchvision classifier (random init) whose first convolution takes C channels."""

    def build(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
        import torchvision.models as tvm

        model = getattr(tvm, factory)(weights=None, num_classes=num_classes, **kwargs)
        parent = model.conv1 if hasattr(model, "conv1") else model.features[0]
        first: nn.Conv2d = parent[0]
        if first.in_channels != input_shape[0]:
            parent[0] = nn.Conv2d(
                input_shape[0],
                first.out_channels,
                first.kernel_size,
                first.stride,
                first.padding,
                bias=first.bias is not None,
            )
        return model

    return build


def _cifar_cnn(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """FedDif's CNN task (Sec. VI-A and its public code): 1,422,218 parameters for 3×32×32."""
    layers: list[nn.Module] = []
    channels = input_shape[0]
    for width in (64, 128, 256):
        layers += [nn.Conv2d(channels, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
        channels = width
    body = nn.Sequential(*layers, nn.Flatten())
    n = _flat_features(body, input_shape)
    return nn.Sequential(*body, nn.Linear(n, 256), nn.ReLU(), nn.Linear(256, num_classes))


class RowLSTM(nn.Module):
    """Reads an image row by row: ``H`` steps of ``C·W`` features; logits from the last step."""

    def __init__(
        self,
        input_shape: tuple[int, ...],
        num_classes: int,
        hidden_size: int = 128,
        num_layers: int = 2,
    ):
        super().__init__()
        c, _h, w = input_shape
        self.lstm = nn.LSTM(c * w, hidden_size, num_layers=num_layers, batch_first=True)
        self.head = nn.Linear(hidden_size, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        seq = x.permute(0, 2, 1, 3).reshape(n, h, c * w)
        out, _ = self.lstm(seq)
        return self.head(out[:, -1])


#: VGG11 feature layers of EcoFed's CIFAR variant ("M": 2×2 max-pool); four pools.
VGG11_LAYERS: tuple[int | str, ...] = (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512)


class VGG11(nn.Module):
    """VGG11 for 32×32 inputs as in EcoFed's code: ``features`` (conv3×3+BN+ReLU, four
    max-pools) then ``classifier`` FC 512·(H/16)·(W/16) → 4096 → 4096 → C, no dropout.
    Inputs too small for four pools skip the last ones.

    34,440,970 trainable parameters for 3×32×32 and C = 10. ``features`` is an
    ``nn.Sequential`` so partition points are slices of it.
    """

    def __init__(self, input_shape: tuple[int, ...], num_classes: int):
        super().__init__()
        c, h, w = input_shape
        layers: list[nn.Module] = []
        for v in VGG11_LAYERS:
            if v == "M":
                if min(h, w) >= 2:  # small inputs (8×8 digits) skip the pools they cannot take
                    layers.append(nn.MaxPool2d(2))
                    h, w = h // 2, w // 2
            else:
                layers += [nn.Conv2d(c, int(v), 3, padding=1), nn.BatchNorm2d(int(v)), nn.ReLU()]
                c = int(v)
        self.features = nn.Sequential(*layers)
        flat = c * h * w
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(flat, 4096),
            nn.ReLU(),
            nn.Linear(4096, 4096),
            nn.ReLU(),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))

    def layers(self) -> list[nn.Module]:
        """The layers in order (``features`` then ``classifier``): partition points index it."""
        return [*self.features, *self.classifier]


def _cbr(c_in: int, c_out: int) -> list[nn.Module]:
    """conv3×3 + BatchNorm (batch statistics only, as EcoFed's code) + ReLU."""
    return [
        nn.Conv2d(c_in, c_out, 3, padding=1),
        nn.BatchNorm2d(c_out, track_running_stats=False),
        nn.ReLU(),
    ]


class ResidualBlock(nn.Module):
    """EcoFed's ResNet9 residual blocks: two conv-BN-ReLU, then either a max-pool
    with a strided 1×1 projection of the input (``"pool"``: RBMPD) or the identity
    shortcut and an adaptive average pool to 1×1 (``"avg"``: RBAAP)."""

    def __init__(self, c_in: int, c_out: int, kind: str):
        super().__init__()
        self.kind = kind
        body = [*_cbr(c_in, c_out), *_cbr(c_out, c_out)]
        if kind == "pool":
            body.append(nn.MaxPool2d(2, ceil_mode=True))
            self.shortcut: nn.Module = nn.Conv2d(c_in, c_out, 1, stride=2)
        else:
            self.shortcut = nn.Identity()
        self.body = nn.Sequential(*body)
        self.pool = nn.AdaptiveAvgPool2d(1) if kind == "avg" else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.body(x) + self.shortcut(x))


class ResNet9(nn.Sequential):
    """EcoFed's ResNet9 (its public code): conv-BN-ReLU 64, pool, 128, pool, residual
    block 128→256 with pool, 256→512 with pool, 512→512 with average pool, FC 512→C.
    9,395,722 parameters for C = 10 (BatchNorm keeps no running statistics)."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int):
        super().__init__(
            *_cbr(input_shape[0], 64),
            nn.MaxPool2d(2, ceil_mode=True),
            *_cbr(64, 128),
            nn.MaxPool2d(2, ceil_mode=True),
            ResidualBlock(128, 256, "pool"),
            ResidualBlock(256, 512, "pool"),
            ResidualBlock(512, 512, "avg"),
            nn.Flatten(),
            nn.Linear(512, num_classes),
        )

    def layers(self) -> list[nn.Module]:
        return list(self)


@dataclass(frozen=True)
class ModelSpec:
    """A named architecture and the loss it is trained with."""

    name: str
    build: Callable[[tuple[int, ...], int], nn.Module]
    loss: str  # "cross_entropy" or "multi_margin"
    description: str

    def loss_fn(self) -> nn.Module:
        return nn.MultiMarginLoss() if self.loss == "multi_margin" else nn.CrossEntropyLoss()


#: model name → builder ``(input_shape, num_classes) -> nn.Module``
_BUILDERS: dict[str, Callable[[tuple[int, ...], int], nn.Module]] = {
    "logreg": _logreg,
    "svm": _logreg,
    "fcn": _fcn,
    "2nn": _fcn,
    "cnn": _cnn,
    "lenet": _lenet,
    "lenet_wide": _lenet_like(((16, 5), (32, 5)), 2, (256, 128)),
    "lenet_deep": _lenet_like(((8, 3), (16, 3), (32, 3)), 2, (120, 84)),
    "shufflenet_v2_x0_5": _torchvision_net("shufflenet_v2_x0_5"),
    "shufflenet_v2_x1_0": _torchvision_net("shufflenet_v2_x1_0"),
    "mobilenet_v2_x0_5": _torchvision_net("mobilenet_v2", width_mult=0.5),
    "mobilenet_v2_x1_0": _torchvision_net("mobilenet_v2", width_mult=1.0),
    "cifar_cnn": _cifar_cnn,
    "lstm": RowLSTM,
    "vgg11": VGG11,
    "resnet9": ResNet9,
}

MODELS: dict[str, ModelSpec] = {  # (built-ins; a plugin's are added on first use)
    name: ModelSpec(name, builder, *MODEL_CATALOG[name]) for name, builder in _BUILDERS.items()
}


def get_model_spec(name: str) -> ModelSpec:
    """The spec of model ``name`` (a plugin's: its builder with its catalogue entry)."""
    from netfl.learning.catalog import MODEL_BUILDERS

    if name not in MODELS and name in MODEL_BUILDERS:
        loss, description = MODEL_CATALOG[name]
        MODELS[name] = ModelSpec(name, MODEL_BUILDERS[name], loss, description)  # type: ignore[arg-type]
    return lookup(MODELS, name, "model")


def num_parameters(model: nn.Module) -> int:
    """Number of trainable and buffer values in the state dict (what is transmitted)."""
    return sum(t.numel() for t in model.state_dict().values())
