"""The change a review reads (docs/inputs.md, "review"): the unified diff of `review.base`
(from its merge base with HEAD to HEAD), `review.commit` (against its first parent; a root
commit against the empty tree) or `review.uncommitted` (the work tree against HEAD, new
untracked files included, orkeon's own `.orkeon/runs/` left out), read with the audit's
git (run/audit/gitcmd.py: no repository setting can make it start a program), and the
lines of its new side, where a finding may point.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ...config.review import ReviewInputs
from ...errors import InputError
from ..audit.gitcmd import AuditGit, Git

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
DIFF = (
    "diff",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Change:
    """The diff's text, the git command that shows it, and for each file the new side's
    lines inside its hunks (added and context lines: where GitHub shows a comment)."""

    diff: str
    command: str
    lines: dict[str, set[int]] = field(default_factory=dict)

    @property
    def paths(self) -> list[str]:
        return sorted(self.lines)

    def holds(self, path: str, line: int, end_line: int | None = None) -> bool:
        """Whether `path` lines `line`..`end_line` are all on the change's new side."""
        have = self.lines.get(path)
        if not have:
            return False
        return all(n in have for n in range(line, (end_line or line) + 1))


def parse_diff(diff: str) -> dict[str, set[int]]:
    """Each file of a unified diff and its new side's lines in hunks (a deleted file: an
    empty set; it is in the change, but no finding can point at it)."""
    lines: dict[str, set[int]] = {}
    path: str | None = None
    new = 0
    for raw in diff.split("\n"):
        if raw.startswith("diff --git "):
            path = None
        elif raw.startswith("--- "):
            continue
        elif raw.startswith("+++ "):
            target = raw[4:]
            path = target[2:] if target.startswith("b/") else None
            if path is not None:
                lines.setdefault(path, set())
        elif (m := _HUNK.match(raw)) is not None:
            new = int(m.group(1))
        elif path is not None and raw[:1] in ("+", " "):
            lines[path].add(new)
            new += 1
    return lines


_OID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def git_of(workspace: Path, audit_git: AuditGit | None) -> Git:
    """The audit's git (`audit_git`, else PATH's, unconfined) bound to `workspace`."""
    how = audit_git or AuditGit.default(workspace)
    if how.program is None:
        raise InputError("review: no git program outside the workspace (a review reads git)")
    return how.bind(workspace)


def _rev(git: Git, ref: str, field_name: str) -> str:
    r = git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if r.exit_code != 0 or not r.stdout.strip():
        raise InputError(f"{field_name}: no such commit in the workspace's repository: {ref}")
    return r.stdout.strip()


def _commits(git: Git, *refs: str) -> list[str] | None:
    """One `rev-parse` for the work tree and each ref's commit (the usual case: a review
    starts fewer git processes, each in the audit's sandbox); None when it does not give
    them all (no repository, a ref that is no commit, a ref that reads as an option):
    the caller asks again one by one, to say which."""
    if any(r.startswith("-") for r in refs):
        return None
    r = git("rev-parse", "--show-toplevel", *(f"{x}^{{commit}}" for x in refs), "--")
    lines = r.stdout.split("\n")
    if r.exit_code != 0 or len(lines) < len(refs) + 1:
        return None
    oids = [line.strip() for line in lines[1 : len(refs) + 1]]
    return oids if all(_OID.fullmatch(o) for o in oids) else None


def resolve(
    review: ReviewInputs,
    workspace: Path,
    audit_git: AuditGit | None = None,
    git: Git | None = None,
) -> tuple[str, ...]:
    """The two sides to diff (`("FROM", "TO")`, or `("HEAD",)` for the uncommitted
    change); InputError naming the field when a ref or the repository is missing. `git`:
    a runner bound already (`read_change` may use it again), else one of `audit_git`."""
    git = git or git_of(workspace, audit_git)
    if review.base is not None and (found := _commits(git, review.base, "HEAD")) is not None:
        base, head = found
        mb = git("merge-base", base, head)
        if mb.exit_code != 0:
            raise InputError(f"review.base: {review.base} and HEAD have no merge base")
        return mb.stdout.strip(), head
    top = git("rev-parse", "--show-toplevel")
    if top.exit_code != 0:
        raise InputError("review: the workspace is not in a git repository")
    if review.base is not None:
        base = _rev(git, review.base, "review.base")
        head = _rev(git, "HEAD", "review.base")
        mb = git("merge-base", base, head)
        if mb.exit_code != 0:
            raise InputError(f"review.base: {review.base} and HEAD have no merge base")
        return mb.stdout.strip(), head
    if review.commit is not None:
        commit = _rev(git, review.commit, "review.commit")
        parent = git("rev-parse", "--verify", "--quiet", f"{commit}^1")
        return (parent.stdout.strip() if parent.exit_code == 0 else EMPTY_TREE), commit
    return (_rev(git, "HEAD", "review.uncommitted"),)


def read_change(
    sides: tuple[str, ...],
    workspace: Path,
    audit_git: AuditGit | None,
    git: Git | None = None,
) -> Change:
    """The change between `sides` (resolve's), read now (with `git` when given)."""
    git = git or git_of(workspace, audit_git)
    r = git(*DIFF, *sides, "--")
    if r.exit_code != 0:
        raise InputError(f"review: git diff failed: {r.stderr.strip()[:300]}")
    diff = r.stdout
    command = f"git diff {' '.join(sides)}"
    if len(sides) == 1:  # uncommitted: the new files git does not track yet too
        others = git("ls-files", "--others", "--exclude-standard", "-z")
        for rel in sorted(p for p in others.stdout.split("\0") if p):
            if rel.startswith(".orkeon/runs/") or not (workspace / rel).is_file():
                continue
            new = git(*DIFF, "--no-index", "--", "/dev/null", rel)
            diff += new.stdout
        command += " (and the new, untracked files)"
    return Change(diff, command, parse_diff(diff))
