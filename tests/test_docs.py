"""Every ```python block in README.md, REPORT.md and docs/*.md runs, so the documentation
cannot drift from the code: each file's blocks run in order in one namespace, in a
temporary working directory. A block tagged ```python no-run is skipped (use sparingly).
Every ```bash block runs too (`pytest -m slow`), each in a fresh folder with this
environment's `modelwright-autograd` first on PATH, and must end with status 0, or N when
tagged ```bash exits=N; one tagged ```bash no-run is not run (installs, long trainings, a
run folder's placeholder name). Links inside the documents must point at headings and
files that exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "REPORT.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^```[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)
_SKIP_TAGS = {"no-run", "norun", "skip"}


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number of the code, code) of each runnable ```python block."""
    blocks = []
    for m in _FENCE.finditer(text):
        words = m.group("info").split()
        if not words or words[0] != "python" or _SKIP_TAGS & set(words[1:]):
            continue
        first_line = text.count("\n", 0, m.start("body")) + 1
        blocks.append((first_line, m.group("body")))
    return blocks


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def bash_blocks(text: str) -> list[tuple[int, str, int | None]]:
    """(first line of the code, code, the status it must end with; None: not run) of each
    ```bash block."""
    blocks = []
    for m in _FENCE.finditer(text):
        words = m.group("info").split()
        if not words or words[0] != "bash":
            continue
        tags = dict(w.partition("=")[::2] for w in words[1:])
        status = None if _SKIP_TAGS & set(tags) else int(tags.get("exits", 0))
        blocks.append((text.count("\n", 0, m.start("body")) + 1, m.group("body"), status))
    return blocks


BASH = [
    pytest.param(code, status, id=f"{_id(path)}:{line}")
    for path in DOCS
    for line, code, status in bash_blocks(path.read_text("utf-8"))
    if status is not None
]


@pytest.mark.slow
@pytest.mark.parametrize("code, status", BASH)
def test_bash_blocks_run(code, status, tmp_path):
    here = os.path.dirname(sys.executable)  # this environment's modelwright-autograd
    env = {**os.environ, "PATH": f"{here}{os.pathsep}{os.environ['PATH']}", "MPLBACKEND": "Agg"}
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == status, done.stdout[-2000:] + done.stderr[-2000:]


def test_the_bash_blocks_that_run_are_the_cheap_ones():
    """What runs: explain, init and check on a starter, the default train (seconds each)."""
    ran = sorted((p.id.split(":")[0], p.values[0].split()[1]) for p in BASH)
    assert ran == [
        ("REPORT.md", "train"),
        ("docs/build-your-own.md", "init"),
        ("docs/build-your-own.md", "init"),
        ("docs/build-your-own.md", "init"),
        ("docs/build-your-own.md", "init"),
        ("docs/explain.md", "explain"),
        ("docs/neural-nets.md", "train"),
    ]
    text = "```bash exits=1\nfalse\n```\n```bash no-run\npip install x\n```\n```python\n1\n```\n"
    assert bash_blocks(text) == [(2, "false\n", 1), (5, "pip install x\n", None)]


def test_the_readme_s_test_block_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text("utf-8")
    tests = [code for _, code, _ in bash_blocks(readme) if "pytest" in code and "uv" not in code]
    assert len(tests) == 1
    assert tests[0] in (ROOT / ".ci" / "run").read_text("utf-8")


@pytest.mark.parametrize("path", DOCS, ids=_id)
def test_python_blocks_run(path, tmp_path, monkeypatch):
    if not path.exists():
        pytest.skip(f"{_id(path)} does not exist yet")
    blocks = python_blocks(path.read_text("utf-8"))
    if not blocks:
        pytest.skip(f"{_id(path)} has no python blocks")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")  # pictures may be drawn, never shown
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].switch_backend("Agg")
    namespace: dict = {"__name__": "__docs__"}
    for first_line, code in blocks:
        # Padding with newlines makes tracebacks point at the line in the .md file.
        source = "\n" * (first_line - 1) + code
        exec(compile(source, str(path), "exec"), namespace)


def test_derivations_and_concepts_have_python_blocks():
    for name in ("docs/derivations.md", "docs/concepts.md"):
        assert len(python_blocks((ROOT / name).read_text("utf-8"))) >= 5, name


def test_block_extraction():
    text = "x\n```python\na = 1\n```\n```python no-run\nboom\n```\n```bash\nls\n```\n"
    assert python_blocks(text) == [(3, "a = 1\n")]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(text: str) -> set[str]:
    outside_code = _FENCE.sub("", text)
    anchors: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*$", outside_code, re.M):
        slug, n = _slug(heading), 1
        while slug in anchors:  # repeated headings get -1, -2, ...
            slug = f"{_slug(heading)}-{n}"
            n += 1
        anchors.add(slug)
    return anchors


