"""``init`` into a folder that already exists: filled in place, never replaced (issue 23,
items 13-15). Run as real processes in real folders: ``.`` and ``"$PWD"`` from inside an
empty folder, a folder with its own mode, group and setgid bit, a symbolic link to one,
and a tmpfs mounted on it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import modelwright_autograd
from modelwright_autograd.cli import main
from modelwright_autograd.learner import starter
from modelwright_autograd.learner.starter import ENTRIES

ENV = {**os.environ, "PYTHONPATH": str(Path(modelwright_autograd.__file__).parents[1])}


def _init(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "modelwright_autograd", "init", *args],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
    )


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("how", ["dot", "pwd"])
def test_init_from_inside_an_empty_folder_fills_that_folder(tmp_path, how):
    folder = tmp_path / "e"
    folder.mkdir()
    before = os.stat(folder)
    done = _init("." if how == "dot" else str(folder), cwd=folder)
    assert done.returncode == 0, done.stderr
    after = os.stat(folder)
    assert (after.st_ino, after.st_dev) == (before.st_ino, before.st_dev)  # the same folder
    assert _names(folder) == sorted(ENTRIES)
    assert _names(tmp_path) == ["e"]  # nothing staged beside it is left


def test_init_keeps_the_folders_mode_group_and_setgid(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    group = os.getgid() + 4321  # a group that is not ours: only root may give it
    try:
        os.chown(folder, -1, group)
    except PermissionError:
        pytest.skip("needs root to give the folder another group")
    os.chmod(folder, 0o2770)
    assert main(["init", str(folder)]) == 0
    info = os.stat(folder)
    assert stat.S_IMODE(info.st_mode) == 0o2770 and info.st_gid == group
    assert _names(folder) == sorted(ENTRIES)
    for name in ENTRIES:  # a setgid folder gives its group to what is made in it
        assert os.stat(folder / name).st_gid == group


def test_init_through_a_symbolic_link_to_an_empty_folder(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    assert main(["init", str(tmp_path / "link")]) == 0
    assert (tmp_path / "link").is_symlink()
    assert _names(tmp_path / "real") == sorted(ENTRIES)


def test_init_refuses_a_dangling_link_saying_why(tmp_path, capsys):
    (tmp_path / "link").symlink_to("nowhere")
    assert main(["init", str(tmp_path / "link")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "symbolic link to nowhere, which does not exist" in err
    assert _names(tmp_path) == ["link"]


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda p: p.write_text("x"), "a regular file"),
        (lambda p: os.mkfifo(p), "a FIFO"),
        (lambda p: p.symlink_to("/dev/null"), "a character device"),
    ],
)
def test_init_refuses_what_is_not_a_folder_naming_it(tmp_path, capsys, make, kind):
    make(tmp_path / "x")
    assert main(["init", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"is {kind}" in err and "not a folder" in err


def test_init_under_a_file_names_the_file(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    assert main(["init", str(tmp_path / "afile" / "x")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "afile is a file, not a folder" in err
    assert _names(tmp_path) == ["afile"]


def test_init_fills_a_mounted_filesystem_in_place(tmp_path):
    mount = tmp_path / "volume"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0750", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        done = _init(".", cwd=mount)
        assert done.returncode == 0, done.stderr
        assert _names(mount) == sorted(ENTRIES)
        assert stat.S_IMODE(os.stat(mount).st_mode) == 0o750
    finally:
        subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.parametrize("existing", [True, False])
def test_init_interrupted_leaves_the_folder_as_it_was(tmp_path, monkeypatch, existing):
    folder = tmp_path / "mine"
    if existing:
        folder.mkdir()
    written = []

    def interrupted(path, write, binary=False):
        if len(written) == 2:
            raise KeyboardInterrupt
        written.append(path)
        Path(path).write_text("x")

    monkeypatch.setattr(starter, "atomic_write", interrupted)
    assert main(["init", str(folder)]) == 130
    assert _names(tmp_path) == (["mine"] if existing else [])
    if existing:
        assert _names(folder) == []


def test_init_does_not_echo_a_very_long_path(tmp_path, capsys):
    folder = tmp_path / ("a" * 150) / ("b" * 150)
    assert main(["init", str(folder)]) == 0
    out = capsys.readouterr().out
    assert str(folder) not in out and "a path of" in out and len(out) < 400
    assert _names(folder) == sorted(ENTRIES)
