"""The workshop (issue 43): `init` writes a repository in the course's shape, and `check`
finds the engine in a repository of the learner's own shape."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from modelwright_autograd.cli import main
from modelwright_autograd.learner.locate import LocateError, locate
from modelwright_autograd.learner.starter import project_names, write_starter

ENGINES = Path(__file__).parent / "learner_engines"
SOLVED = ENGINES / "solved_starter.py"
SOLVED_NN = ENGINES / "solved_nn.py"


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True)


@pytest.mark.parametrize("tensor", [False, True])
def test_init_writes_a_repository_in_the_course_s_shape(tmp_path, tensor):
    repo = tmp_path / "My Engine"
    write_starter(repo, tensor=tensor)
    files = sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if ".git" not in p.parts)
    assert files == [
        ".gitignore",
        "README.md",
        "REPORT.md",
        "pyproject.toml",
        "src",
        "src/my_engine",
        "src/my_engine/__init__.py",
        "src/my_engine/engine.py",
        "src/my_engine/nn.py",
        "starter.ipynb",
        "tests",
        "tests/test_gradcheck.py",
        "tests/test_ops.py",
        "train.py",
    ]
    for path in repo.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            text = path.read_text()
            assert "{{" not in text and "mygrad" not in text, path  # every name filled in
    assert "raise NotImplementedError" in (repo / "src/my_engine/engine.py").read_text()
    assert "from my_engine.engine import" in (repo / "tests/test_gradcheck.py").read_text()
    assert "TODO: test_mul_" in (repo / "tests/test_ops.py").read_text()
    # a git repository on main with nothing committed, every file waiting to be added
    assert _git(repo, "rev-parse", "--verify", "HEAD").returncode != 0
    assert _git(repo, "symbolic-ref", "--short", "HEAD").stdout.strip() == "main"
    untracked = _git(repo, "status", "--porcelain").stdout.split("\n")
    assert "?? src/" in untracked and "?? tests/" in untracked


def test_the_pyproject_is_one_uv_and_pip_accept(tmp_path):
    """PEP 621 and PEP 735 as uv and pip read them: numpy, matplotlib and scikit-learn to
    run; pytest and torch (pinned as this project pins it) in the test extra, which the
    dev group `uv sync` installs by default names; pytest finds the package in src/."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11's TOML reader")
    write_starter(tmp_path / "mine")
    data = tomllib.loads((tmp_path / "mine" / "pyproject.toml").read_text())
    project = data["project"]
    assert project["name"] == "mine" and project["version"] == "0.1.0"
    assert project["readme"] == "README.md" and project["requires-python"] == ">=3.10"
    runtime = {Requirement(r).name for r in project["dependencies"]}
    assert runtime == {"numpy", "matplotlib", "scikit-learn"}
    test = [Requirement(r) for r in project["optional-dependencies"]["test"]]
    assert {r.name: str(r.specifier) for r in test} == {"pytest": ">=7", "torch": "==2.13.0"}
    ours = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert "torch==2.13.0" in ours["project"]["optional-dependencies"]["test"]
    dev = [Requirement(r) for r in data["dependency-groups"]["dev"]]
    assert [(r.name, r.extras) for r in dev] == [("mine", {"test"})]
    assert data["build-system"]["build-backend"] == "setuptools.build_meta"
    assert data["tool"]["setuptools"]["packages"]["find"]["where"] == ["src"]
    assert data["tool"]["pytest"]["ini_options"]["pythonpath"] == ["src"]


@pytest.mark.slow
def test_pip_installs_the_repository_editable_without_the_network(tmp_path):
    repo = tmp_path / "mine"
    write_starter(repo)
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
    )
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run([*pip, "-e", str(repo)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    where = subprocess.run(
        [python, "-c", "import mine, mine.engine; print(mine.engine.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert where.stdout.strip() == str(repo / "src" / "mine" / "engine.py"), where.stderr


@pytest.mark.parametrize(
    ("folder", "names"),
    [
        ("modelwright-autograd", ("modelwright-autograd-engine", "modelwright_autograd_engine")),
        ("json", ("json-engine", "json_engine")),
        ("2048", ("my-engine", "my_engine")),
        ("class", ("my-engine", "my_engine")),
        ("Tiny.Grad", ("tiny-grad", "tiny_grad")),
    ],
)
def test_the_package_is_named_after_the_folder_and_shadows_nothing(folder, names):
    assert project_names(Path("/somewhere") / folder) == names


def test_init_says_where_the_engine_is(tmp_path, capsys):
    assert main(["init", str(tmp_path / "mine")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("wrote .git, .gitignore, README.md, REPORT.md, pyproject.toml, src")
    assert out[-1].startswith("next: fill in the TODOs of src/mine/engine.py, then run:")


# ------------------------------------------------------------------ finding the engine


def _package(root: Path, name: str, nn_module: str = "nn.py") -> Path:
    package = root / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "engine.py").write_text(SOLVED.read_text())
    nn = SOLVED_NN.read_text().replace("from engine import", "from .engine import")
    (package / nn_module).write_text(nn)
    return package


def test_a_package_at_the_top_of_a_repository_is_found(tmp_path):
    _package(tmp_path, "tinygrad_mine", nn_module="network.py")
    (tmp_path / "train.py").write_text("from tinygrad_mine.engine import Value\n")
    target = locate(tmp_path)
    assert (target.sys_path, target.value_module) == (str(tmp_path), "tinygrad_mine.engine")
    assert target.mlp_module == "tinygrad_mine.network"  # the MLP found beside, by its class


def test_a_package_defining_value_in_its_init_is_imported_by_its_name(tmp_path):
    package = tmp_path / "src" / "onefile"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(SOLVED.read_text())
    assert locate(tmp_path).value_module == "onefile"


def test_two_engines_on_one_level_are_refused_naming_both(tmp_path, capsys):
    _package(tmp_path / "src", "first")
    _package(tmp_path / "src", "second")
    with pytest.raises(LocateError, match="two engines: src/first and src/second"):
        locate(tmp_path)
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"check {tmp_path / 'src' / 'first'}" in err
    assert locate(tmp_path / "src" / "second").value_module == "second.engine"


def test_a_scalar_engine_beside_a_tensor_engine_is_taken(tmp_path):
    _package(tmp_path / "src", "scalar")
    tensor = tmp_path / "src" / "arrays"
    tensor.mkdir()
    (tensor / "engine.py").write_text((ENGINES / "tensor" / "solved_starter.py").read_text())
    assert locate(tmp_path).value_module == "scalar.engine"


def test_the_flat_folder_of_the_older_init_is_found_as_before(tmp_path):
    (tmp_path / "engine.py").write_text(SOLVED.read_text())
    (tmp_path / "nn.py").write_text(SOLVED_NN.read_text())
    target = locate(tmp_path)
    assert (target.value_module, target.mlp_module) == ("engine", "nn")
