import io
import os
import pickle
import tarfile

import numpy as np
import pytest
import torch

from pcd.train import data as D


def test_fake_archive_round_trip_is_exact(tmp_path):
    """The loader returns exactly the arrays written in CIFAR's pickled-batch layout."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (12, 3072), dtype=np.uint8)
    y = rng.integers(0, 10, 12)
    xt = rng.integers(0, 256, (5, 3072), dtype=np.uint8)
    yt = rng.integers(0, 10, 5)
    with tarfile.open(tmp_path / "cifar-10-python.tar.gz", "w:gz") as tf:
        for i in range(1, 6):
            sl = slice((i - 1) * 12 // 5, i * 12 // 5)
            blob = pickle.dumps({b"data": x[sl], b"labels": y[sl].tolist()}, protocol=2)
            info = tarfile.TarInfo(f"cifar-10-batches-py/data_batch_{i}")
            info.size = len(blob)
            tf.addfile(info, io.BytesIO(blob))
        blob = pickle.dumps({b"data": xt, b"labels": yt.tolist()}, protocol=2)
        info = tarfile.TarInfo("cifar-10-batches-py/test_batch")
        info.size = len(blob)
        tf.addfile(info, io.BytesIO(blob))
    a = D.load_cifar_arrays("cifar10", tmp_path)
    np.testing.assert_array_equal(a[0], x.reshape(-1, 3, 32, 32))
    np.testing.assert_array_equal(a[1], y)
    np.testing.assert_array_equal(a[2], xt.reshape(-1, 3, 32, 32))
    np.testing.assert_array_equal(a[3], yt)
    # the extracted folder gives the same arrays
    with tarfile.open(tmp_path / "cifar-10-python.tar.gz") as tf:
        tf.extractall(tmp_path / "ex", filter="data")
    b = D.load_cifar_arrays("cifar10", tmp_path / "ex")
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_cifar100_fine_labels(tmp_path):
    D.write_fake_cifar(tmp_path, "cifar100", n_train=30, n_test=10)
    ds = D.load_dataset("cifar100", data_dir=tmp_path)
    assert ds.num_classes == 100 and ds.x_train.shape == (30, 3, 32, 32) and ds.x_train.dtype == torch.uint8
    assert int(ds.y_train.max()) < 100


def test_malicious_pickle_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    blob = pickle.dumps({b"data": Evil(), b"labels": [0]}, protocol=2)
    with pytest.raises(ValueError, match="refusing to unpickle"):
        D.safe_unpickle(blob)
    assert not marker.exists()
    # and through the loader, in an archive
    with tarfile.open(tmp_path / "cifar-10-python.tar.gz", "w:gz") as tf:
        for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(blob)
            tf.addfile(info, io.BytesIO(blob))
    with pytest.raises(ValueError, match="refusing"):
        D.load_cifar_arrays("cifar10", tmp_path)
    assert not marker.exists()


def test_missing_cifar_says_which_file_where(tmp_path):
    with pytest.raises(FileNotFoundError, match="cifar-10-python.tar.gz") as e:
        D.load_dataset("cifar10", data_dir=tmp_path / "nothing")
    assert str(tmp_path / "nothing") in str(e.value)


def test_digits_fixed_split_and_scaling():
    a = D.load_digits_arrays()
    b = D.load_digits_arrays()
    assert a[0].shape == (1438, 1, 8, 8) and a[2].shape == (359, 1, 8, 8)
    np.testing.assert_array_equal(a[3], b[3])
    assert a[0].dtype == np.uint8 and a[0].max() == 255 and a[0].min() == 0
    assert set(np.unique(a[1])) == set(range(10))


def test_subsets_are_fixed_and_sized():
    ds = D.load_dataset("digits", max_train_samples=100, max_test_samples=50)
    ds2 = D.load_dataset("digits", max_train_samples=100, max_test_samples=50)
    assert ds.x_train.shape[0] == 100 and ds.x_test.shape[0] == 50
    assert torch.equal(ds.x_train, ds2.x_train)
    with pytest.raises(ValueError, match="max_train_samples"):
        D.load_dataset("digits", max_train_samples=0)
    with pytest.raises(ValueError, match="unknown dataset"):
        D.load_dataset("mnist")


def test_augmentation_is_a_shifted_crop_or_flip(cifar_dir):
    ds = D.load_dataset("cifar10", data_dir=cifar_dir)
    x = ds.x_train[:16]
    g = torch.Generator().manual_seed(0)
    out = ds.augment(x, g)
    assert out.shape == x.shape and out.dtype == torch.uint8
    p = ds.pad
    xp = torch.nn.functional.pad(x, (p, p, p, p))
    for i in range(16):  # every output is some crop of the padded image, possibly flipped
        found = False
        for dy in range(2 * p + 1):
            for dx in range(2 * p + 1):
                crop = xp[i, :, dy:dy + 32, dx:dx + 32]
                if torch.equal(out[i], crop) or torch.equal(out[i], crop.flip(2)):
                    found = True
        assert found
    # deterministic under the generator
    assert torch.equal(ds.augment(x, torch.Generator().manual_seed(0)), out)
    assert not torch.equal(ds.augment(x, torch.Generator().manual_seed(1)), out)


def test_normalization_matches_stats_and_epoch_covers_all():
    ds = D.load_dataset("digits")
    xs, ys = [], []
    for x, y in ds.train_batches(500, torch.Generator().manual_seed(0)):
        xs.append(x)
        ys.append(y)
    x = torch.cat(xs)
    assert x.shape[0] == ds.x_train.shape[0]
    assert abs(float(x.mean())) < 1e-4 and abs(float(x.std()) - 1.0) < 1e-3
    assert torch.equal(torch.sort(torch.cat(ys)).values, torch.sort(ds.y_train).values)


def test_download_checks_md5(tmp_path, monkeypatch):
    """The download path (here from a file:// URL) keeps a file only when its MD5 matches."""
    src = tmp_path / "src"
    archive = D.write_fake_cifar(src, "cifar10", n_train=20, n_test=10)
    entry = list(D._CIFAR["cifar10"])
    entry[2] = archive.as_uri()
    entry[3] = D._md5(archive)
    monkeypatch.setitem(D._CIFAR, "cifar10", tuple(entry))
    ds = D.load_dataset("cifar10", data_dir=tmp_path / "dl", download=True)
    assert ds.x_train.shape[0] == 20 and (tmp_path / "dl" / "cifar-10-python.tar.gz").exists()
    entry[3] = "0" * 32
    monkeypatch.setitem(D._CIFAR, "cifar10", tuple(entry))
    with pytest.raises(FileNotFoundError, match="MD5"):
        D.download_cifar("cifar10", tmp_path / "dl2")
    assert not (tmp_path / "dl2" / "cifar-10-python.tar.gz").exists()
