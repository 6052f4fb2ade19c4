"""A run's folder and its endings, with real processes: two runs at once, a second run into
a folder a live (stopped) run holds, Ctrl-C and SIGTERM sent to a training process, a full
disk (a real 64 KB tmpfs where mounting is allowed, and a simulated one), options sized to
exhaust memory refused under a memory cap, and where --out can or cannot go."""

import errno
import fcntl
import json
import os
import pty
import re
import resource
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest

from modelwright_autograd import cli
from modelwright_autograd.checkpoint import MAX_PARAMETERS
from modelwright_autograd.cli import train as cli_train
from modelwright_autograd.cli.budgets import WORK_LIMITS
from modelwright_autograd.training import outputs
from modelwright_autograd.training.settings import (
    MAX_STEPS,
    TrainConfig,
    divergence_advice,
)

SMALL = ["--samples", "30", "--steps", "5", "--hidden", "4,4", "--quiet"]
#: Long enough that a run is still training when the test acts on it (it is then killed).
LONG = ["--samples", "30", "--hidden", "4,4", "--steps", "500000"]
MOONS_FILES = [
    "decision_boundary.png",
    "loss_curve.png",
    "metrics.json",
    "model.json",
    "model.safetensors",
]
TRAIN = [sys.executable, "-m", "modelwright_autograd", "train"]


def _left_behind(folder):
    """Every file under ``folder`` (hidden ones included) and every empty folder."""
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if not p.is_dir() or not any(p.iterdir())
    )


def _seed_of(run):
    return json.loads((run / "metrics.json").read_text())["config"]["seed"]


