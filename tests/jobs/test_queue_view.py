"""Paging, SQL aggregates and change markers of the run store (issue 24, part 6): the queue tab and
``runs list`` read counts and one page; summaries stream the SQL-extracted fields; an unchanged
store is not re-read. Speed at 200k runs: ``benchmarks/bench_store_scale.py``."""
from __future__ import annotations

import json

import pytest

from pcd.cli import main as cli_main
from pcd.jobs.queue_view import queue_page
from pcd.jobs.store import RunStore
from tests.jobs._stores import finish_next, seeded_store


def test_list_pages_newest_first_and_iter_runs_streams(tmp_path):
    s, ids = seeded_store(tmp_path)
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
    s, ids = seeded_store(tmp_path, n=120)
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


def test_runs_list_pages_in_the_cli(tmp_path, capsys):
    s, ids = seeded_store(tmp_path, n=60)
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
    from pcd.train import studies as R

    s, ids = seeded_store(tmp_path, n=8)
    for i in range(6):
        rid = finish_next(s, {"seconds": 10.0 + i, "epochs_completed": 2, "test_acc": 1.0,
                          "history": [{"epoch": 1}] * 3})
        s._conn.execute("UPDATE runs SET started_at=?, finished_at=? WHERE id=?", (100.0, 130.0 + i, rid))
    cfg = s.get(ids[0])["config"]
    full = R.estimate_seconds(s.list(), cfg)
    assert full is not None and R.estimate_seconds(estimate_basis(s), cfg) == full
    newest = [r["id"] for r in s.iter_done(["seconds"], newest_first=True, limit=4, batch=3)]
    assert newest == sorted((r["id"] for r in s.list("done")), reverse=True)[:4]
    assert len(estimate_basis(s, n=2)) == 2
