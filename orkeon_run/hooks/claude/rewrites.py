"""A file a PostToolUse hook rewrote (a formatter): the model is told, as Claude Code tells it.

Claude Code keeps what every file the model read or wrote held; when one changed on disk
since (a formatter a PostToolUse hook ran, say), the model gets a note with the changed
lines, numbered, so that its next edit works on the text that is there rather than on
text that is gone. orkeon does the same for the file a `file_write` or `file_edit` call
just wrote: `Watch.before_hooks` keeps the bytes the tool left, `Watch.note` compares them
with the file once the PostToolUse hooks ended. The note is Claude Code's (2.1.238 and
later) with the path as the call wrote it:

    Note: PATH changed on disk since you last read it. That's usually deliberate, so take
    it as the current state rather than reverting it; if the change looks wrong, say so
    rather than undoing it yourself — otherwise no need to call it out. Here are the
    relevant changes (shown with line numbers):
    LINE\tTEXT …

(one line in the text the model reads, then the snippet). The snippet is Claude Code's
too: each changed region with 8 lines of context around it, the lines as they are now,
numbered as in the file now (Claude Code numbers a region from where it began before the
change, which is off once an earlier region added or removed lines), regions joined by a
`...` line, cut at 8192 characters with `... [N lines truncated] ...`. A file over 1 MiB,
one that is not UTF-8 text, or one that is no regular file now (a symlink) gets the note
without lines: `The diff is omitted here because …; use file_read if you need the current
content.` A file the hooks removed gets no note (Claude Code forgets it).

The file is read as the tools read it (tools/files.py: no symlink followed), so a symlink
swapped in meanwhile shows nothing from outside the workspace.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...calls import CheckedCall
from ...tools.files import read_bytes

NOTE = (
    "Note: {path} changed on disk since you last read it. That's usually deliberate, so "
    "take it as the current state rather than reverting it; if the change looks wrong, say "
    "so rather than undoing it yourself — otherwise no need to call it out."
)
WITH_LINES = " Here are the relevant changes (shown with line numbers):\n{snippet}"
OMITTED = " The diff is omitted here because {why}; use file_read if you need the current content."
CONTEXT_LINES = 8
SNIPPET_CHARS = 8192
MOST_BYTES = 1 << 20


@dataclass(frozen=True)
class Watch:
    """The file a writing call left, before its PostToolUse hooks run."""

    workspace: Path
    path: Path
    raw: str
    before: bytes | None  # None: too large to keep
    stat: tuple[int, ...] | None

    @classmethod
    def before_hooks(cls, workspace: Path, call: CheckedCall, result: Any) -> Watch | None:
        """A watch on the file `call` wrote, or None when it wrote none (not a writing
        tool, or it failed)."""
        if not call.tool.writes or call.path is None or call.raw_path is None:
            return None
        if not isinstance(result, str) or result.startswith("error:"):
            return None
        stat = _stat(call.path)
        if stat is None:
            return None
        return cls(
            workspace, call.path, call.raw_path, read_bytes(workspace, call.path, MOST_BYTES), stat
        )

    def note(self) -> str | None:
        """The note for the model when the hooks changed the file, else None. Bytes are
        compared (a rewrite in place within one clock tick keeps size and times); only a
        file too large to keep is judged by its size, times and inode."""
        stat = _stat(self.path)
        if stat is None:
            return None  # removed
        head = NOTE.format(path=self.raw)
        after = None if self.before is None else read_bytes(self.workspace, self.path, MOST_BYTES)
        if self.before is None or after is None:
            if stat == self.stat:
                return None
            big = stat[0] > MOST_BYTES or self.before is None
            why = "the file is larger than 1 MiB" if big else "it is no regular file now"
            return head + OMITTED.format(why=why)
        if after == self.before:
            return None
        try:
            old, new = self.before.decode("utf-8"), after.decode("utf-8")
        except UnicodeDecodeError:
            return head + OMITTED.format(why="the file is not UTF-8 text")
        text = snippet(old, new)
        if not text:
            return head + OMITTED.format(why="the file is empty now")
        return head + WITH_LINES.format(snippet=text)


def _stat(path: Path) -> tuple[int, ...] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no line
    return lines


def snippet(old: str, new: str) -> str:
    """The changed regions of `new` against `old`, numbered, joined by `...`, capped."""
    a, b = _lines(old), _lines(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    parts = []
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        start, end = group[0][3], group[-1][4]
        if start < end:
            parts.append(
                "\n".join(
                    f"{n}\t{line.removesuffix(chr(13))}"
                    for n, line in enumerate(b[start:end], start + 1)
                )
            )
    return _cap("\n...\n".join(parts))


def _cap(text: str) -> str:
    if len(text) <= SNIPPET_CHARS:
        return text
    cut = text.rfind("\n", 0, SNIPPET_CHARS + 1)
    head = text[:cut] if cut > 0 else text[:SNIPPET_CHARS]
    dropped = text.count("\n", len(head) + 1) + 1
    return f"{head}\n\n... [{dropped} lines truncated] ..."


__all__ = ["Watch", "snippet"]
