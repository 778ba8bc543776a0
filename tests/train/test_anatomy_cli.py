"""``python -m pcd anatomy``: a finished run's curve from its folder, budgets, one-line errors."""
from __future__ import annotations

import json

import pytest

from pcd.cli import main
from pcd.train.run import train

SMALL = dict(dataset="digits", method="pcd", tau=0.5, epochs=2, batch_size=64, max_train_samples=256,
             max_test_samples=120, lr=0.02, latency_repeats=3, device="cpu")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    train(SMALL, out_dir=out)
    return out


def test_curve_of_a_finished_run(run_dir, capsys):
    rc = main(["anatomy", str(run_dir), "--points", "3", "--repeats", "3", "--max-mflops", "1000",
               "--json", str(run_dir / "a.json")])
    assert rc == 0
    out = json.loads((run_dir / "a.json").read_text())
    curve = out["curve"]
    assert len(curve) >= 2 and curve[0]["threshold"] == 0.0 and curve[0]["channels_removed"] == 0
    assert curve[0]["params"] == out["params"] and abs(curve[0]["test_acc"] - out["test_acc"]) < 1e-9
    assert out["budget"]["best"] is not None and (run_dir / "curve.json").is_file()
    final = json.loads((run_dir / "final.json").read_text())
    assert final["provenance"]["torch"] and final["export"]["layers"] and final["export"]["speedup_reason"]
    assert "budget met by: threshold" in capsys.readouterr().out


@pytest.mark.parametrize("argv,msg", [
    (["--points", "1"], "points"),
    (["--max-mflops", "-1"], "max_flops must be a positive"),
    (["--repeats", "0"], "repeats"),
])
def test_bad_settings_are_one_line(run_dir, argv, msg, capsys):
    assert main(["anatomy", str(run_dir), *argv]) == 2
    assert msg in capsys.readouterr().err


def test_folder_without_a_run_is_one_line(tmp_path, capsys):
    assert main(["anatomy", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "config.json" in err and len(err.strip().splitlines()) == 1


def test_reexport_at_a_target_reduction_and_read_curve(run_dir):
    from pcd.train import anatomy as A

    out = A.export_point(run_dir, target_reduction=0.5)
    assert (run_dir / out["path"]).is_file() and out["params"] > 0
    final = json.loads((run_dir / "final.json").read_text())
    assert out["params"] <= 0.5 * final["export"]["params_before"] + 1e-9 or out["channels_removed"] == 0
    with pytest.raises(ValueError, match="exactly one"):
        A.export_point(run_dir)
    curve = A.read_curve(run_dir)
    assert curve is None or curve["curve"]
    (run_dir / "curve.json").write_text('{"curve": 3}')
    with pytest.raises(ValueError, match="not a trade-off curve"):
        A.read_curve(run_dir)
    (run_dir / "curve.json").unlink()
    assert A.read_curve(run_dir) is None
