"""pcd._workers: plain worker processes (python -m pcd._workers) that run the allowed library calls and
answer in order; an error comes back as the same exception; a dead worker fails its calls, never hangs."""
from __future__ import annotations

import io
import pickle

import pytest

from pcd import _workers as W
from pcd.experiments import synthetic


@pytest.fixture
def worker():
    w = W.Worker()
    yield w
    w.close()


def test_calls_answer_in_order_with_the_same_numbers(worker):
    args = [{"Ks": [K], "methods": ["pcd", "ws"], "budgets": [50, 100], "lr": 0.03, "optimizer": "adam", "tau": 0.3}
            for K in (2, 5, 3)]
    futs = [worker.call("pcd.experiments.synthetic:kdw_budgets", **a) for a in args]
    for a, fut in zip(args, futs):
        assert fut.result(timeout=120) == synthetic.kdw_budgets(**a)  # bit for bit (== on the floats)


def test_a_bad_setting_is_the_same_value_error(worker):
    fut = worker.call("pcd.experiments.synthetic:kdw_budgets", Ks=[2], methods=["ws"], budgets=[10], lr=-1.0)
    with pytest.raises(ValueError, match="lr"):
        fut.result(timeout=120)
    ok = worker.call("pcd.experiments.synthetic:kdw_budgets", Ks=[2], methods=["ws"], budgets=[10])
    assert ok.result(timeout=120)[10][0]["K"] == 2  # the worker goes on


@pytest.mark.parametrize("name", ["os:system", "pcd.experiments.synthetic:kdw", "", None, 3])
def test_only_the_allowed_calls_run(worker, name):
    with pytest.raises(ValueError, match="a worker runs only"):
        worker.call(name)
    out = io.BytesIO()
    W._serve(io.BytesIO(_message((name, {}))), out)  # the worker itself refuses it too
    ok, exc = pickle.loads(out.getvalue()[8:])
    assert not ok and isinstance(exc, ValueError)


def test_a_dead_worker_fails_its_calls(worker):
    fut = worker.call("pcd.experiments.synthetic:kdw_budgets", Ks=[65], methods=["mgda"], budgets=[20000])
    worker.kill()
    with pytest.raises(W.WorkerDied):
        fut.result(timeout=60)
    with pytest.raises(W.WorkerDied):
        worker.call("pcd.experiments.synthetic:kdw_budgets", Ks=[2], methods=["ws"], budgets=[10]).result(timeout=10)


def test_a_broken_message_ends_the_serve_loop():
    out = io.BytesIO()
    W._serve(io.BytesIO(b"\x05\x00\x00"), out)  # a cut length prefix: the pipe closed
    assert out.getvalue() == b""
    W._serve(io.BytesIO((W.MAX_MESSAGE + 1).to_bytes(8, "little")), out)  # an absurd length
    assert out.getvalue() == b""


def _message(obj) -> bytes:
    data = pickle.dumps(obj)
    return len(data).to_bytes(8, "little") + data


def test_calls_wait_here_one_at_a_time_and_a_cancelled_one_is_dropped(worker):
    name = "pcd.experiments.synthetic:kdw_budgets"
    slow = worker.call(name, Ks=[65], methods=["pcd"], budgets=[400])
    dropped = worker.call(name, Ks=[2], methods=["ws"], budgets=[10])
    last = worker.call(name, Ks=[3], methods=["ws"], budgets=[10])
    assert dropped.cancel()  # not sent yet: the worker never runs it
    assert not slow.cancel()  # in the worker: it finishes
    assert last.result(timeout=120)[10][0]["K"] == 3 and slow.result(timeout=120)[400][0]["K"] == 65
    assert dropped.cancelled()
