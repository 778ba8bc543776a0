"""pcd.monitor: the training-geometry recorder, its reader, the collapse rule and the CLI summary."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

import pcd.methods as M
from pcd import engine, monitor
from pcd.cli import main as cli
from pcd.studio import lesson
from pcd.train.step import gram_update

# ---------------------------------------------------------------------------- loops that record

def _mlp_loop(path, steps: int, record: bool, every: int = 1, seed: int = 0, from_grad: bool = False):
    """A plain two-loss loop (cross-entropy + group lasso, SGD on their sum), optionally recorded
    (``from_grad``: the primary's gradient taken from the loop's own ``p.grad``)."""
    torch.manual_seed(seed)
    X, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Dropout(0.1), torch.nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rec = monitor.Recorder(path, model.parameters(), every=every, seed=3) if record else None
    for _ in range(steps):
        ce = torch.nn.functional.cross_entropy(model(X), y)
        gl = model[0].weight.norm(dim=0).sum()
        if rec is not None:
            rec.step([ce, gl], weights=[1.0, 0.05] if from_grad else None)
        opt.zero_grad()
        (ce + 0.05 * gl).backward()
        if rec is not None:
            rec.after_backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def _saddle_losses(th):
    """The saddle toy (pcd.problems.saddle2d) written in torch."""
    L1 = (th[0] * th[0] - 4.0) ** 2 / 4 + th[1] * th[1] / 2
    L2 = torch.relu((th - torch.tensor([2.0, 0.0], dtype=th.dtype)).abs() - 0.5).sum()
    return L1, L2


def _saddle_loop(path, name: str, start, steps: int, lr: float):
    """The saddle toy trained by method ``name`` through the torch integration (gram_update + SGD),
    with a recorder; returns the end point."""
    th = torch.nn.Parameter(torch.tensor(start, dtype=torch.float64))
    opt = torch.optim.SGD([th], lr=lr)
    method = M.make(name)
    state = method.init(1, 2)
    rec = monitor.Recorder(path, [th], every=10)
    for _ in range(steps):
        L1, L2 = _saddle_losses(th)
        rec.step([L1, L2])
        g1, = torch.autograd.grad(L1, [th], retain_graph=True)
        g2, = torch.autograd.grad(L2, [th])
        out = gram_update([th], [[(0, g1)], [(0, g2)]], method, state, losses=np.array([L1.item(), L2.item()]))
        state = out.step.state
        opt.step()
    return th.detach().numpy()


# ---------------------------------------------------------------------------- the recorder

def test_recorder_leaves_training_bit_identical(tmp_path):
    a = _mlp_loop(tmp_path / "a.jsonl", 25, record=False)
    b = _mlp_loop(tmp_path / "b.jsonl", 25, record=True, every=1)
    assert all(torch.equal(p, q) for p, q in zip(a, b))
    assert len(monitor.read(tmp_path / "b.jsonl").steps) == 25


def test_primary_gradient_from_the_loops_own_backward(tmp_path):
    """``step(weights=...)`` + ``after_backward()``: g_1 = p.grad - w_2 g_2, no second backward; the
    same Gram matrix as autograd's to rounding, and training still bit-identical."""
    a = _mlp_loop(tmp_path / "a.jsonl", 12, record=True, every=4)
    b = _mlp_loop(tmp_path / "b.jsonl", 12, record=True, every=4, from_grad=True)
    c = _mlp_loop(tmp_path / "c.jsonl", 12, record=False)
    assert all(torch.equal(p, q) and torch.equal(p, r) for p, q, r in zip(a, b, c))
    ta, tb = monitor.read(tmp_path / "a.jsonl"), monitor.read(tmp_path / "b.jsonl")
    assert list(tb.steps) == [0, 4, 8] and np.array_equal(ta.losses, tb.losses)
    assert np.allclose(ta.gram, tb.gram, rtol=1e-5, atol=1e-9)
    assert np.allclose(ta.ratio["ws"], tb.ratio["ws"], rtol=1e-4)
    with pytest.raises(ValueError, match="w_1 != 0"):
        monitor.Recorder(tmp_path / "d.jsonl", []).step([1.0, 2.0], weights=[0.0, 1.0])