def _wait_for(condition, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


# ---------------------------------------------------------------------- run folders
@pytest.mark.slow  # several processes, each importing NumPy and Matplotlib
def test_two_runs_started_together_get_a_folder_each(tmp_path):
    """Two real processes started at once, no --out: most often the same second, so the
    same runs/moons-<timestamp> name; each must still get its own complete folder."""
    procs = [
        subprocess.Popen(
            [*TRAIN, *SMALL, "--seed", str(seed)], cwd=tmp_path, stdout=subprocess.PIPE, text=True
        )
        for seed in (1, 2)
    ]
    printed = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    folders = [re.search(r"outputs in (\S+)/:", out).group(1) for out in printed]
    assert folders[0] != folders[1]
    for seed, folder in zip((1, 2), folders, strict=True):
        run = tmp_path / folder
        assert sorted(os.listdir(run)) == MOONS_FILES
        assert _seed_of(run) == seed  # its own files, not the other run's
    assert sorted(os.listdir(tmp_path / "runs")) == sorted(f.split("/")[1] for f in folders)


def test_a_taken_default_name_gets_the_next_suffix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(outputs.time, "strftime", lambda _: "20260101-000000")
    with (
        outputs.RunFolder.claim(None, "moons") as first,
        outputs.RunFolder.claim(None, "moons") as second,
    ):
        assert first.path.name == "moons-20260101-000000"
        assert second.path.name == "moons-20260101-000000-2"
        assert first.path.is_dir() and second.path.is_dir()  # created at the start
    assert _left_behind(tmp_path) == ["runs"]  # neither committed: both removed, runs/ empty


@pytest.mark.slow  # several processes, each importing NumPy and Matplotlib
def test_a_folder_held_by_a_live_run_is_refused_and_never_mixed(tmp_path):
    """Run A is stopped (SIGSTOP) once it owns --out; run B into the same folder is
    refused, with or without --overwrite; A, continued, writes only its own files."""
    out = tmp_path / "shared"
    a = subprocess.Popen(
        [*TRAIN, *SMALL[:-3], "--steps", "300", "--quiet", "--seed", "1", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    staging = tmp_path / f".shared.partial-{a.pid}"
    try:
        _wait_for(staging.is_dir, "run A to claim its folder")
        os.kill(a.pid, signal.SIGSTOP)
        assert os.listdir(out) == []  # visibly not a finished run while A works
        for extra in ([], ["--overwrite"]):
            b = subprocess.run(
                [*TRAIN, *SMALL, "--seed", "2", "--out", str(out), *extra],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert b.returncode == 2
            assert f"--out: {out} is in use by another run" in b.stderr
            assert os.listdir(out) == []
    finally:
        os.kill(a.pid, signal.SIGCONT)
    a.communicate(timeout=120)
    assert a.returncode == 0
    assert sorted(os.listdir(out)) == MOONS_FILES and _seed_of(out) == 1
    assert _left_behind(tmp_path) == [f"shared/{name}" for name in MOONS_FILES]


@pytest.mark.slow  # several processes, each importing NumPy and Matplotlib
def test_an_existing_run_needs_overwrite_which_removes_its_stale_files(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["train", *SMALL, "--out", str(out)]) == 0
    before = (out / "model.json").read_bytes()
    digits = ["--dataset", "digits", "--steps", "5", "--quiet", "--out", str(out)]
    with pytest.raises(SystemExit) as info:
        cli.main(["train", *digits])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--out" in err and "add --overwrite" in err
    assert (out / "model.json").read_bytes() == before
    assert cli.main(["train", *digits, "--overwrite"]) == 0
    # the moons run's decision boundary is gone: the folder is the digits run alone
    assert sorted(os.listdir(out)) == [
        "confusion_matrix.png",
        "loss_curve.png",
        "metrics.json",
        "misclassified.png",
        "model.json",
        "model.safetensors",
    ]
    assert _left_behind(tmp_path) == [f"run/{name}" for name in sorted(os.listdir(out))]


def test_overwrite_never_removes_files_no_run_wrote(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    (out / "model.json").write_text("{}")
    with pytest.raises(SystemExit) as info:
        cli.main(["train", *SMALL, "--out", str(out), "--overwrite"])
    assert info.value.code == 2
    assert "notes.txt" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "keep me" and (out / "model.json").exists()


def test_an_empty_folder_is_used_and_kept(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    assert cli.main(["train", *SMALL, "--out", str(out)]) == 0
    assert sorted(os.listdir(out)) == MOONS_FILES


@pytest.mark.parametrize(
    "out, problem",
    [
        ("", "got an empty string"),
        ("{tmp}/a-file/x", "cannot create"),  # as /etc/hostname/x: a file on the way
        ("/proc/x", "cannot create"),  # a folder nothing can be created in
        (".", "current folder"),
    ],
)
def test_out_that_cannot_be_a_run_folder_is_refused_before_training(
    tmp_path, monkeypatch, capsys, out, problem
):
    if out.startswith("/proc") and not os.path.isdir("/proc/self"):
        pytest.skip("no /proc on this system")
    (tmp_path / "a-file").write_text("")
    monkeypatch.chdir(tmp_path)

    def must_not_train(*args, **kwargs):
        raise AssertionError("trained before checking --out")

    monkeypatch.setattr(cli_train, "run_training", must_not_train)
    with pytest.raises(SystemExit) as info:
        cli.main(["train", *SMALL, "--out", out.format(tmp=tmp_path)])
    assert info.value.code == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert "--out" in err and problem in err
    assert _left_behind(tmp_path) == ["a-file"]


# ---------------------------------------------------------------------- interrupts
def _start_on_a_terminal(args, cwd):
    """A training process whose stderr is a pseudo-terminal, so it draws its progress bar;
    returns once the bar shows a step done, i.e. the process is training."""
    master, slave = pty.openpty()
    # a pseudo-terminal starts 0 columns wide, and tqdm draws nothing in no width
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen([*TRAIN, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    shown = b""
    deadline = time.monotonic() + 60
    while not re.search(rb" [1-9]\d*/\d+ \[", shown):
        ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            proc.kill()
            pytest.fail(f"no training progress shown: {shown[-300:]!r}")
        shown += os.read(master, 4096)
    return proc, master


def _read_to_end(master):
    text = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the process closed its end
            break
        if not chunk:
            break
        text += chunk
    os.close(master)
    return text.decode("utf-8", "replace")


@pytest.mark.parametrize(
    "sig, code, name", [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")]
)
def test_a_signal_during_training_ends_the_run_in_order(tmp_path, sig, code, name):
    """Ctrl-C (SIGINT) and SIGTERM sent to a real training process: one line, the exit
    code 128 + signal, no traceback, and no folder, staging folder or temporary file."""
    proc, master = _start_on_a_terminal([*LONG, "--out", "run"], tmp_path)
    os.kill(proc.pid, sig)
    proc.wait(timeout=60)
    stderr = _read_to_end(master)
    assert proc.returncode == code
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert (
        last
        == f"modelwright-autograd train: interrupted ({name}); nothing was kept (run was removed)"
    )
    assert _left_behind(tmp_path) == []


def test_sigterm_while_overwriting_keeps_the_previous_run(tmp_path):
    out = tmp_path / "run"
    assert cli.main(["train", *SMALL, "--out", str(out)]) == 0
    before = {name: (out / name).read_bytes() for name in os.listdir(out)}
    proc, master = _start_on_a_terminal([*LONG, "--out", "run", "--overwrite"], tmp_path)
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(timeout=60)
    last = _read_to_end(master).strip().splitlines()[-1]
    assert proc.returncode == 143
    assert last.endswith("interrupted (SIGTERM); run still holds the previous run's files")
    assert {name: (out / name).read_bytes() for name in os.listdir(out)} == before
    assert _left_behind(tmp_path) == [f"run/{name}" for name in sorted(before)]


# ---------------------------------------------------------------------- full disks
@pytest.fixture
def tiny_filesystem(tmp_path):
    """A real 64 KB tmpfs: room for the checkpoint and metrics, not for the pictures."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    yield mount_point
    subprocess.run(["umount", str(mount_point)], check=True)


def test_a_full_disk_is_one_line_naming_the_file_and_leaves_nothing(tiny_filesystem, capsys):
    out = tiny_filesystem / "run"
    assert cli.main(["train", *SMALL, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    written = re.search(rf"cannot write {re.escape(str(out))}/(\S+): No space left on device", err)
    assert written and written.group(1) in MOONS_FILES
    assert err.rstrip().endswith(f"nothing was kept ({out} was removed)")
    assert os.listdir(tiny_filesystem) == []


def test_a_simulated_full_disk_names_the_file(tmp_path, monkeypatch, capsys):
    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)  # atomic_write syncs every file it writes
    out = tmp_path / "run"
    assert cli.main(["train", *SMALL, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"modelwright-autograd train: cannot write {out}/model.json: "
        f"{os.strerror(errno.ENOSPC)}; nothing was kept ({out} was removed)\n"
    )
    assert _left_behind(tmp_path) == []


# ---------------------------------------------------------------------- sizes and bounds
def _capped(megabytes):
    def apply():
        limit = megabytes << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


@pytest.mark.slow  # several processes, each importing NumPy and Matplotlib
def test_sizes_are_refused_under_a_memory_cap_before_anything_is_allocated(tmp_path):
    """Under a 600 MB address-space cap (room for a small run, the control), each option
    that would allocate gigabytes exits 2 naming itself: nothing big came first."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}

    def run(*options):
        return subprocess.run(
            [*TRAIN, *options, "--quiet", "--out", "out"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            preexec_fn=_capped(600),
            timeout=120,
        )

    control = run("--samples", "30", "--steps", "1", "--hidden", "4,4")
    assert control.returncode == 0, control.stderr
    cases = [
        (["--hidden", "100000,100000"], "--hidden", f"{MAX_PARAMETERS['scalar']:,}"),
        (
            ["--hidden", "100000,100000", "--engine", "tensor"],
            "--hidden",
            f"{MAX_PARAMETERS['tensor']:,}",
        ),
        (["--hidden", "7100,7100", "--steps", "1", "--engine", "tensor"], "--hidden", ""),
        (["--samples", "1000000"], "--samples", f"{WORK_LIMITS['scalar']['pass']:,}"),
        (["--samples", "1000000", "--hidden", "64,64", "--engine", "tensor"], "--samples", ""),
    ]
    for options, named, limit in cases:
        refused = run(*options)
        assert refused.returncode == 2, (options, refused.stderr[-500:])
        last = refused.stderr.strip().splitlines()[-1]
        assert f": {named}:" in last and limit in last


@pytest.mark.parametrize(
    "options, named",
    [
        (["--steps", str(10**12)], "--steps"),
        (["--steps", str(MAX_STEPS + 1)], "--steps"),
        (["--steps", "100000"], "--steps"),  # 3.4e9 multiply-adds: past the scalar run limit
        (["--samples", "14837"], "--samples"),  # 14,837 x 337 weights > 5,000,000 a pass
        (["--dataset", "digits", "--hidden", "7000,7000"], "--hidden"),
    ],
)
def test_work_bounds_are_usage_errors(options, named, capsys, monkeypatch):
    monkeypatch.setattr(cli_train, "run_training", None)  # never reached
    with pytest.raises(SystemExit) as info:
        cli.main(["train", *options])
    assert info.value.code == 2
    assert f": {named}:" in capsys.readouterr().err


def test_the_largest_allowed_sizes_pass_the_checks():
    parser = cli.build_parser()
    for options in (
        ["--samples", "14836"],  # 14,836 x 337 = 4,999,732 multiply-adds a pass
        ["--samples", "1000000", "--engine", "tensor"],  # the documented maximum
        ["--steps", str(MAX_STEPS), "--dataset", "digits", "--batch-size", "16"],
    ):
        args = parser.parse_args(["train", *options])
        cli_train.resolve_config(args)  # no UsageError


def test_help_states_the_bounds(capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert f"at most {MAX_STEPS:,}" in shown
    assert f"{MAX_PARAMETERS['scalar']:,} weights with the scalar engine" in shown
    assert f"{WORK_LIMITS['scalar']['pass']:,} for the scalar engine" in shown


# ---------------------------------------------------------------------- messages
@pytest.mark.parametrize(
    "settings, named, not_named",
    [
        ({"noise": 1e6}, ["--noise"], ["--lr", "--l2"]),
        ({"l2": 1e308}, ["--l2"], ["--lr", "--noise"]),
        ({"lr": 1e30}, ["--lr"], ["--noise", "--l2"]),
        ({"lr": 1e30, "l2": 5.0}, ["--lr", "--l2"], ["--noise"]),
        ({}, ["--lr", "--noise", "--l2"], []),  # nothing unusual: every suspect
        (
            {"dataset": "digits", "noise": None, "loss": "ce", "optimizer": "adam", "lr": 1e-3},
            ["--lr", "--l2"],
            ["--noise"],
        ),
    ],
)
def test_divergence_advice_names_the_unusual_settings(settings, named, not_named):
    advice = divergence_advice(TrainConfig(**settings))
    assert all(option in advice for option in named)
    assert not any(option in advice for option in not_named)


def test_a_run_diverging_from_noise_blames_the_noise(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", *SMALL, "--hidden", "4", "--loss", "mse", "--noise", "1e6", "--out", str(out)]
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--noise (it was 1e+06)" in err and "--lr" not in err
    assert not out.exists()
