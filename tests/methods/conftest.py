"""Method tests: TorchJD oracles run torch on tiny matrices; one thread is plenty on a shared 2-core machine."""
import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    try:
        import torch
    except ImportError:  # the oracle tests skip without torch/torchjd
        return
    torch.set_num_threads(1)


@pytest.fixture
def torch():
    """torch, for the TorchJD oracle tests (the test skips without it)."""
    return pytest.importorskip("torch")


@pytest.fixture
def agg(torch):
    """``torchjd.aggregation``, the test oracle (the test skips without torch/torchjd)."""
    return pytest.importorskip("torchjd.aggregation")
