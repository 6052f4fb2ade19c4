"""The interactive page in a real browser: headless Chromium (Debian's ``chromium``) driven
by Playwright (``pip install -e ".[test]"``; Playwright's own browser download is not
needed). The test steps through the whole backward pass with the keyboard, checks the
highlighted node against the trace's order and the final gradients against the engine's,
and that the page fetched nothing. In CI (CI=true) a missing browser fails the test.

``MW_SCREENSHOT=docs/images/explain_page.png pytest tests/test_explain_browser.py`` also
refreshes the README's screenshot of the page mid-backward.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from modelwright_autograd import MLP, Value
from modelwright_autograd.cli import main
from modelwright_autograd.explain import explain, parse_assignments, parse_expression

HOW_TO_INSTALL = (
    "install a browser and its driver: `apt-get install chromium` (Debian/Ubuntu) and "
    '`pip install -e ".[test]"` (Playwright); or set MW_CHROMIUM to a Chromium executable'
)


def _chromium_path() -> str | None:
    for candidate in (os.environ.get("MW_CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and (found := shutil.which(candidate)):
            return found
    return None


def _no_browser(problem: str | None) -> None:
    """Without a browser: fail in CI (so the install step cannot rot), skip locally."""
    if problem is None:
        return
    message = f"{problem}: {HOW_TO_INSTALL}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run the browser test, but {message}")
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium, or a skip (locally) / a failure (in CI) saying how to get one."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _no_browser("the playwright package is not installed")
    executable = _chromium_path()
    if executable is None:
        _no_browser("no Chromium executable was found")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield browser
        browser.close()


def _open(browser, path: Path):
    """Open the page; return it and the list that collects every request it makes."""
    page = browser.new_page(viewport={"width": 1280, "height": 820})
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(path.as_uri())
    return page, requests, errors


def _current(page) -> int | None:
    return page.evaluate(
        "() => { const g = document.querySelector('g.node.current');"
        " return g ? Number(g.dataset.id) : null; }"
    )


def _shown_grads(page) -> dict[str, float]:
    """The "Gradients so far" list, read from the page in one call."""
    pairs = page.evaluate(
        "() => Array.from(document.querySelectorAll('#mw-grads li'),"
        " li => [li.dataset.name, li.dataset.grad])"
    )
    return {name: float(grad) for name, grad in pairs}


def test_stepping_through_the_backward_pass_with_the_keyboard(browser, tmp_path):
    variables = parse_assignments(["a=2", "b=-0.5", "c=0.3"])
    out = parse_expression("tanh(a*b + c) * a", variables)
    trace = explain(out, variables)
    path = tmp_path / "page.html"
    assert (
        main(["explain", "tanh(a*b + c) * a", "a=2", "b=-0.5", "c=0.3", "--html", str(path)]) == 0
    )
    page, requests, errors = _open(browser, path)

    assert _current(page) is None and set(_shown_grads(page).values()) == {0.0}
    highlighted = []
    for k in range(len(trace.steps)):
        page.keyboard.press("ArrowRight")
        highlighted.append(_current(page))
        if k == 2 and os.environ.get("MW_SCREENSHOT"):  # mid-backward, for the README
            page.screenshot(path=os.environ["MW_SCREENSHOT"])
    # the highlighted node follows the trace, which is reverse topological order
    assert highlighted == [s.id for s in trace.steps]
    assert highlighted == sorted(highlighted, reverse=True)
    page.keyboard.press("ArrowRight")  # past the end: nothing changes
    assert _current(page) == trace.steps[-1].id

    # the end state is the engine's gradients, exactly, and a shows how it accumulated
    assert _shown_grads(page) == {name: v.grad for name, v in variables.items()}
    a_box = page.query_selector(f"#mw-n{next(n.id for n in trace.nodes if n.name == 'a')}")
    assert float(a_box.get_attribute("data-grad")) == variables["a"].grad
    assert a_box.query_selector(".sum").text_content().startswith("= -0.604368 + -0.63474")
    assert "-1.23911" in page.text_content("#mw-grads")

    # back, reset, and the screen-reader list marks the current step
    page.keyboard.press("ArrowLeft")
    assert _current(page) == trace.steps[-2].id
    current_item = page.query_selector("#mw-steps li[aria-current='step']")
    assert current_item.text_content().startswith(f"Step {len(trace.steps) - 1}:")
    page.keyboard.press("Home")
    assert _current(page) is None

    # Space plays (one step every 0.9 s) and pauses
    page.keyboard.press(" ")
    page.wait_for_function("() => document.body.dataset.backwardStep >= 2", timeout=10_000)
    page.keyboard.press(" ")
    paused_at = page.evaluate("document.body.dataset.backwardStep")
    page.wait_for_timeout(1500)
    assert page.evaluate("document.body.dataset.backwardStep") == paused_at
    page.click("#mw-reset")
    assert _current(page) is None

    # forward-pass mode fills in the data first, then runs backward
    page.keyboard.press("f")
    computed = [n for n in trace.nodes if n.inputs]
    assert page.text_content(f"#mw-n{computed[0].id} .data") == "data ?"
    for _ in computed:
        page.keyboard.press("ArrowRight")
    assert page.text_content(f"#mw-n{computed[0].id} .data") == f"data {computed[0].data:.6g}"
    page.keyboard.press("ArrowRight")
    assert _current(page) == trace.steps[0].id

    page.screenshot(path=str(tmp_path / "page.png"))
    assert (tmp_path / "page.png").read_bytes()[:4] == b"\x89PNG"
    assert requests == [path.as_uri()]  # the page itself, and nothing else
    assert errors == []


def test_a_two_layer_mlp_page_steps_to_the_engines_gradients(browser, tmp_path):
    model = MLP(1, [16, 16, 1])
    x = Value(0.5, label="x")
    params = {f"p{i}": p for i, p in enumerate(model.parameters())}
    trace = explain(model([x]), {"x": x, **params}, html=str(tmp_path / "mlp.html"))
    assert len(trace.nodes) > 300
    page, requests, errors = _open(browser, tmp_path / "mlp.html")
    page.click("#mw-next")
    assert _current(page) == trace.steps[0].id
    page.keyboard.press("End")
    assert _shown_grads(page) == {name: v.grad for name, v in {"x": x, **params}.items()}
    assert requests == [(tmp_path / "mlp.html").as_uri()]
    assert errors == []


def test_without_a_browser_ci_is_red_and_a_local_run_skips(monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("MW_CHROMIUM", "")
    assert _chromium_path() is None
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the browser test"):
        _no_browser("no Chromium executable was found")
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
        _no_browser("no Chromium executable was found")


def test_a_gradient_kept_from_an_earlier_backward_is_where_the_page_starts(browser, tmp_path):
    a = Value(3.0, label="a")
    out = a * a
    out.backward()  # a.grad is 2a = 6 before explain's own pass adds 3 + 3 more
    explain(out, html=str(tmp_path / "p.html"))
    page, _, errors = _open(browser, tmp_path / "p.html")
    assert _shown_grads(page) == {"a": 6.0}
    page.keyboard.press("End")
    assert _shown_grads(page) == {"a": a.grad} == {"a": 12.0}
    assert "6 (before) + 3 + 3 = 12" in page.text_content("#mw-grads")
    assert errors == []