@pytest.mark.parametrize("path", DOCS, ids=_id)
def test_links_point_at_existing_headings_and_files(path):
    if not path.exists():
        pytest.skip(f"{_id(path)} does not exist yet")
    text = path.read_text("utf-8")
    anchors = _anchors(text)
    for target in re.findall(r"\]\(([^)\s]+)\)", _FENCE.sub("", text)):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        if file_part:
            linked = path.parent / file_part
            assert linked.exists(), f"{_id(path)}: broken link {target}"
            if anchor and linked.suffix == ".md":
                linked_anchors = _anchors(linked.read_text("utf-8"))
                assert anchor in linked_anchors, f"{_id(path)}: no heading for {target}"
        elif anchor:
            assert anchor in anchors, f"{_id(path)}: no heading for #{anchor}"


def test_the_docs_index_links_every_doc():
    index = (ROOT / "docs" / "README.md").read_text("utf-8")
    linked = set(re.findall(r"\]\(([\w.-]+\.md)(?:#[^)]*)?\)", index))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert pages <= linked, f"docs/README.md does not link {sorted(pages - linked)}"


def test_the_readme_and_the_report_stay_short():
    """The course asks for a README a stranger could follow and a report of about one page:
    at most 1,500 and 1,000 words as `wc -w` counts them."""
    assert len((ROOT / "README.md").read_text("utf-8").split()) <= 1500
    assert len((ROOT / "REPORT.md").read_text("utf-8").split()) <= 1000


# ---------------------------------------------------------------------- facts that could drift
def _code_map() -> str:
    text = (ROOT / "docs" / "README.md").read_text("utf-8")
    start = text.index("```text\nsrc/modelwright_autograd/")
    return text[start : text.index("\n```", start + 8)]


def test_the_code_map_names_every_module_and_package():
    code_map = _code_map()
    src = ROOT / "src" / "modelwright_autograd"
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src).parts
        if path.name == "__init__.py" or any(p.startswith("templates") for p in parts):
            continue  # a package is named by its folder; the starters are files, not code
        assert path.name in code_map, f"docs/README.md's code map leaves out {'/'.join(parts)}"
    for folder in sorted(p for p in src.rglob("*") if (p / "__init__.py").is_file()):
        assert f"{folder.name}/" in code_map, f"the code map leaves out {folder.name}/"


def test_option_lists_in_the_docs_are_the_commands_choices():
    """Every `--option {a,b,...}` written in the README or docs is train's list of choices
    for it, whole (one with another command's list would need its command here)."""
    from modelwright_autograd.cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if hasattr(a, "choices") and a.dest == "command"]
    train = {a.option_strings[0]: list(a.choices) for a in commands.choices["train"]._actions
             if a.option_strings and a.choices}  # fmt: skip
    found = 0
    for path in [ROOT / "README.md", *DOCS]:
        text = " ".join(path.read_text("utf-8").split())  # a list may break across lines
        for option, listed in re.findall(r"`(--[a-z-]+) \{([\w,]+)\}`", text):
            assert listed.split(",") == train[option], (path.name, option)
            found += 1
    assert found >= 6


def test_the_readmes_first_example_has_the_lines_its_heading_says():
    readme = (ROOT / "README.md").read_text("utf-8")
    words = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    heading, block = re.search(r"\n## (\w+) lines\n\n```python\n(.*?)```", readme, re.S).groups()
    assert words.index(heading.lower()) + 1 == len(block.strip().splitlines())


def test_the_shakespeare_gpts_size_is_the_models():
    """nanoGPT's standard Shakespeare GPT (6 layers, 6 heads, 384 wide, block 256, 65
    characters, tied head counted once), as the README and docs name its size."""
    from modelwright_autograd.lm import models as M

    config = M.LMConfig("gpt", vocab_size=65, block_size=256, n_layer=6, n_head=6, n_embd=384,
                        bias=False)  # fmt: skip
    weights = M.num_parameters(config) - 65 * 384  # the head is the embedding's matrix
    said = f"{weights / 1e6:.1f}M"
    readme = (ROOT / "README.md").read_text("utf-8")
    lm = (ROOT / "docs" / "language-models.md").read_text("utf-8")
    assert f"nanoGPT's {said} Shakespeare GPT" in readme and f"{said} weights" in lm
    assert not re.search(r"\b10\.\dM\b", readme.replace(said, ""))


def test_refusals_are_quoted_as_the_command_line_prints_them():
    """The command line prints `modelwright-autograd CMD: --option: ...`, never argparse's
    `argument --option: ...` (tests/test_cli_usage.py); a quote of the latter is stale."""
    for path in [ROOT / "README.md", *DOCS]:
        assert not re.search(r"`argument --", path.read_text("utf-8")), path.name


def test_the_counts_of_one_bug_engines_are_the_tests():
    """docs/build-your-own.md counts the one-bug scalar engines and network bugs that
    tests/test_learner.py grades (each to one block in at most 40 lines)."""
    from tests import test_learner

    text = " ".join((ROOT / "docs" / "build-your-own.md").read_text("utf-8").split())
    engines, network, total = map(int, re.search(
        r"one of (\d+) scalar engines in `tests/learner_engines/variants.py` with one classic "
        r"bug each; "
        r"the tests plant (\d+) network bugs in the solved `nn.py`, and each of the (\d+)", text
    ).groups())  # fmt: skip
    assert engines == len(test_learner.ONE_BUG) and network == len(test_learner.NETWORK_BUGS)
    assert total == engines + network
