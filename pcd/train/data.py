"""Image data for pruning runs: scikit-learn digits and CIFAR-10/100, held on the training device.

The whole dataset lives as one ``uint8`` tensor ``[N, C, H, W]`` on the training device;
augmentation (random crop with zero padding, horizontal flip) and per-channel normalization run
batched on that device. There is no per-sample Python and no DataLoader.

CIFAR comes from the standard "python version" archives (``cifar-10-python.tar.gz``,
``cifar-100-python.tar.gz``, https://www.cs.toronto.edu/~kriz/cifar.html) or their extracted
folders in a data directory (``data_dir`` argument, else the ``PCD_DATA_DIR`` environment
variable, else ``~/.cache/pcd-studio/data``). The batches are pickles; they are read with a
*restricted* unpickler that only admits NumPy array reconstruction, so a tampered file can never
run code. ``download=True`` fetches the archive over HTTPS and checks its MD5.

``digits`` is scikit-learn's ``load_digits`` (1797 8x8 grey images, shipped inside the package):
a real dataset that needs no download. Its 80/20 train/test split is fixed (seed 0), independent
of the run's seed.
"""
from __future__ import annotations

import hashlib
import io
import os
import pickle
import tarfile
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from pcd import _files

DATASETS = ("digits", "cifar10", "cifar100")

# name -> (archive file, folder inside it, url, md5, train members, test member, label key)
_CIFAR = {
    "cifar10": (
        "cifar-10-python.tar.gz",
        "cifar-10-batches-py",
        "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
        "c58f30108f718f92721af3b95e74349a",
        [f"data_batch_{i}" for i in range(1, 6)],
        "test_batch",
        "labels",
        10,
    ),
    "cifar100": (
        "cifar-100-python.tar.gz",
        "cifar-100-python",
        "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
        "eb9058c3a382ffc7106e4002c42a8d85",
        ["train"],
        "test",
        "fine_labels",
        100,
    ),
}

# Per-dataset channel statistics (train split), the usual values for CIFAR.
_STATS = {
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    "cifar100": ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
}


def default_data_dir() -> Path:
    """``$PCD_DATA_DIR`` if set, else ``~/.cache/pcd-studio/data``."""
    env = os.environ.get("PCD_DATA_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "pcd-studio" / "data"


# --------------------------------------------------------------------------- safe unpickling

_ALLOWED_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    # Python 3 writes bytes under protocol 2 as _codecs.encode(str, "latin1"): a pure function.
    ("_codecs", "encode"),
}


class _RestrictedUnpickler(pickle.Unpickler):
    """Admits only the globals NumPy needs to rebuild arrays; anything else is refused."""

    def find_class(self, module: str, name: str):
        if (module, name) not in _ALLOWED_GLOBALS:
            raise ValueError(
                f"refusing to unpickle {module}.{name}: CIFAR batches may only contain NumPy arrays, "
                "lists and strings (the file is corrupt or was tampered with)"
            )
        import importlib

        alt = module.replace("numpy.core.", "numpy._core.") if ".core." in module else module.replace("numpy._core.", "numpy.core.")
        for mod in (module, alt):
            try:
                return getattr(importlib.import_module(mod), name)
            except (ImportError, AttributeError):
                continue
        raise ValueError(f"cannot resolve {module}.{name} in this NumPy version")


def safe_unpickle(data: bytes) -> object:
    """Unpickle ``data`` admitting only NumPy array reconstruction (no arbitrary code).

    Raises ``ValueError`` for any other global (e.g. ``os.system``) or a malformed pickle.
    """
    try:
        return _RestrictedUnpickler(io.BytesIO(data), encoding="latin1").load()
    except ValueError:
        raise
    except Exception as exc:  # malformed stream
        raise ValueError(f"cannot read CIFAR batch: {exc}") from None


def _batch_arrays(obj: object, label_key: str, where: str) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected a dict batch, got {type(obj).__name__}")
    d = {(k.decode("latin1") if isinstance(k, bytes) else k): v for k, v in obj.items()}
    if "data" not in d or label_key not in d:
        raise ValueError(f"{where}: batch lacks 'data' or '{label_key}' (keys: {sorted(d)})")
    x = np.asarray(d["data"])
    y = _labels(d[label_key], where)
    if x.dtype != np.uint8 or x.ndim != 2 or x.shape[1] != 3072 or x.shape[0] != y.shape[0]:
        raise ValueError(f"{where}: data must be uint8 [N, 3072] matching the labels, got {x.dtype} {x.shape}")
    return x.reshape(-1, 3, 32, 32), y


