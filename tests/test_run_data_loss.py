"""Nothing a finished run wrote is lost: export never writes over a file of the run, in
whatever form the path is given; repeated Ctrl-C never removes a saved best checkpoint;
an interrupted --overwrite never replaces a complete earlier run. With real processes and
real signals where a process is involved."""

import os
import subprocess
import sys
import time

import pytest

from modelwright_autograd import cli

CLI = [sys.executable, "-m", "modelwright_autograd"]
TINY_GPT = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16"]


def _files(folder):
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


def _wait_for(condition, what, proc, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail(f"gave up waiting for {what} (exit {proc.poll()})")
        time.sleep(0.005)


@pytest.fixture
def run(tmp_path):
    out = tmp_path / "run"
    options = ["--samples", "20", "--steps", "2", "--hidden", "3", "--quiet"]
    assert cli.main(["train", *options, "--out", str(out)]) == 0
    return out


# ---------------------------------------------------------------------- 1. export
def test_export_over_the_runs_checkpoint_is_refused_by_a_real_process(run, tmp_path):
    before = _files(run)
    done = subprocess.run(
        [*CLI, "export", "run", "run/model.json"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "modelwright-autograd export: OUT: run/model.json is the checkpoint itself; "
        "name another file\n"
    )
    assert _files(run) == before


def test_export_over_any_file_of_the_run_is_refused_whatever_the_form(
    run, tmp_path, monkeypatch, capsys
):
    before = _files(run)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link").symlink_to("run")
    (tmp_path / "sub").mkdir()
    os.link(run / "model.json", tmp_path / "hard.json")
    os.link(run / "metrics.json", tmp_path / "hard-metrics.json")
    cases = [
        ("run", "run/./metrics.json", "the run's metrics.json"),
        ("run/model.json", "sub/../run/loss_curve.png", "the run's loss_curve.png"),
        ("run", "link/model.json", "the checkpoint itself"),
        ("link", str(run / "decision_boundary.png"), "the run's decision_boundary.png"),
        ("run", "hard.json", "the checkpoint itself"),
        ("link/model.json", "hard-metrics.json", "the run's metrics.json"),
        ("hard.json", "run/model.json", "the checkpoint itself"),
        # a run file that does not exist yet is the run's all the same
        ("run", "link/../run/misclassified.png", "the run's misclassified.png"),
    ]
    for checkpoint, out, what in cases:
        with pytest.raises(SystemExit) as info:
            cli.main(["export", checkpoint, out])
        assert info.value.code == 2, (checkpoint, out)
        err = capsys.readouterr().err
        assert f"is {what}; name another file" in err, (checkpoint, out, err)
    assert _files(run) == before
    assert not (run / "misclassified.png").exists()
    # a file beside the run that is none of its own is written
    assert cli.main(["export", "run", "model.pt"]) == 0
    assert (tmp_path / "model.pt").stat().st_size > 0