def test_counterfactual_weights_equal_each_methods_own_call(tmp_path):
    _mlp_loop(tmp_path / "r.jsonl", 12, record=True, every=3)
    tr = monitor.read(tmp_path / "r.jsonl")
    assert list(tr.steps) == [0, 3, 6, 9]
    evaluable = [n for n in M.available() if not M.get(n).needs_jacobian]
    assert tr.methods == evaluable and set(tr.header["skipped"]) == {n for n in M.available() if M.get(n).needs_jacobian}
    assert "graddrop" in tr.header["skipped"]
    for name in evaluable:
        m, state = M.make(name), None
        for t, step in enumerate(tr.steps):
            rng = np.random.default_rng([3, int(step)]) if m.stochastic else None
            out = m(tr.gram[t][None], state=state, losses=tr.losses[t][None], rng=rng)
            state = out.state
            w = np.asarray(out.weights)[0]
            assert np.array_equal(tr.weights[name][t], w), name  # exact: floats round-trip through JSON
            d2 = w @ tr.gram[t] @ w
            assert tr.ratio[name][t] == np.sqrt(max(d2, 0.0) / tr.gram[t][0, 0])
    # the Gram matrix is the training loop's own (pcd.train.step.gram_matrix): cos and norms follow from it
    assert np.allclose(tr.norms[:, 0], np.sqrt(tr.gram[:, 0, 0])) and np.all(np.abs(tr.cosines) <= 1)


def test_one_d_conflict_collapses_for_the_symmetric_methods(tmp_path):
    """g1 = 0.5, g2 = -0.5 (lesson.one_d_case): every symmetric update is exactly 0, PCD's is not."""
    x = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    opt = torch.optim.SGD([x], lr=0.1)
    rec = monitor.Recorder(tmp_path / "c.jsonl", [x], every=1)
    for _ in range(8):
        f1, f2 = 0.5 * x.sum(), -0.5 * x.sum()
        rec.step([f1, f2])
        opt.zero_grad()
        (f1 + f2).backward()
        opt.step()
    tr = monitor.read(tmp_path / "c.jsonl")
    studio = {r["method"]: r for r in lesson.one_d_case(methods=("ws", "mgda", "pcgrad"))["rows"]}
    col = monitor.collapsed(tr)
    for name in ("ws", "mgda", "pcgrad"):
        assert studio[name]["norm"] == 0.0 and np.all(tr.ratio[name] == 0.0) and col[name].all()
    assert not col["pcd"].any() and np.allclose(tr.ratio["pcd"], 1.0)
    s = monitor.summary(tr)
    assert s["methods"]["ws"] == {"collapsed_fraction": 1.0, "longest": {"from_step": 0, "to_step": 7, "records": 8},
                                  "median_ratio": 0.0}
    assert "PCD's did not" in s["finding"] and "Over steps 0–7" in s["finding"] and "MGDA" in s["finding"]


@pytest.mark.parametrize("name", ["ws", "mgda", "pcgrad"])
def test_saddle_toy_collapse_where_the_engine_says_it_stalls(tmp_path, name):
    start, steps, lr = [-2.55, 0.40], 2000, 0.01
    res = engine.run("saddle2d", [name], np.array([start]), steps=steps, optimizer="sgd", lr=lr)
    assert res.diagnosis[0, 0] == "conflict_equilibrium"
    end = _saddle_loop(tmp_path / "s.jsonl", name, start, steps, lr)
    assert np.allclose(end, res.end[0, 0], atol=1e-9)  # the torch loop is the engine's trajectory
    tr = monitor.read(tmp_path / "s.jsonl")
    col = monitor.collapsed(tr)
    tail = slice(int(0.8 * len(tr.steps)), None)
    assert col[name][tail].all()                       # stalled at the end: marked collapsed
    assert tr.norms[tail, 0].min() > 0.2               # while ||g1|| is not small
    assert not col["pcd"].any()                        # PCD's counterfactual never collapses
    lg = monitor.summary(tr)["methods"][name]["longest"]
    assert lg["to_step"] == int(tr.steps[-1])
    assert monitor.finding(tr) is not None


