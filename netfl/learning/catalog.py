"""The catalogue of models: names, losses and descriptions, without torch.

The scenario schema checks model names against it and ``netfl list models`` prints
it, neither importing torch; :mod:`netfl.learning.models` pairs each entry with its
builder (a test checks that the two agree).
"""

from __future__ import annotations

__all__ = ["MODEL_CATALOG", "MODEL_BUILDERS"]

#: model name → (loss: ``cross_entropy`` or ``multi_margin``, description)
MODEL_CATALOG: dict[str, tuple[str, str]] = {
    "logreg": ("cross_entropy", "logistic regression"),
    "svm": ("multi_margin", "linear SVM, multi-class hinge loss"),
    "fcn": ("cross_entropy", "2NN / FCN: in-200-200-C"),
    "2nn": ("cross_entropy", "alias of fcn"),
    "cnn": ("cross_entropy", "McMahan et al. CNN"),
    "lenet": ("cross_entropy", "LeNet-5 style CNN"),
    "lenet_wide": ("cross_entropy", "LeNet-like, wider (16-32 channels, FC 256-128)"),
    "lenet_deep": ("cross_entropy", "LeNet-like, deeper (three 3×3 convolutions)"),
    "shufflenet_v2_x0_5": ("cross_entropy", "torchvision ShuffleNetV2, width 0.5"),
    "shufflenet_v2_x1_0": ("cross_entropy", "torchvision ShuffleNetV2, width 1.0"),
    "mobilenet_v2_x0_5": ("cross_entropy", "torchvision MobileNetV2, width 0.5"),
    "mobilenet_v2_x1_0": ("cross_entropy", "torchvision MobileNetV2, width 1.0"),
    "cifar_cnn": ("cross_entropy", "FedDif's CIFAR CNN"),
    "lstm": ("cross_entropy", "2-layer LSTM over image rows"),
    "vgg11": ("cross_entropy", "VGG11, CIFAR variant (EcoFed)"),
    "resnet9": ("cross_entropy", "ResNet9, CIFAR variant (EcoFed)"),
}

#: builders of the models plugins registered (:func:`netfl.register_model`):
#: name → ``builder(input_shape, num_classes)``
MODEL_BUILDERS: dict[str, object] = {}