def _labels(raw: object, where: str) -> np.ndarray:
    """Integer class labels ``[N]`` as int64: floats (silently truncated before), bools, values
    beyond int64 (10**30) and nested lists are refused in one line."""
    if isinstance(raw, np.ndarray):
        arr = raw
    elif isinstance(raw, (list, tuple)):
        if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in raw):
            bad = next(v for v in raw if isinstance(v, bool) or not isinstance(v, (int, np.integer)))
            raise ValueError(f"{where}: labels must be integers, got {type(bad).__name__} {bad!r:.40}")
        if any(not -(2**63) <= int(v) < 2**63 for v in raw):
            raise ValueError(f"{where}: labels must be class indices, got a value beyond int64")
        arr = np.asarray(raw, dtype=np.int64) if raw else np.zeros(0, dtype=np.int64)
    else:
        raise ValueError(f"{where}: labels must be a list of integers, got {type(raw).__name__}")
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"{where}: labels must be a flat list of integers, got {arr.dtype} {arr.shape}")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= 2**63:
        raise ValueError(f"{where}: labels must be class indices, got a value beyond int64")
    return arr.astype(np.int64)


# --------------------------------------------------------------------------- sizes before reading

_ROW_BYTES = 3 * 32 * 32  # one image: 3 channels x 32 x 32 uint8
_ROW_SLACK = 128          # per image: its label(s) and file name in the pickle (~30 bytes in practice)
_BATCH_SLACK = 64 * 2**10  # per batch: the dict, keys, batch label and pickle framing
_MAX_MEMBERS = 64         # tar members looked at before giving up (the real archives have 8 and 5)


def _batch_rows(name: str, member: str) -> int:
    """Images in a CIFAR member: 10,000 per CIFAR-10 batch and test set, 50,000 in CIFAR-100's train."""
    return 50_000 if (name, member) == ("cifar100", "train") else 10_000


def member_bound(name: str, member: str) -> int:
    """The largest size (bytes) a CIFAR member of this shape can have:
    ``rows * (3072 + 128) + 64 KiB`` -- 32.07 MB for a CIFAR-10 batch (the real ones are 31.04 MB)
    and 160.07 MB for CIFAR-100's train file (the real one is 155.25 MB). A smaller member (a
    subset, a generated test archive) is fine; a larger one is refused before it is decompressed."""
    return _batch_rows(name, member) * (_ROW_BYTES + _ROW_SLACK) + _BATCH_SLACK


def _size_message(name: str, where: str, size: int, bound: int) -> str:
    rows = _batch_rows(name, where.rsplit("/", 1)[-1].rsplit(":", 1)[-1])
    return (f"{where} is {size:,} bytes; a {name} member of at most {rows:,} images of 32x32x3 bytes is at most "
            f"{bound:,} bytes ({rows * _ROW_BYTES:,} of pixels); not read -- delete the file and download "
            "the dataset again")


