"""Method tests: TorchJD oracles run torch on tiny matrices; one thread is plenty on a shared 2-core machine."""
import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    try:
        import torch
    except ImportError:  # the oracle tests skip without torch/torchjd
        return
    torch.set_num_threads(1)
