"""The supervisor on a local Ray 'cluster' (``ray.init(num_cpus=2)``): runs execute as Ray tasks,
progress streams back into SQLite, cancel stops a running task, failures are recorded."""
from __future__ import annotations

import shutil
import tempfile
import threading

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'pcd-studio[ray]')")

from pcd.jobs import RunStore, Supervisor  # noqa: E402
from tests.jobs.conftest import REPO, wait_for  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_ray(ray_home):
    home = ray_home
    short = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # unix socket paths must stay short
    mp = pytest.MonkeyPatch()
    mp.setenv("HOME", str(home))
    mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
    mp.delenv("RAY_ADDRESS", raising=False)
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=short, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    try:
        yield
    finally:
        ray.shutdown()
        mp.undo()
        shutil.rmtree(short, ignore_errors=True)


def test_ray_backend_runs_streams_progress_cancels_and_fails(tmp_path, local_ray):
    store = RunStore(tmp_path)
    ok = store.submit({"epochs": 3, "sleep": 0.2})
    long = store.submit({"epochs": 500, "sleep": 0.2})
    bad = store.submit({"behaviour": "crash"})
    hung = store.submit({"behaviour": "hang"})
    sup = Supervisor(tmp_path, slots=2, backend="ray", runner="tests.jobs.runners:dispatch", poll_s=0.1,
                     cancel_grace_s=3.0)
    th = threading.Thread(target=sup.run, kwargs={"max_seconds": 120}, daemon=True)
    th.start()
    try:
        wait_for(lambda: store.get(ok)["status"] == "done", 90, what="ray run done")
        r = store.get(ok)
        assert r["device"].startswith("ray:cpu") and r["result"]["test_acc"] == pytest.approx(0.7)
        assert [m["epoch"] for m in store.metrics(ok)] == [1, 2, 3]  # streamed back through the actor
        wait_for(lambda: (store.get(long)["epoch"] or 0) >= 1, 60, what="long run progressing")
        assert store.get(long)["status"] == "running"
        store.cancel(long)
        wait_for(lambda: store.get(long)["status"] == "cancelled", 15, what="ray run cancelled")
        wait_for(lambda: store.get(bad)["status"] == "failed", 60, what="crash recorded")
        assert store.get(bad)["error"] == "RuntimeError: boom: simulated crash in epoch 1"
        # a task that ignores the cancel flag is force-cancelled (ray.cancel(force=True)) after the grace
        wait_for(lambda: store.get(hung)["status"] == "running" and store.get(hung)["progress"] > 0, 60,
                 what="hung task reporting")
        store.cancel(hung)
        wait_for(lambda: store.get(hung)["status"] == "cancelled", 20, what="hung ray task force-cancelled")
        assert "worker killed after 3 s" in store.get(hung)["error"]
        assert not sup.jobs  # both slots free again
    finally:
        sup.stop()
        th.join(timeout=30)
    assert not th.is_alive()