def _read_archive_members(name: str, src: Path, folder: str, bounds: dict[str, int],
                          data_dir: str | os.PathLike | None) -> dict[str, bytes]:
    """The wanted members of a CIFAR archive, each checked against :func:`member_bound` from its tar
    header before a byte of it is decompressed. The archive itself is read through :mod:`pcd._files`
    (a regular file of at most 256 MiB); members are read in archive order (no rewinds), any member
    larger than the largest CIFAR member is refused from its header (never skipped by inflating it),
    and at most 64 members are looked at."""
    biggest = max(bounds.values())
    out: dict[str, bytes] = {}
    try:
        with _files.open_file(src, src.parent, kind="cifar-archive", name=f"{name} archive") as (fh, _):
            try:
                tf = tarfile.open(fileobj=fh, mode="r:*")
            except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise ValueError(f"{src} is not a readable tar archive ({first.rstrip(':')}); "
                                 "delete it and download it again") from None
            with tf:
                for _ in range(_MAX_MEMBERS):
                    info = tf.next()
                    if info is None:
                        break
                    member = info.name[len(folder) + 1:] if info.name.startswith(folder + "/") else None
                    if member in bounds:
                        if not info.isfile():
                            raise ValueError(f"{src}: {info.name} is not a regular file in the archive")
                        if info.size > bounds[member]:
                            raise ValueError(_size_message(name, f"{src}:{info.name}", info.size, bounds[member]))
                    elif info.size > biggest:
                        raise ValueError(f"{src}: member {info.name} is {info.size:,} bytes, larger than any "
                                         f"{name} member ({biggest:,}); not read -- this is not a CIFAR archive")
                    if member in bounds and member not in out:
                        ef = tf.extractfile(info)
                        data = ef.read(info.size) if ef is not None else b""
                        if len(data) != info.size:
                            raise EOFError(f"member {info.name} ends after {len(data)} of {info.size} bytes")
                        out[member] = data
                        if len(out) == len(bounds):
                            break
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ValueError(f"{src} is truncated or corrupt ({type(exc).__name__}: {first}); "
                         "delete it and download it again") from None
    missing = [m for m in bounds if m not in out]
    if missing:
        raise FileNotFoundError(f"{src} lacks {folder}/{missing[0]}; " + missing_data_message(name, data_dir))
    return out


# --------------------------------------------------------------------------- locating / downloading


def cifar_source(name: str, data_dir: str | os.PathLike | None = None) -> Path | None:
    """Path of the extracted folder or archive for ``name`` in ``data_dir``, or None if absent."""
    if name not in _CIFAR:
        raise ValueError(f"unknown CIFAR dataset {name!r}; allowed: cifar10, cifar100")
    archive, folder = _CIFAR[name][0], _CIFAR[name][1]
    root = Path(data_dir).expanduser() if data_dir else default_data_dir()
    for cand in (root / folder, root / archive):
        if cand.exists():
            return cand
    return None


def missing_data_message(name: str, data_dir: str | os.PathLike | None = None) -> str:
    archive, _, url = _CIFAR[name][:3]
    root = Path(data_dir).expanduser() if data_dir else default_data_dir()
    return (
        f"{name} not found: put {archive} (from {url}) or its extracted folder into {root} "
        f"(set it with --data-dir or PCD_DATA_DIR), or pass --download when the machine is online"
    )


