"""`orkeon report --format html`: one self-contained page.

Always: Python's HTML parser checks that it is well-formed, refers to nothing outside
itself, holds the roles, calls and audits, and keeps the run's hostile text as text.
Where Chromium is installed: the page is opened headless and what it shows is checked
(the script ran under the page's Content-Security-Policy, the filters work, nothing
hostile ran, and it fits a laptop screen)."""

from __future__ import annotations

import base64
import hashlib
import re
import struct
from html.parser import HTMLParser
from pathlib import Path

import pytest
from kit.report import (
    HOSTILE,
    HOSTILE_NAME,
    Runs,
    dump_dom,
    make_runs,
    probe,
    screenshot,
    with_probe,
)

from orkeon_run.report import render
from orkeon_run.report.load import load

VOID = {"meta", "br", "input", "img", "hr", "link", "source", "wbr", "area", "col", "embed"}
# SVG elements written self-closing (`<line/>`): HTMLParser reports them as start+end.
EXTERNAL_ATTRS = {
    "src",
    "srcset",
    "action",
    "formaction",
    "poster",
    "data",
    "xlink:href",
    "background",
}


@pytest.fixture
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return make_runs(tmp_path_factory)


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)
        if tag in ("script", "style"):
            self._in = tag
            (self.scripts if tag == "script" else self.styles).append("")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else 'nothing'}>")
            return
        self.stack.pop()
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts[-1] += data
        elif self._in == "style":
            self.styles[-1] += data
        else:
            self.text.append(data)


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    return page


def test_well_formed_and_self_contained(runs: Runs) -> None:
    text = render(runs.mixed, "html")
    page = parse(text)
    assert page.errors == [] and page.stack == []
    assert text.startswith("<!DOCTYPE html>")
    names = {tag for tag, _ in page.tags}
    assert not names & {
        "link",
        "img",
        "iframe",
        "object",
        "embed",
        "frame",
        "base",
        "form",
        "audio",
        "video",
    }
    for tag, attrs in page.tags:
        assert not EXTERNAL_ATTRS & attrs.keys(), (tag, attrs)
        href = attrs.get("href")
        assert href is None or href.startswith("#"), (tag, href)
        assert "url(" not in (attrs.get("style") or "")
    assert all("url(" not in s and "@import" not in s for s in page.styles)
    (script,) = page.scripts
    assert not re.search(r"fetch|XMLHttpRequest|import\(|https?:|WebSocket|\.src\b", script)
    # The policy lets exactly this script run, and nothing load.
    (csp,) = [
        a["content"]
        for t, a in page.tags
        if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    ]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in (csp or "") and "default-src 'none'" in (csp or "")


def test_roles_calls_hooks_and_audits_are_on_the_page(runs: Runs) -> None:
    page = parse(render(runs.mixed, "html"))
    calls = [a for t, a in page.tags if t == "details" and "call" in (a.get("class") or "").split()]
    assert [a["id"] for a in calls] == [f"call-{n}" for n in range(1, 8)]
    assert sorted({a["data-role"] for a in calls}) == ["b1/a", "b1/b"]
    refused = [a["id"] for a in calls if "refused" in (a.get("class") or "")]
    assert len(refused) == 4
    (lint,) = [c.index for c in load(runs.mixed).calls if c.target == "src/a/lint.py"]
    assert [a["id"] for a in calls if "hookfail" in (a.get("class") or "")] == [f"call-{lint}"]
    marks = [a for t, a in page.tags if t == "a" and "mark" in (a.get("class") or "")]
    assert sorted(a["href"] for a in marks if "audit" not in a["class"]) == sorted(
        f"#{a['id']}" for a in calls
    )
    assert [a["class"] for a in marks if "audit" in a["class"]] == ["mark audit failed"]
    text = "".join(page.text)
    for expected in ("[refused by the gate: Write(secret/**)]", "error: there is no tool named 'no_such_tool'",
                     "[test -f src/a/missing.py exited 1]", "refused", "failed", "passed"):  # fmt: skip
        assert expected in text
    svg = [t for t, _ in page.tags if t in ("svg", "polyline")]
    assert svg == ["svg", "polyline"]  # one limit (seconds): one line


def test_hostile_text_is_escaped(runs: Runs) -> None:
    page = parse(render(runs.mixed, "html"))
    names = [t for t, _ in page.tags]
    assert "img" not in names and "b" in names  # <b> is the report's own (the tool name)
    text = "".join(page.text)
    assert HOSTILE in text  # the hook's line, as text
    assert HOSTILE_NAME in text
    assert len(page.scripts) == 1  # the report's own; the run's <script> is text


def test_a_killed_run_and_settings_hooks(runs: Runs) -> None:
    killed = parse(render(runs.killed, "html"))
    assert killed.errors == []
    assert "unfinished: no result, the run was killed or is still running" in "".join(killed.text)
    stopped = "".join(parse(render(runs.stopped, "html")).text)
    assert "Hooks outside calls" in stopped and "the stop hook broke" in stopped
    assert "$0.0243" in stopped and "usd (% of $5.00)" in stopped  # units.money


def test_chromium_runs_the_script_and_filters(runs: Runs, tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    path.write_text(render(runs.mixed, "html"))
    dom = dump_dom(path, tmp_path, "#refused")
    assert re.search(r'<body[^>]*data-ready="yes"', dom), "the page's script did not run"
    assert 'data-pwned="1"' not in dom and "<img" not in dom and "&lt;img src=x" in dom
    assert "<title>orkeon dev-batches: failed" in dom
    assert '<span id="shown" class="muted">4 of 7 calls shown</span>' in dom
    shown = re.findall(
        r'<details class="call ([a-z ]+)" id="call-\d+" data-role="[^"]*"( hidden="")?', dom
    )
    assert len(shown) == 7
    assert all(("refused" in cls) == (not hidden) for cls, hidden in shown)


def test_chromium_fits_a_laptop_screen(runs: Runs, tmp_path: Path) -> None:
    """The page with a probe script (its hash added to the policy) at 1366 x 768."""
    text = render(runs.mixed, "html")  # long unbroken hostile lines included
    assert "script-src &#x27;sha256-" in text  # the policy's quotes, escaped in its attribute
    path = tmp_path / "probe.html"
    path.write_text(with_probe(text))
    attrs = probe(dump_dom(path, tmp_path))
    assert attrs["ready"] == "yes"
    assert int(attrs["overflow"]) <= 0, "the page scrolls sideways on a laptop screen"
    assert (attrs["marks"], attrs["thin"]) == ("8", "0")  # seven calls and the audit, each visible
    assert int(attrs["chart"]) > 100


def test_chromium_fits_a_phone_screen(runs: Runs, tmp_path: Path) -> None:
    """At 390 px wide the page does not scroll sideways (its tables scroll inside
    themselves instead of breaking letter by letter), the script ran without an error, and
    a screenshot has the window's size."""
    text = render(runs.mixed, "html")
    assert '<section id="changes">' in text  # the Changes section is on the page checked
    path = tmp_path / "probe.html"
    path.write_text(with_probe(text))
    attrs = probe(dump_dom(path, tmp_path, size="390,844"))
    assert attrs["ready"] == "yes", "the page's script did not run to its end"
    assert int(attrs["overflow"]) <= 0, "the page scrolls sideways at 390 px"
    shot = tmp_path / "phone.png"
    screenshot(path, tmp_path, shot, size="390,844")
    width, height = struct.unpack(">II", shot.read_bytes()[16:24])  # the PNG's IHDR
    assert (width, height) == (390, 844)
