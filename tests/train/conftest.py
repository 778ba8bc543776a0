import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)
    yield


@pytest.fixture(scope="session")
def cifar_dir(tmp_path_factory):
    """A tiny CIFAR-10 archive in the real "python version" format."""
    from pcd.train.data import write_fake_cifar

    d = tmp_path_factory.mktemp("cifar")
    write_fake_cifar(d, "cifar10", n_train=96, n_test=40, seed=1)
    return d
