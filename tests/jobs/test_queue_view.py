"""Paging, SQL aggregates and change markers of the run store (issue 24, part 6): the queue tab and
``runs list`` read counts and one page; summaries stream the SQL-extracted fields; an unchanged
store is not re-read. Speed at 200k runs: ``benchmarks/bench_store_scale.py``."""
from __future__ import annotations

import json
import math

import pytest

from pcd.cli import main as cli_main
from pcd.jobs import results as R
from pcd.jobs.queue_view import done_studies, queue_page, study_points, summary_rows
from pcd.jobs.store import RunStore


def _store(tmp_path, n=12):
    s = RunStore(tmp_path / "d")
    ids = s.submit_many([{"method": "pcd" if i % 2 else "ws", "seed": i % 3, "tau": 0.02 if i % 4 else 0.05}
                         for i in range(n)])
    return s, ids


def _finish(s, result):
    run = s.claim("w", "cpu:0")
    assert s.finish(run["id"], run["token"], "done", result=result)
    return run["id"]


def test_list_pages_newest_first_and_iter_runs_streams(tmp_path):
    s, ids = _store(tmp_path)
    assert [r["id"] for r in s.list()] == ids  # callers that ask nothing keep oldest first, all
    assert [r["id"] for r in s.list(limit=5, newest_first=True)] == ids[::-1][:5]
    assert [r["id"] for r in s.list(limit=5, offset=5, newest_first=True)] == ids[::-1][5:10]
    assert [r["id"] for r in s.list(limit=5, offset=10, newest_first=True)] == ids[::-1][10:]
    s.cancel(ids[3])
    assert [r["id"] for r in s.list("cancelled", limit=1)] == [ids[3]]
    assert [r["id"] for r in s.iter_runs(batch=5)] == ids
    assert [r["id"] for r in s.iter_runs(newest_first=True, batch=5)] == ids[::-1]
    assert [r["id"] for r in s.iter_runs("queued", newest_first=True, batch=2)] == [i for i in ids[::-1] if i != ids[3]]
    with pytest.raises(ValueError, match="limit"):
        s.list(limit=-1)


def test_queue_page_rereads_only_what_changed(tmp_path):
    s, ids = _store(tmp_path, n=120)
    p1 = queue_page(s)
    assert p1.total == 120 and p1.counts["queued"] == 120 and p1.pages == 3 and p1.active
    assert [r["id"] for r in p1.runs] == ids[::-1][:50]
    assert queue_page(s, previous=p1) is p1  # nothing changed: the last read is reused
    other = RunStore(tmp_path / "d")  # another process cancels a run
    other.cancel(ids[0])
    p2 = queue_page(s, previous=p1)
    assert p2 is not p1 and p2.counts["cancelled"] == 1 and p2.version > p1.version
    p3 = queue_page(s, page=3, previous=p2)
    assert p3 is not p2 and [r["id"] for r in p3.runs] == ids[::-1][100:]
    run = s.claim("w", "cpu:0")
    p4 = queue_page(s, page=3, previous=p3)
    assert [r["id"] for r in p4.running] == [run["id"]]


def test_summary_from_sql_fields_equals_the_full_read(tmp_path):
    s, ids = _store(tmp_path, n=12)
    for i in range(10):
        res = {"test_acc": 90.0 + i, "group_sparsity": 10.0 * i, "seconds": 3.0 + i, "diverged": i == 4,
               "history": [{"epoch": 1, "test_acc": 1.0}], "grouping": "filter",
               "export": {"params_before": 1000, "params_after": 300 + 10 * i, "flops_before": 50.0,
                          "flops_after": 20.0 + i, "latency_ms_before": 1.0, "latency_ms_after": 0.5,
                          "file_bytes_before": 4000, "file_bytes_after": 1000 + i, "test_acc": 89.0 + i}}
        if i == 7:  # a result that carries its own config (the runner's validated one) wins
            res["config"] = {"method": "pcd", "seed": 9, "tau": 0.1, "epochs": 3}
        if i == 8:
            del res["export"]
        _finish(s, res)
    full = R.aggregate(R.run_points(s.list("done")))
    fast = summary_rows(s)
    assert len(full) == len(fast) >= 3
    for a, b in zip(full, fast):
        for k, v in a.items():
            w = b[k]
            assert (math.isclose(v, w, rel_tol=1e-12) if isinstance(v, float) and isinstance(w, float)
                    else v == w), (k, v, w)
    study = full[0]["study"]
    assert summary_rows(s, study=study) == [r for r in fast if study in r["study"]]
    # the results explorer: studies from one SQL aggregate, one study's points (newest `limit`), rows of all
    answer = done_studies(s)
    marker, studies = answer
    assert sum(v["runs"] for v in studies.values()) == 10 and set(studies) == {r["study"] for r in full}
    assert done_studies(s, answer) is answer  # nothing finished since: not re-read
    for name, info in studies.items():
        pts, rows = study_points(s, info)
        assert rows == [r for r in fast if r["study"] == name] and len(pts) == info["runs"]
        few, rows_few = study_points(s, info, limit=1)  # bounded: the newest run only
        assert len(few) == 1 and few[0]["id"] == info["newest"] and rows_few == R.aggregate(few)
    _finish(s, {"test_acc": 1.0})
    assert done_studies(s, answer) is not answer


def test_runs_list_pages_in_the_cli(tmp_path, capsys):
    s, ids = _store(tmp_path, n=60)
    d = str(tmp_path / "d")
    assert cli_main(["runs", "list", "--data-dir", d]) == 0
    out = capsys.readouterr().out.splitlines()
    body = [ln for ln in out[1:] if ln.strip()[:1].isdigit()]
    assert [int(ln.split()[0]) for ln in body] == ids[::-1][:50]
    assert "runs 1-50 of 60, newest first; more with --offset 50, or --all" in out[-1]
    assert cli_main(["runs", "list", "--data-dir", d, "--limit", "3", "--offset", "3", "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ids[::-1][3:6]
    assert cli_main(["runs", "list", "--data-dir", d, "--all", "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ids[::-1]
    assert cli_main(["runs", "list", "--data-dir", d, "--limit", "0"]) == 2
    assert "--limit" in capsys.readouterr().err


def test_estimates_from_the_light_newest_runs_equal_the_full_read(tmp_path):
    from pcd.jobs.queue_view import estimate_basis

    s, ids = _store(tmp_path, n=8)
    for i in range(6):
        rid = _finish(s, {"seconds": 10.0 + i, "epochs_completed": 2, "test_acc": 1.0,
                          "history": [{"epoch": 1}] * 3})
        s._conn.execute("UPDATE runs SET started_at=?, finished_at=? WHERE id=?", (100.0, 130.0 + i, rid))
    cfg = s.get(ids[0])["config"]
    full = R.estimate_seconds(s.list(), cfg)
    assert full is not None and R.estimate_seconds(estimate_basis(s), cfg) == full
    newest = [r["id"] for r in s.iter_done(["seconds"], newest_first=True, limit=4, batch=3)]
    assert newest == sorted((r["id"] for r in s.list("done")), reverse=True)[:4]
    assert len(estimate_basis(s, n=2)) == 2