def test_collapse_rule_numbers():
    g1 = np.array([1.0, 1.0, 0.05, 1.0, 1.0, 2e-4])
    assert list(monitor.g1_not_small(g1)) == [True, True, False, True, True, False]
    tr = monitor.Trace(header={"every": 1}, steps=np.arange(6), losses=np.zeros((6, 2)),
                       gram=np.array([[[v * v, 0.0], [0.0, 1.0]] for v in g1]),
                       ratio={"ws": np.array([0.05, 0.09, 0.01, 0.11, 0.0, 0.0])}, weights={"ws": np.zeros((6, 2))})
    assert list(monitor.collapsed(tr)["ws"]) == [True, True, False, False, True, False]
    assert monitor.stretches(monitor.collapsed(tr)["ws"]) == [(0, 1), (4, 4)]


def test_snapshot_vectors_k2_and_k3():
    J = np.array([[2.0, 0.0, 0.0], [-1.0, 1.0, 0.0], [0.5, -1.0, 1.0]])
    v = monitor.snapshot_vectors(J[:2] @ J[:2].T)
    assert v["angle"] == pytest.approx(135.0) and v["norm2"] == pytest.approx(np.sqrt(2) / 2)
    v3 = monitor.snapshot_vectors(J @ J.T)
    # g3's in-plane part is (0.5, -1) in the (g1, g2) plane's orthonormal frame: angle -63.4 deg
    assert v3["angle3"] == pytest.approx(np.degrees(np.arctan2(-1.0, 0.5)))
    assert v3["norm3"] == pytest.approx(np.hypot(0.5, 1.0) / 2.0)
    assert v3["g3_out"] == pytest.approx(1.0 / np.linalg.norm(J[2]))
    with pytest.raises(ValueError, match="g1 = 0"):
        monitor.snapshot_vectors(np.diag([0.0, 1.0]))


# ---------------------------------------------------------------------------- hostile files

def _good(tmp_path):
    p = tmp_path / "good.jsonl"
    x = torch.nn.Parameter(torch.tensor([1.0]))
    rec = monitor.Recorder(p, [x], every=1, methods=["pcd", "ws"])
    for _ in range(3):
        rec.step([x.sum() * 0.5, x.sum() * -0.25])
    return p


def _hostile(tmp_path, kind):
    p = _good(tmp_path)
    text = p.read_text()
    lines = text.splitlines(keepends=True)
    q = tmp_path / f"{kind}.jsonl"
    if kind == "truncated":
        q.write_text(text[:-15])
    elif kind == "nan":
        q.write_text(text.replace('"loss":[0.5', '"loss":[NaN', 1))
    elif kind == "infinity":
        q.write_text(text.replace('"r":', '"r":1e999,"x":', 1))
    elif kind == "null_gram":
        q.write_text(lines[0] + lines[1].replace('"gram":[[0.25', '"gram":[[null', 1))
    elif kind == "empty":
        q.write_text("")
    elif kind == "header_only":
        q.write_text(lines[0])
    elif kind == "not_monitor":
        q.write_text('{"a": 1}\n')
    elif kind == "binary":
        q.write_bytes(b"\xff\xfe\x00" * 10)
    elif kind == "huge_k":
        q.write_text(lines[0].replace('"K":2', '"K":100000', 1) + lines[1])
    elif kind == "long_line":
        q.write_text(lines[0] + '{"step":1,"pad":"' + "x" * (monitor.MAX_LINE + 10) + '"}\n')
    elif kind == "deep":
        q.write_text(lines[0] + "[" * 500 + "]" * 500 + "\n")
    elif kind == "unknown_method":
        q.write_text(lines[0] + lines[1].replace('"ws":', '"zz":', 1))
    elif kind == "link":  # a link out of the folder it is read from
        (tmp_path / "run").mkdir()
        q = tmp_path / "run" / "monitor.jsonl"
        q.symlink_to(p)
    elif kind == "fifo":
        os.mkfifo(q)
    elif kind == "folder":
        q.mkdir()
    return q


