"""Nothing a finished run wrote is lost: export never writes over a file of the run, in
whatever form the path is given; repeated Ctrl-C never removes a saved best checkpoint;
an interrupted --overwrite never replaces a complete earlier run. With real processes and
real signals where a process is involved."""

import os
import re
import signal
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


def test_export_over_another_runs_files_or_folder_is_refused(run, tmp_path, monkeypatch, capsys):
    """Exporting one run onto a second run's model.json (or a picture, or into its folder)
    would destroy or litter the second run, which owns its folder as much as the first."""
    other = tmp_path / "other"
    options = ["--samples", "20", "--steps", "2", "--hidden", "3", "--quiet"]
    assert cli.main(["train", *options, "--out", str(other)]) == 0
    lm = tmp_path / "lm"
    lm_options = ["--dataset", "names", "--model", "bigram", "--steps", "2", "--quiet"]
    assert cli.main(["train", *lm_options, "--out", str(lm)]) == 0
    before = _files(other)
    monkeypatch.chdir(tmp_path)
    cases = [
        (["run", "other/model.json"], "other/model.json is another run's model.json"),
        (["run", "run/../other/loss_curve.png"], "other/loss_curve.png is another run's"),
        (["lm", "other/model.json", "--format", "state_dict"], "is another run's model.json"),
        (["lm", "other"], "other is another run's folder"),
    ]
    for argv, what in cases:
        with pytest.raises(SystemExit) as info:
            cli.main(["export", *argv])
        assert info.value.code == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and what in err, (argv, err)
    assert _files(other) == before


# ---------------------------------------------------------------------- 2. and 3. Ctrl-C
LM_RUN = [
    "train",
    "--dataset",
    "shakespeare",
    "--model",
    "gpt",
    *TINY_GPT,
    "--steps",
    "100000",
    "--eval-interval",
    "1",
    "--eval-iters",
    "1",
    "--quiet",
]


def _interrupt_once_saved(tmp_path, *extra):
    """A real LM training process into tmp_path/run, interrupted by a burst of SIGINTs
    (one every 2 ms until it exits) that starts once its first best checkpoint is saved
    in the staging folder: the later ones land in the writes after the first. The exit
    code is 130, or death by SIGINT when one arrives after the program has ended (as the
    shell shows it, 130 too)."""
    proc = subprocess.Popen(
        [*CLI, *LM_RUN, "--out", "run", *extra],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(lambda: list(tmp_path.glob(".run.partial-*/model.json")), "a checkpoint", proc)
    sent = 0
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        os.kill(proc.pid, signal.SIGINT)
        sent += 1
        time.sleep(0.002)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode in (130, -signal.SIGINT), err
    return out, err, sent


@pytest.mark.slow  # a real training process, started twice (about 3 s each)
def test_repeated_ctrl_c_never_removes_the_saved_best_checkpoint(tmp_path):
    for attempt in range(2):  # the burst lands at different moments each time
        out, err, sent = _interrupt_once_saved(tmp_path)
        assert sent > 1, "the burst must go on past the first interrupt"
        assert "Traceback" not in err
        run = tmp_path / "run"
        assert sorted(os.listdir(run)) == [
            "last.json",
            "last.safetensors",
            "loss_curve.png",
            "metrics.json",
            "model.json",
            "model.safetensors",
        ]
        assert re.search(r"interrupted \(SIGINT\) after step [\d,]+: kept the above", out)
        assert cli.main(["sample", str(run), "--tokens", "5"]) == 0
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
        os.rename(run, tmp_path / f"kept-{attempt}")


@pytest.mark.slow  # a real training process (about 3 s)
def test_an_interrupted_overwrite_leaves_the_finished_run_whole(tmp_path):
    first = ["train", "--dataset", "shakespeare", "--model", "gpt", *TINY_GPT, "--steps", "2"]
    run = tmp_path / "run"
    assert cli.main([*first, "--eval-iters", "1", "--quiet", "--out", str(run)]) == 0
    before = _files(run)
    out, _, _ = _interrupt_once_saved(tmp_path, "--overwrite")
    assert _files(run) == before
    aside = tmp_path / "run-interrupted"
    assert sorted(os.listdir(aside)) == [
        "last.json",
        "last.safetensors",
        "loss_curve.png",
        "metrics.json",
        "model.json",
        "model.safetensors",
    ]
    assert f"outputs in {aside.name}/" in out
    assert "run still holds the previous run's files, unchanged" in out
    assert cli.main(["sample", str(aside), "--tokens", "5"]) == 0
    # a second interrupted overwrite goes to the next free name, the first run still whole
    _interrupt_once_saved(tmp_path, "--overwrite")
    assert _files(run) == before
    assert (tmp_path / "run-interrupted-2" / "model.json").exists()


@pytest.mark.slow  # a real training process (about 3 s)
def test_a_killed_runs_saved_checkpoint_survives_the_next_run_into_its_folder(tmp_path, capsys):
    """SIGKILL (the OOM killer, a closed laptop) leaves the best checkpoint only in the
    hidden staging folder; the next run into the same --out must not delete it."""
    proc = subprocess.Popen(
        [*CLI, *LM_RUN, "--out", "run"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for(lambda: list(tmp_path.glob(".run.partial-*/model.json")), "a checkpoint", proc)
    proc.kill()
    proc.wait(timeout=60)
    (saved,) = tmp_path.glob(".run.partial-*/model.json")
    kept = saved.read_bytes()
    first = ["--dataset", "names", "--model", "bigram", "--steps", "2", "--quiet"]
    with pytest.raises(SystemExit) as info:
        cli.main(["train", *first, "--out", str(tmp_path / "run")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and saved.parent.name in err, err
    assert saved.read_bytes() == kept
