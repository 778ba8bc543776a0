"""pcd.experiments.jd: samplers, aggregation, IWRM on digits, Gramian memory, the ``jd`` CLI."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from pcd.cli import main
from pcd.experiments import gramian_memory, iwrm, jd

torch.set_num_threads(1)


# ---------------------------------------------------------------------- samplers / aggregation


def test_samplers_have_their_defining_structure():
    J = jd.sample_jacobians("cancelling", 4, 3)
    assert J.shape == (3, 4, 12)
    np.testing.assert_allclose(J.sum(axis=1), 0.0, atol=1e-12)
    R = jd.sample_jacobians("rank_deficient", 5, 3)
    assert all(np.linalg.matrix_rank(r) == 2 for r in R)
    S = jd.sample_jacobians("scaled", 5, 20)
    norms = np.linalg.norm(S, axis=-1)
    assert norms.max() / norms.min() > 1e3  # rows span several orders of magnitude
    A = jd.sample_jacobians("aligned", 3, 10)
    cos = np.einsum("bkn,bn->bk", A, A[:, 0]) / (np.linalg.norm(A, axis=-1) * np.linalg.norm(A[:, 0], axis=-1)[:, None])
    assert cos.min() >= 0.5  # g1 already gives every secondary more than PCD's tau share
    np.testing.assert_array_equal(jd.sample_jacobians("random", 3, 2, seed=1), jd.sample_jacobians("random", 3, 2, seed=1))
    with pytest.raises(ValueError, match="unknown Jacobian family"):
        jd.sample_jacobians("gaussian", 3, 2)
    with pytest.raises(ValueError, match="K must be"):
        jd.sample_jacobians("random", 1, 2)


def test_aggregate_mean_is_the_row_average_and_validates():
    J = np.arange(12.0).reshape(3, 4)
    d, w = jd.aggregate("ws", J)
    np.testing.assert_allclose(d, J.mean(axis=0))
    np.testing.assert_allclose(w, [1 / 3] * 3)
    with pytest.raises(ValueError, match=r"shape \[K, n\]"):
        jd.aggregate("ws", np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        jd.aggregate("ws", np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="losses must have 3"):
        jd.aggregate("famo", J, losses=[1.0, 2.0])


def test_property_table_is_json_ready(tmp_path):
    table = jd.property_table(["ws", "upgrad"], samples=1)
    assert list(table) == ["ws", "upgrad"]
    for rep in table.values():
        assert set(jd.PROPERTIES) <= set(rep) and set(rep["worst_violation"]) == set(jd.PROPERTIES)
    assert table["upgrad"]["paper"] == {"non_conflicting": True, "linear_under_scaling": True, "weighted": True}
    rows = jd.property_rows(table)
    assert [r["all_three_jd"] for r in rows] == [False, True]
    assert all(r["matches_paper"] for r in rows)
    with pytest.raises(ValueError, match="unknown method"):
        jd.property_table(["ws", "nope"])


# ---------------------------------------------------------------------- IWRM


def test_per_sample_jacobian_rows_average_to_the_sgd_gradient():
    torch.manual_seed(0)
    model = jd.TinyCNN(4)
    x, y = torch.randn(6, 1, 8, 8), torch.arange(6) % 10
    losses, J = jd._per_sample_jacobian(model, x, y)
    assert J.shape == (6, sum(p.numel() for p in model.parameters()))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    g = torch.cat([t.reshape(-1) for t in grads])
    torch.testing.assert_close(J.mean(0), g, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(losses.mean(), loss.detach(), rtol=1e-5, atol=1e-6)


def test_iwrm_config_validates():
    with pytest.raises(ValueError, match="unknown method"):
        jd.IWRMConfig(methods=("nope",))
    with pytest.raises(ValueError, match="batch_size"):
        jd.IWRMConfig(batch_size=64, n_train=32)
    with pytest.raises(ValueError, match="lr must be"):
        jd.IWRMConfig(lr=0.0)
    with pytest.raises(ValueError, match="seeds"):
        jd.IWRMConfig(seeds=())
    assert jd.IWRMConfig(batch_size=16).lr_for("pcgrad") == pytest.approx(0.05 / 16)
    assert jd.IWRMConfig(lr_overrides={"pcgrad": 0.01}).lr_for("pcgrad") == 0.01


@pytest.mark.slow
def test_iwrm_run_finishes_with_finite_metrics_and_sgd_cosine_one():
    cfg = jd.IWRMConfig(methods=("ws", "upgrad", "pcd"), seeds=(0,), steps=30, batch_size=8, lr=0.05,
                        n_train=256, eval_every=10)
    seen = []
    res = jd.run_iwrm(cfg, progress=lambda f, t: seen.append(f))
    assert seen[0] == 0.0 and seen[-1] == 1.0
    assert res["steps"] == [0, 10, 20, 30]
    for name in ("ws", "upgrad", "pcd"):
        r = res["methods"][name]
        assert not r["diverged_at"]
        assert all(math.isfinite(v) for v in r["train_loss"][0] + r["test_acc"][0] + r["cosine"][0])
        assert len(r["cosine"][0]) == 30 and all(-1 - 1e-9 <= c <= 1 + 1e-9 for c in r["cosine"][0])
        assert r["train_loss"][0][-1] < r["train_loss"][0][0]  # it learns
        assert r["final_test_acc"] > 0.2  # above chance (10 %) after 30 steps
    # Mean is exactly SGD; same initial weights for every method
    assert all(c == pytest.approx(1.0, abs=1e-12) for c in res["methods"]["ws"]["cosine"][0])
    assert len({res["methods"][m]["train_loss"][0][0] for m in res["methods"]}) == 1
    # UPGrad's update is not the SGD gradient (the paper's lower cosine)
    assert res["methods"]["upgrad"]["early_cosine"] < 0.999
    json.dumps(res, allow_nan=False)  # plain data


def test_iwrm_divergence_is_recorded_not_raised(monkeypatch):
    real, calls = jd._per_sample_jacobian, []

    def blows_up_at_step_3(model, x, y):
        calls.append(1)
        losses, J = real(model, x, y)
        return (losses, J * float("nan")) if len(calls) == 3 else (losses, J)

    monkeypatch.setattr(iwrm, "_per_sample_jacobian", blows_up_at_step_3)
    cfg = jd.IWRMConfig(methods=("ws",), seeds=(0,), steps=6, batch_size=8, n_train=64, eval_every=2)
    r = jd.run_iwrm(cfg)["methods"]["ws"]
    assert r["diverged_at"] == [3]
    assert math.isfinite(r["train_loss"][0][1]) and all(math.isnan(v) for v in r["train_loss"][0][2:])
    assert len(r["cosine"][0]) == 6 and math.isnan(r["cosine"][0][-1])
    assert math.isnan(jd.iwrm_rows({"methods": {"ws": r}})[0]["final_train_loss"])


# ---------------------------------------------------------------------- Gramian memory


def test_memory_validates():
    with pytest.raises(ValueError, match="batch size"):
        jd.measure_gramian_memory([0])
    with pytest.raises(ValueError, match="unknown mode"):
        jd.measure_gramian_memory([4], modes=("magic",))
    with pytest.raises(ValueError, match="device"):
        jd.measure_gramian_memory([4], device="tpu")


def test_memory_without_torchjd_measures_the_rest(monkeypatch):
    monkeypatch.setattr(gramian_memory, "torchjd_available", lambda: False)
    with pytest.raises(ValueError, match="needs torchjd"):
        jd.measure_gramian_memory([4], modes=("autogram",))
    mem = jd.measure_gramian_memory([4], width=4, repeats=1)
    assert list(mem["modes"]) == ["erm", "jacobian"]
    assert len(mem["skipped"]) == 2 and all("torchjd" in s for s in mem["skipped"])
    assert "reduction_vs_autojac" not in mem


@pytest.mark.slow
def test_gramian_is_the_same_and_far_leaner_than_torchjd_autojac():
    pytest.importorskip("torchjd")
    mem = jd.measure_gramian_memory([8, 32], width=8, repeats=1)
    assert set(mem["modes"]) == set(jd.MEMORY_MODES) and not mem["skipped"]
    assert max(mem["gram_rel_max_diff"]) < 1e-5  # every mode computes the same G = J J^T
    assert all(t > 0 for r in mem["modes"].values() for t in r["seconds"])
    if mem["reduction_vs_autojac"] is None or None in mem["modes"]["autojac"]["peak_mb"]:
        pytest.skip(f"peak memory not measurable here: {mem['memory_source']}")
    # autojac backpropagates a B-row Jacobian through every activation: it grows much faster
    aj, ag = mem["modes"]["autojac"]["peak_mb"], mem["modes"]["autogram"]["peak_mb"]
    assert aj[1] > aj[0]
    assert mem["reduction_vs_autojac"][1] > 0.5  # paper: 87-93 % at batch 32
    assert ag[1] < aj[1]


# ---------------------------------------------------------------------- CLI


@pytest.mark.slow
def test_cli_writes_the_documented_json(tmp_path, capsys):
    out = tmp_path / "jd.json"
    rc = main(["jd", "--json", str(out), "--methods", "ws,mgda,upgrad", "--samples", "1", "--iwrm-methods", "ws",
               "--seeds", "0", "--steps", "5", "--batch-size", "8", "--n-train", "64", "--eval-every", "5"])
    assert rc == 0
    data = json.loads(out.read_text())
    props = data["properties"]
    assert set(props) == {"ws", "mgda", "upgrad"}
    assert props["upgrad"]["non_conflicting"] and props["upgrad"]["linear_under_scaling"] and props["upgrad"]["weighted"]
    assert props["mgda"]["non_conflicting"] and not props["mgda"]["linear_under_scaling"]
    assert not props["ws"]["non_conflicting"]
    assert "value" in props["ws"]["worst_violation"]["non_conflicting"]
    assert data["iwrm"]["methods"]["ws"]["final_test_acc"] is not None
    assert "upgrad" in capsys.readouterr().err  # the summary


def test_cli_bad_input_is_one_line_exit_2(capsys):
    assert main(["jd", "--methods", "nope", "--no-iwrm"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: unknown method")
    assert main(["jd", "--no-properties", "--no-iwrm"]) == 2
    assert main(["jd", "--no-properties", "--batch-size", "1"]) == 2


def test_memory_child_does_not_rerun_the_callers_main_script(tmp_path):
    """The studio's "Measure": a spawned child re-ran the parent's main script (``app.py`` under
    ``streamlit run``, with its whole warm-up) before measuring. A script with top-level side
    effects (as ``app.py`` has) runs once: in the parent only."""
    import subprocess
    import sys
    from pathlib import Path

    marker = tmp_path / "ran.txt"
    script = tmp_path / "app_like.py"
    script.write_text(
        "import os\n"
        f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"  # top level, unguarded, like app.py
        "from pcd.experiments import gramian_memory\n"
        "if __name__ == '__main__':\n"
        "    out = gramian_memory.measure_gramian_memory([2], width=2, repeats=1, modes=('erm',))\n"
        "    print(out['batch_sizes'])\n")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, str(script)], cwd=root, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[2]" in done.stdout
    assert marker.read_text().split() == ["__main__"]  # not also "__mp_main__" (the child)