KINDS = ["truncated", "nan", "infinity", "null_gram", "empty", "header_only", "not_monitor", "binary", "huge_k",
         "long_line", "deep", "unknown_method", "link", "fifo", "folder"]


@pytest.mark.parametrize("kind", KINDS)
def test_hostile_recorder_files_get_one_line_errors(tmp_path, kind, capsys):
    q = _hostile(tmp_path, kind)
    with pytest.raises(ValueError) as exc:
        monitor.read(q, folder=q.parent)
    msg = str(exc.value)
    assert "\n" not in msg and len(msg) < 400
    assert ("a link out of its folder is not followed" in msg) if kind == "link" else (str(q) in msg)
    if kind == "link":  # a link the user names on the command line is followed
        return
    assert cli(["monitor", "summary", str(q)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_huge_file_refused_without_reading_it(tmp_path, monkeypatch):
    p = _good(tmp_path)
    monkeypatch.setattr(monitor, "MAX_BYTES", 100)
    with pytest.raises(ValueError, match="larger than the 100-byte limit .* for a recorder file"):
        monitor.read(p)


def test_resumed_run_later_records_win(tmp_path):
    p = _good(tmp_path)
    lines = p.read_text().splitlines(keepends=True)
    p.write_text("".join(lines) + lines[2].replace('"loss":[0.5', '"loss":[0.75', 1))  # step 1 again
    tr = monitor.read(p)
    assert list(tr.steps) == [0, 1] and tr.losses[1, 0] == 0.75


def test_cli_summary_json(tmp_path, capsys):
    p = _good(tmp_path)
    assert cli(["monitor", "summary", str(p)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["records"] == 3 and s["rule"]["collapse_ratio"] == monitor.COLLAPSE_RATIO
    assert set(s["methods"]) == {"pcd", "ws"} and s["methods"]["ws"]["median_ratio"] == pytest.approx((0.5 * 0.5 - 0.5 * 0.25) / 0.5)  # Mean: d = (g1 + g2) / 2


# ---------------------------------------------------------------------------- the pruning runs record it

SMALL = dict(dataset="digits", epochs=2, batch_size=64, max_train_samples=256, max_test_samples=120,
             latency_repeats=1, lr=1e-2, method="pcd")


def test_gram_based_run_records_and_trains_the_same(tmp_path):
    from pcd.train.run import train

    torch.set_num_threads(1)
    a = train(SMALL, out_dir=tmp_path / "a", monitor_every=None)
    b = train(SMALL, out_dir=tmp_path / "b", monitor_every=3)
    assert not (tmp_path / "a" / "monitor.jsonl").exists()
    ma = torch.load(tmp_path / "a" / "checkpoint.pt", weights_only=True)["model"]
    mb = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)["model"]
    assert all(torch.equal(ma[k], mb[k]) for k in ma)
    assert a["test_acc"] == b["test_acc"] and a["group_sparsity"] == b["group_sparsity"]
    tr = monitor.read(tmp_path / "b" / "monitor.jsonl", folder=tmp_path / "b")
    assert list(tr.steps) == [0, 3, 6]  # 4 steps per epoch, 2 epochs
    assert tr.header["objectives"] == ["cross-entropy", "group_lasso"] and tr.header["methods"]["pcd"]["tau"] == 0.02
    assert np.all(tr.gram[:, 0, 0] > 0) and tr.K == 2


def test_non_gram_run_writes_no_recorder_file(tmp_path):
    from pcd.train.run import train

    torch.set_num_threads(1)
    train({**SMALL, "method": "prox", "epochs": 1}, out_dir=tmp_path)
    assert not (tmp_path / "monitor.jsonl").exists()
