"""The Markdown report's "Changes": each batch's changed files with their `+/-` counts and
roles, and, when the whole change is small, its diff in fenced blocks."""

from __future__ import annotations

from .markdown_text import code, ticks_for
from .model import RunView

MAX_FILES = 60
# The diffs are shown when all of them together are at most this many lines.
DIFF_LINES = 200


def changes(v: RunView) -> str:
    if not v.changes:
        return ""
    rows = ["| batch | file | change | roles |", "| --- | --- | --- | --- |"]
    files = [(b, f) for b in v.changes for f in b.files]
    for b, f in files[:MAX_FILES]:
        what = "binary" if f.binary else f"+{f.added} −{f.removed}"
        roles = ", ".join(f.roles) or "outside every role's roots"
        rows.append(
            f"| {code(b.batch, table=True)} | {code(f.path, table=True)} | {f.status} {what} "
            f"| {code(roles, table=True)} |"
        )
    if len(files) > MAX_FILES:
        rows.append(f"\n… and {len(files) - MAX_FILES} more files (`orkeon report --format html`).")
    if not files:
        rows.append("| — | no file changed | | |")
    out = ["\n".join(rows)]
    diffs = [f.diff() for _, f in files if f.known and not f.binary]
    lines = sum(d.count("\n") for d in diffs)
    if diffs and lines <= DIFF_LINES:
        body = "".join(diffs)
        ticks = ticks_for(body)
        out.append(
            "<details><summary>The diff</summary>\n\n"
            f"{ticks}diff\n{body.rstrip(chr(10))}\n{ticks}\n\n</details>"
        )
    elif diffs:
        out.append(f"The diff ({lines:,} lines): `orkeon report RUN_DIR --format patch`.")
    return "\n\n".join(out)