def _md5(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def download_cifar(name: str, data_dir: str | os.PathLike | None = None, timeout: float = 30.0) -> Path:
    """Download the archive for ``name`` into ``data_dir`` and verify its MD5.

    Raises ``FileNotFoundError`` with the manual instructions when offline or on a bad checksum.
    """
    archive, _, url, md5 = _CIFAR[name][:4]
    root = Path(data_dir).expanduser() if data_dir else default_data_dir()
    root.mkdir(parents=True, exist_ok=True)
    target = root / archive
    tmp = target.with_suffix(".part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(tmp, "wb") as fh:
            while chunk := resp.read(1 << 20):
                fh.write(chunk)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise FileNotFoundError(f"download of {url} failed ({exc}); " + missing_data_message(name, data_dir)) from None
    if _md5(tmp) != md5:
        tmp.unlink(missing_ok=True)
        raise FileNotFoundError(f"download of {url} has a wrong MD5 checksum; " + missing_data_message(name, data_dir))
    tmp.replace(target)
    return target


def load_cifar_arrays(
    name: str, data_dir: str | os.PathLike | None = None, *, download: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_train, y_train, x_test, y_test)`` as uint8 ``[N, 3, 32, 32]`` and int64 labels.

    Reads the archive in place (members are read, never extracted) or the extracted folder.
    """
    if name not in _CIFAR:
        raise ValueError(f"unknown CIFAR dataset {name!r}; allowed: cifar10, cifar100")
    _, folder, _, _, train_members, test_member, label_key, n_classes = _CIFAR[name]
    src = cifar_source(name, data_dir)
    if src is None:
        if not download:
            raise FileNotFoundError(missing_data_message(name, data_dir))
        src = download_cifar(name, data_dir)

    bounds = {m: member_bound(name, m) for m in [*train_members, test_member]}

    def read_all(read) -> tuple:
        parts = [_batch_arrays(safe_unpickle(read(m)), label_key, f"{src}:{m}") for m in train_members]
        xt, yt = _batch_arrays(safe_unpickle(read(test_member)), label_key, f"{src}:{test_member}")
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), xt, yt

    if src.is_dir():
        def read(member: str) -> bytes:
            path = src / member
            if not path.is_file():
                raise FileNotFoundError(f"{path} is missing; " + missing_data_message(name, data_dir))
            size = path.stat().st_size
            if size > bounds[member]:
                raise ValueError(_size_message(name, f"{path}", size, bounds[member]))
            return _files.read_bytes(path, src, kind="cifar-batch", max_bytes=bounds[member], name=f"{name} batch")
        out = read_all(read)
    else:
        members = _read_archive_members(name, src, folder, bounds, data_dir)
        out = read_all(members.__getitem__)
    if out[0].shape[0] == 0 or out[2].shape[0] == 0:
        raise ValueError(f"{src}: the {'training' if out[0].shape[0] == 0 else 'test'} set has no images (0 rows)")
    for y in (out[1], out[3]):
        if y.size and (y.min() < 0 or y.max() >= n_classes):
            raise ValueError(f"{src}: labels must lie in [0, {n_classes - 1}]")
    return out


def load_digits_arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn digits as uint8 ``[N, 1, 8, 8]`` (0..16 scaled to 0..255), fixed 80/20 split."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = np.round(d.images * (255.0 / 16.0)).clip(0, 255).astype(np.uint8)[:, None]
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(y))
    n_test = len(y) // 5
    te, tr = perm[:n_test], perm[n_test:]
    return x[tr], y[tr], x[te], y[te]


# --------------------------------------------------------------------------- the device dataset


@dataclass
class ImageData:
    """A dataset held on one device as uint8 tensors, with batched augmentation.

    ``x_*``: uint8 ``[N, C, H, W]``; ``y_*``: int64 ``[N]``; ``mean``/``std``: float ``[C]`` in
    [0, 1] pixel units; ``pad``: crop padding (0 = no crop); ``flip``: random horizontal flips.
    """

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor
    num_classes: int
    pad: int = 0
    flip: bool = False

    @property
    def input_shape(self) -> tuple[int, int, int]:
        return tuple(self.x_train.shape[1:])  # type: ignore[return-value]

    def normalize(self, x_uint8: torch.Tensor) -> torch.Tensor:
        """``(x / 255 - mean) / std`` per channel, float32."""
        x = x_uint8.float().div_(255.0)
        return (x - self.mean.view(1, -1, 1, 1)) / self.std.view(1, -1, 1, 1)

    def augment(self, x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """Random crop with ``pad`` zero pixels and random horizontal flip, batched (uint8 in/out).

        Random numbers are drawn on the CPU from ``generator`` so a seed fixes them on any device.
        """
        b, c, h, w = x.shape
        if self.pad > 0:
            p = self.pad
            xp = torch.nn.functional.pad(x, (p, p, p, p))
            oy = torch.randint(0, 2 * p + 1, (b,), generator=generator).to(x.device)
            ox = torch.randint(0, 2 * p + 1, (b,), generator=generator).to(x.device)
            rows = (oy[:, None] + torch.arange(h, device=x.device))[:, :, None]  # [b, h, 1]
            cols = (ox[:, None] + torch.arange(w, device=x.device))[:, None, :]  # [b, 1, w]
            bidx = torch.arange(b, device=x.device)[:, None, None]
            x = xp.permute(0, 2, 3, 1)[bidx, rows, cols].permute(0, 3, 1, 2)
        if self.flip:
            f = (torch.rand(b, generator=generator) < 0.5).to(x.device)
            x = torch.where(f.view(-1, 1, 1, 1), x.flip(3), x)
        return x.contiguous()

    def train_batches(self, batch_size: int, generator: torch.Generator, augment: bool = True) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """One shuffled epoch of normalized, augmented batches (the last partial batch is kept)."""
        n = self.x_train.shape[0]
        perm = torch.randperm(n, generator=generator).to(self.x_train.device)
        for s in range(0, n, batch_size):
            idx = perm[s : s + batch_size]
            x = self.x_train[idx]
            if augment:
                x = self.augment(x, generator)
            yield self.normalize(x), self.y_train[idx]

    def test_batches(self, batch_size: int = 500) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for s in range(0, self.x_test.shape[0], batch_size):
            yield self.normalize(self.x_test[s : s + batch_size]), self.y_test[s : s + batch_size]

    def steps_per_epoch(self, batch_size: int) -> int:
        return -(-self.x_train.shape[0] // batch_size)


def load_dataset(
    name: str,
    *,
    data_dir: str | os.PathLike | None = None,
    device: str | torch.device = "cpu",
    max_train_samples: int | None = None,
    max_test_samples: int | None = None,
    download: bool = False,
    subset_seed: int = 0,
) -> ImageData:
    """Load ``name`` (digits | cifar10 | cifar100) onto ``device`` as an :class:`ImageData`.

    ``max_train_samples`` / ``max_test_samples`` keep a fixed random subset (seeded by
    ``subset_seed``) for small CPU runs. Raises ``ValueError`` for an unknown name or bad sizes,
    ``FileNotFoundError`` (saying which file to put where) when CIFAR is missing.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; allowed: {', '.join(DATASETS)}")
    for label, v in (("max_train_samples", max_train_samples), ("max_test_samples", max_test_samples)):
        if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1):
            raise ValueError(f"{label} must be a positive integer or None, got {v!r}")
    if name == "digits":
        xtr, ytr, xte, yte = load_digits_arrays()
        mean: tuple[float, ...] = (float(xtr.mean() / 255.0),)
        std: tuple[float, ...] = (float(xtr.std() / 255.0),)
        pad, flip, ncls = 0, False, 10
    else:
        xtr, ytr, xte, yte = load_cifar_arrays(name, data_dir, download=download)
        mean, std = _STATS[name]
        pad, flip, ncls = 4, True, _CIFAR[name][7]
    rng = np.random.default_rng(subset_seed)
    if max_train_samples is not None and max_train_samples < len(ytr):
        keep = np.sort(rng.permutation(len(ytr))[:max_train_samples])
        xtr, ytr = xtr[keep], ytr[keep]
    if max_test_samples is not None and max_test_samples < len(yte):
        keep = np.sort(rng.permutation(len(yte))[:max_test_samples])
        xte, yte = xte[keep], yte[keep]
    dev = torch.device(device)
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(dev)  # noqa: E731
    return ImageData(
        name=name,
        x_train=t(xtr),
        y_train=t(ytr),
        x_test=t(xte),
        y_test=t(yte),
        mean=torch.tensor(mean, dtype=torch.float32, device=dev),
        std=torch.tensor(std, dtype=torch.float32, device=dev),
        num_classes=ncls,
        pad=pad,
        flip=flip,
    )


def write_fake_cifar(path: str | os.PathLike, name: str = "cifar10", n_train: int = 100, n_test: int = 50, seed: int = 0) -> Path:
    """Write a tiny archive in the exact CIFAR "python version" format (for tests and demos).

    Images are random uint8 with a class-dependent mean colour so a network can learn them.
    Returns the archive path (``<path>/cifar-10-python.tar.gz`` or the CIFAR-100 name).
    """
    if name not in _CIFAR:
        raise ValueError(f"unknown CIFAR dataset {name!r}; allowed: cifar10, cifar100")
    archive, folder, _, _, train_members, test_member, label_key, ncls = _CIFAR[name]
    rng = np.random.default_rng(seed)
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)

    def batch(n: int) -> bytes:
        y = rng.integers(0, ncls, n)
        base = (y[:, None] * 37 % 256).astype(np.int64)
        x = np.clip(base + rng.integers(-40, 40, (n, 3072)), 0, 255).astype(np.uint8)
        return pickle.dumps({b"batch_label": b"fake", b"data": x, label_key.encode(): y.tolist()}, protocol=2)

    out = root / archive
    with tarfile.open(out, "w:gz") as tf:
        sizes = np.array_split(np.arange(n_train), len(train_members))
        for m, idx in zip(train_members, sizes):
            data = batch(len(idx))
            info = tarfile.TarInfo(f"{folder}/{m}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        data = batch(n_test)
        info = tarfile.TarInfo(f"{folder}/{test_member}")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return out
