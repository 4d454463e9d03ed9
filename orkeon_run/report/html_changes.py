"""The HTML report's "Changes" section (each batch's files, per role, with their diffs,
syntax-highlighted and collapsible; large diffs cut with a note) and "Model text" section
(what each role's model said, turn by turn).

The diff's code is highlighted by Pygments, one line at a time (a token that spans lines,
a docstring, is coloured per line); every piece passes `escape`.
"""

from __future__ import annotations

from html import escape
from typing import Any

from .changes import BatchChanges, FileView, TurnText
from .model import RunView

FILE_LINES = 1500  # a file's diff is cut past this many lines
PAGE_LINES = 15000  # and the page's diffs past this many in all
# Pygments token types -> the page's few classes (html_assets.STYLE).
_TOKENS = (
    ("Comment", "tc"),
    ("Literal.String", "ts"),
    ("Literal.Number", "tn"),
    ("Keyword", "tk"),
    ("Name.Function", "tf"),
    ("Name.Class", "tf"),
    ("Name.Builtin", "tb"),
    ("Name.Decorator", "tb"),
    ("Operator.Word", "tk"),
)


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def changes_section(v: RunView, patch_hint: str) -> str:
    if not v.changes:
        return ""
    budget = [PAGE_LINES]
    parts = []
    for b in v.changes:
        parts.append(_batch(b, budget))
    total = sum(len(b.files) for b in v.changes)
    added = sum(f.added for b in v.changes for f in b.files)
    removed = sum(f.removed for b in v.changes for f in b.files)
    head = (
        f'<p class="facts">{total} file change{"s" if total != 1 else ""} in '
        f"{len(v.changes)} batch{'es' if len(v.changes) != 1 else ''}: "
        f'<span class="ok">+{added}</span> <span class="bad">−{removed}</span>. '
        f"The whole change as a patch: <code>{esc(patch_hint)}</code></p>"
    )
    return f'<section id="changes"><h2>Changes</h2>{head}{"".join(parts)}</section>'


def _batch(b: BatchChanges, budget: list[int]) -> str:
    label = f"batch <code>{esc(b.batch)}</code>" + (
        f' <span class="muted">({esc(b.step)})</span>' if b.step else ""
    )
    if not b.files:
        return f'<h3>{label}</h3><p class="muted">No file changed.</p>'
    by_role: dict[str, list[FileView]] = {}
    for f in b.files:
        key = ", ".join(f.roles) if f.roles else "outside every role's roots"
        by_role.setdefault(key, []).append(f)
    out = [f"<h3>{label}</h3>"]
    for role, files in by_role.items():
        out.append(f'<p class="role"><code>{esc(role)}</code></p>')
        out.extend(_file(f, budget) for f in files)
    return "".join(out)


def _file(f: FileView, budget: list[int]) -> str:
    counts = (
        "binary"
        if f.binary
        else f'<span class="ok">+{f.added}</span> <span class="bad">−{f.removed}</span>'
    )
    summary = f'<code>{esc(f.path)}</code> <span class="muted">{esc(f.status)}</span> {counts}'
    if f.binary:
        body = '<p class="muted">A binary file: no diff shown (it is in the patch).</p>'
    elif not f.known:
        body = '<p class="muted">Its content was not kept (too large, or not known when the batch began): no diff.</p>'
    else:
        body = _diff(f, budget)
    return f'<details class="file"><summary>{summary}</summary>{body}</details>'


def _diff(f: FileView, budget: list[int]) -> str:
    lines = f.diff().splitlines()
    lines = [ln for ln in lines if not ln.startswith(("diff --git", "index ", "--- ", "+++ "))]
    cap = min(FILE_LINES, max(budget[0], 0))
    shown, cut = lines[:cap], len(lines) - min(len(lines), cap)
    budget[0] -= len(shown)
    lexer = _lexer(f.path)
    rows = "".join(_line(ln, lexer) for ln in shown)
    note = (
        f'<p class="muted">Cut: {cut:,} more line{"s" if cut != 1 else ""} of this diff '
        "(the patch has all of it).</p>"
        if cut
        else ""
    )
    return f'<pre class="diff">{rows}</pre>{note}'


def _line(line: str, lexer: Any) -> str:
    if line.startswith("@@"):
        return f'<span class="dh">{esc(line)}</span>\n'
    if line.startswith("\\"):
        return f'<span class="muted">{esc(line)}</span>\n'
    mark, code = line[:1], line[1:]
    cls = {"+": "da", "-": "dd"}.get(mark, "dc")
    return f'<span class="{cls}">{esc(mark or " ")}{_highlight(code, lexer)}</span>\n'


def _lexer(path: str) -> Any:
    try:
        from pygments.lexers import get_lexer_for_filename
        from pygments.util import ClassNotFound
    except ImportError:  # pragma: no cover - pygments comes with the package
        return None
    try:
        return get_lexer_for_filename(path.rsplit("/", 1)[-1], stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def _highlight(code: str, lexer: Any) -> str:
    if lexer is None or not code:
        return esc(code)
    from pygments import lex

    out = []
    for kind, value in lex(code, lexer):
        name = str(kind).removeprefix("Token.")
        cls = next(
            (c for prefix, c in _TOKENS if name == prefix or name.startswith(prefix + ".")), ""
        )
        out.append(f'<span class="{cls}">{esc(value)}</span>' if cls else esc(value))
    return "".join(out).rstrip("\n")


def texts_section(v: RunView) -> str:
    """What each role's model said, turn by turn (its words, not its tool calls)."""
    if not v.texts:
        return ""
    by_role: dict[str, list[TurnText]] = {}
    for t in v.texts:
        by_role.setdefault(t.role, []).append(t)
    parts = []
    for role, turns in by_role.items():
        items = "".join(
            f'<p class="muted">turn {t.turn}</p><pre>{esc(t.text)}'
            + ("\n… (cut; the transcript has all of it)" if t.cut else "")
            + "</pre>"
            for t in turns
        )
        parts.append(
            f'<details class="file"><summary><code>{esc(role)}</code> '
            f'<span class="muted">{len(turns)} answer{"s" if len(turns) != 1 else ""} with text</span>'
            f"</summary>{items}</details>"
        )
    return f'<section id="texts"><h2>Model text</h2>{"".join(parts)}</section>'
