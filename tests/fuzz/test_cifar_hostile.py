"""Hostile CIFAR archives: every one is refused with a one-line ValueError, nothing executes."""
from __future__ import annotations

import io
import pickle
import tarfile

import numpy as np
import pytest

from pcd.train import data as D


def _archive(path, train_labels, test_labels=None, n=4, nt=3, mutate=None):
    rng = np.random.default_rng(0)
    with tarfile.open(path / "cifar-10-python.tar.gz", "w:gz") as tf:
        def add(name, obj):
            blob = pickle.dumps(obj, protocol=2)
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(blob)
            tf.addfile(info, io.BytesIO(blob))
        for i in range(1, 6):
            labels = train_labels if i == 1 else [0] * n
            add(f"data_batch_{i}", {b"data": rng.integers(0, 256, (len(labels), 3072), dtype=np.uint8),
                                    b"labels": labels})
        tl = test_labels if test_labels is not None else [1] * nt
        add("test_batch", {b"data": rng.integers(0, 256, (len(tl), 3072), dtype=np.uint8), b"labels": tl})
    return path / "cifar-10-python.tar.gz"


CASES = {
    "huge label": dict(train_labels=[0, 10**30, 1, 2]),
    "negative label": dict(train_labels=[0, -1, 1, 2]),
    "label out of range": dict(train_labels=[0, 10, 1, 2]),
    "float labels": dict(train_labels=[0.0, 1.7, 2.0, 3.0]),
    "bool labels": dict(train_labels=[True, False, True, False]),
    "string labels": dict(train_labels=["0", "1", "2", "3"]),
    "nested labels": dict(train_labels=[[0], [1], [2], [3]]),
    "empty test set": dict(train_labels=[0, 1, 2, 3], test_labels=[]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_labels_and_empty_sets_are_one_line_value_errors(tmp_path, case):
    kw = dict(CASES[case])
    if case == "empty test set":
        pass
    _archive(tmp_path, **kw)
    with pytest.raises(ValueError) as e:
        D.load_cifar_arrays("cifar10", tmp_path)
    assert "\n" not in str(e.value)


def test_zero_row_training_set_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    with tarfile.open(tmp_path / "cifar-10-python.tar.gz", "w:gz") as tf:
        for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
            n = 2 if name == "test_batch" else 0
            blob = pickle.dumps({b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"labels": [0] * n})
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(blob)
            tf.addfile(info, io.BytesIO(blob))
    with pytest.raises(ValueError, match="training set has no images"):
        D.load_cifar_arrays("cifar10", tmp_path)


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9, 0.99])
def test_truncated_archive_is_one_line(tmp_path, keep):
    full = _archive(tmp_path, train_labels=[0, 1, 2, 3], n=50, nt=50).read_bytes()
    (tmp_path / "cifar-10-python.tar.gz").write_bytes(full[: int(len(full) * keep)])
    with pytest.raises(ValueError) as e:
        D.load_cifar_arrays("cifar10", tmp_path)
    assert "\n" not in str(e.value) and "cifar-10-python.tar.gz" in str(e.value)


@pytest.mark.parametrize("blob", [b"", b"\x00" * 100, b"not a tar at all", b"\x1f\x8b" + b"\xff" * 50])
def test_garbage_archive_is_one_line(tmp_path, blob):
    (tmp_path / "cifar-10-python.tar.gz").write_bytes(blob)
    with pytest.raises(ValueError) as e:
        D.load_cifar_arrays("cifar10", tmp_path)
    assert "\n" not in str(e.value)


def test_integer_labels_still_load(tmp_path):
    _archive(tmp_path, train_labels=[0, 9, np.int64(3), 2])
    x, y, xt, yt = D.load_cifar_arrays("cifar10", tmp_path)
    assert y[:4].tolist() == [0, 9, 3, 2] and y.dtype == np.int64
