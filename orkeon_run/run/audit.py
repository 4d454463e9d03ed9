"""The audit after a batch (INTERFACE sections 7 and 8), run from orkeon's own code: no
hook, no gate, no budget charge.

1. What changed since the batch began: in a git repository, `git status --porcelain -z`
   (untracked files included) before and after, each dirty file fingerprinted by its
   content, plus every path a moved HEAD touched; elsewhere a snapshot of every file's
   content hash. Paths under `.orkeon/` (and the run directory) are not the crew's work.
2. Every changed path must lie under the batch's roots. In a git repository the
   repository's own guards (`config`, `config.worktree`, `hooks/`, `info/` of its git
   folder) must not change at all, whatever the roots: a role that wrote them (`cp` into
   `.git/config`) made every later `git` run a program of its choosing.
3. `audit.build`, then `audit.test`, when given: each must exit 0.

The first failing check decides the record: `{batch, passed, outside_roots,
failed_command, output_tail}`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from .. import proc

TAIL_CHARS = 4000
# The audit's own commands are not charged to the budget; this bounds a hung build.
COMMAND_TIMEOUT = 1800.0
GIT_TIMEOUT = 120.0
_GIT_CAP = 1 << 26
ALWAYS_IGNORED = (".orkeon/",)
# Under .orkeon/ only orkeon's own outputs (spec, plan, runs) are exempt. The guards a run
# starts with are not: a role that rewrote a hook script, the settings or a crew would
# disarm the checks of every later batch, so such a change is outside the roots.
GUARDED = (".orkeon/hooks/", ".orkeon/crews/", ".orkeon/settings.json")
# Folders that test and build tools create with a `.gitignore` of `*` in them (pytest,
# mypy, ruff, hypothesis, tox, nox, coverage's html, uv build, and venv in Python 3.13+
# and uv): a role that runs the tests makes one, and what such a file hides is only its
# own folder's content.
SELF_IGNORING_TOOL_DIRS = frozenset(
    {".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", ".tox", ".nox", ".venv",
     "venv", "env", "htmlcov", "dist", "build"}
)  # fmt: skip
# Fingerprint of a path: its content digest, a symlink's target, or a marker.
Fingerprint = tuple[str, str]


@dataclass(frozen=True)
class Snapshot:
    """The workspace's state when a batch began."""

    git: bool
    ignore: tuple[str, ...]
    prefix: str = ""  # the workspace relative to the repository root ("" or "sub/dir/")
    head: str | None = None
    # git: path -> (XY status, content fingerprint) for dirty paths;
    # no git: path -> content fingerprint for every file.
    entries: dict[str, Any] = field(default_factory=dict)
    # no git: path -> stat key, so an unchanged file is not hashed again.
    stats: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # git: the repository's guard files (path relative to the workspace) -> fingerprint;
    # None in a snapshot saved before orkeon watched them (a resumed older run).
    guards: dict[str, Any] | None = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """For state.json: a resumed batch is audited against its first start."""
        return {
            "git": self.git,
            "ignore": list(self.ignore),
            "prefix": self.prefix,
            "head": self.head,
            "entries": self.entries,
            "stats": self.stats,
            "guards": self.guards,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Snapshot:
        def tup(v: Any) -> Any:
            return tuple(tup(x) for x in v) if isinstance(v, list) else v

        return cls(
            git=bool(d["git"]),
            ignore=tuple(d["ignore"]),
            prefix=d.get("prefix", ""),
            head=d.get("head"),
            entries={k: tup(v) for k, v in d.get("entries", {}).items()},
            stats={k: tuple(v) for k, v in d.get("stats", {}).items()},
            guards=({k: tup(v) for k, v in d["guards"].items()} if "guards" in d else None),
        )


def norm_root(root: str) -> str:
    """`./src/api/` -> `src/api`; the workspace itself -> ``."""
    p = PurePosixPath(root.strip())
    text = p.as_posix()
    return "" if text in (".", "/") else text.lstrip("/")


def under(path: str, roots: Iterable[str]) -> bool:
    """Whether workspace-relative `path` lies in one of `roots` (whole components)."""
    for root in roots:
        r = norm_root(root)
        if r == "" or path == r or path.startswith(r + "/"):
            return True
    return False


def ignore_list(workspace: Path, run_dir: Path | None) -> tuple[str, ...]:
    """What the audit never counts: `.orkeon/`, and the run directory when it lies in the
    workspace (its events and transcripts are orkeon's, not the crew's)."""
    out = list(ALWAYS_IGNORED)
    if run_dir is not None:
        try:
            rel = run_dir.resolve().relative_to(workspace).as_posix()
        except ValueError:
            rel = None
        if rel and rel != ".":
            out.append(rel.rstrip("/") + "/")
    return tuple(out)


def _ignored(path: str, ignore: Sequence[str]) -> bool:
    if any(path == g.rstrip("/") or path.startswith(g) for g in GUARDED):
        return False
    return any(path == i.rstrip("/") or path.startswith(i) for i in ignore)


def _holds_guarded(folder: str) -> bool:
    return any(g.startswith(folder) for g in GUARDED)


# --- fingerprints ------------------------------------------------------------------------


def _fingerprint(full: Path) -> Fingerprint:
    try:
        st = os.lstat(full)
    except FileNotFoundError:
        return ("missing", "")
    except OSError as exc:
        return ("error", str(exc))
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(full))
    if stat.S_ISDIR(st.st_mode):
        return ("dir", "")
    if not stat.S_ISREG(st.st_mode):
        return ("special", str(st.st_mode))
    try:
        with open(full, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
    except OSError as exc:
        return ("error", str(exc))
    return (f"file:{stat.S_IMODE(st.st_mode):o}", digest)


def _stat_key(st: os.stat_result) -> tuple[int, ...]:
    # ctime moves on every write and cannot be set back from user space, so an unchanged
    # key means unchanged content.
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


# --- git ---------------------------------------------------------------------------------


# The repository's own config is the model's to write (cp into .git/config): an fsmonitor
# or hooks path set there must not run a program during the audit.
_GIT = ("git", "-c", "core.quotepath=off", "-c", "core.fsmonitor=false",
        "-c", "core.hooksPath=/dev/null")  # fmt: skip


def _git(workspace: Path, *args: str) -> proc.ProcResult:
    return proc.run(
        [*_GIT, *args],
        cwd=workspace,
        timeout=GIT_TIMEOUT,
        cap=_GIT_CAP,
        # GIT_NO_REPLACE_OBJECTS: `git replace` (a plain git command a role may run) would
        # make HEAD's tree read as the changed index, and status report nothing.
        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_NO_REPLACE_OBJECTS": "1"},
        # A file name that is not UTF-8 must name the same file when fingerprinted.
        errors="surrogateescape",
    )


def shown(path: str) -> str:
    """A path as the audit's record names it: bytes that are not UTF-8 as `\\xff`, so
    the record is plain text wherever it is written."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


@dataclass(frozen=True)
class _Repo:
    prefix: str  # the workspace's path inside its repository ("" at the top)
    git_dir: Path
    common_dir: Path  # differs from git_dir in a linked worktree


def _git_repo(workspace: Path) -> _Repo | None:
    """Where the workspace sits in its repository, or None: not in a git work tree."""
    if not (workspace / ".git").exists():
        # Only a workspace inside a work tree is a git workspace; ask git.
        r = _git(workspace, "rev-parse", "--is-inside-work-tree")
        if r.exit_code != 0 or r.stdout.strip() != "true":
            return None
    r = _git(workspace, "rev-parse", "--show-prefix", "--git-dir", "--git-common-dir")
    lines = r.stdout.split("\n")
    if r.exit_code != 0 or len(lines) < 3:
        return None
    # Only the line ends go: a folder name may begin or end with a space.
    prefix, git_dir, common_dir = (line.rstrip("\r") for line in lines[:3])
    return _Repo(prefix, workspace / git_dir, workspace / common_dir)


# What in a git folder decides which programs git runs (aliases, fsmonitor, hooks,
# filters) or what it reports (info/exclude hides paths from `git status`). Not the rest
# of info/: git itself writes info/refs (`git gc`, an automatic gc after a commit).
_REPO_GUARDS = ("config", "config.worktree", "hooks", "info/exclude", "info/attributes",
                "info/sparse-checkout", "info/grafts")  # fmt: skip


def _outside_guards(workspace: Path, prefix: str) -> dict[str, Path]:
    """Files outside the workspace that decide what its `git status` shows, by the name
    the audit gives them: the `.gitignore` and `.gitattributes` of the folders between
    the repository's top and the workspace (`../.gitignore`), and the user's git
    configuration, global ignore and attributes files (by their absolute paths)."""
    named: dict[str, Path] = {}
    folder = workspace
    for _ in PurePosixPath(prefix).parts:
        folder = folder.parent
        for name in (".gitignore", ".gitattributes"):
            named[os.path.relpath(folder / name, workspace)] = folder / name
    home = Path(os.environ.get("HOME") or "~").expanduser()
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "git"
    for path in (home / ".gitconfig", xdg / "config", xdg / "ignore", xdg / "attributes"):
        named[str(path)] = path
    return named


def _submodule_dirs(repo: _Repo) -> list[Path]:
    """The git folders of the repository's submodules (`modules/NAME`, nested ones
    under theirs): a submodule's `info/exclude` hides files in it as the top one's
    does."""
    found = []
    for top, dirs, files in os.walk(repo.common_dir / "modules"):
        if "HEAD" in files:  # a git folder: only its own `modules/` may hold more
            found.append(Path(top))
            dirs[:] = [d for d in dirs if d == "modules"]
    return found


def _repo_guards(workspace: Path, repo: _Repo) -> dict[str, Fingerprint]:
    found: dict[str, Fingerprint] = {}
    for name, path in _outside_guards(workspace, repo.prefix).items():
        fp = _fingerprint(path)
        if fp[0] != "missing":
            found[name] = fp
    for folder in dict.fromkeys((repo.common_dir, repo.git_dir, *_submodule_dirs(repo))):
        for name in _REPO_GUARDS:
            top = folder / name
            paths = [top]
            if top.is_dir() and not top.is_symlink():
                paths = [Path(d, f) for d, _, files in os.walk(top) for f in files]
            for path in paths:
                fp = _fingerprint(path)
                if fp[0] != "missing":
                    found[os.path.relpath(path, workspace)] = fp
    return found


def _git_head(workspace: Path) -> str | None:
    r = _git(workspace, "rev-parse", "-q", "--verify", "HEAD^{commit}")
    if r.exit_code != 0:
        return None
    return r.stdout.strip() or None


def _split_z(text: str) -> list[str]:
    return [p for p in text.split("\0") if p]


def _strip(prefix: str, path: str) -> str | None:
    if prefix and not path.startswith(prefix):
        return None
    return path[len(prefix) :]


def _must_have_worked(r: proc.ProcResult, what: str) -> None:
    """AuditError unless `what` exited 0 with all of its output read: a partial list of
    paths would pass changes unseen."""
    if r.exit_code != 0 or r.stdout_dropped:
        why = r.error or r.first_line() or "its output was too long"
        raise AuditError(f"{what} failed: {why}")


def _git_status(workspace: Path, prefix: str, ignore: Sequence[str]) -> dict[str, str]:
    r = _git(
        workspace,
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules=none",
        "--",
        ".",
    )
    _must_have_worked(r, "git status")
    out: dict[str, str] = {}
    for item in _split_z(r.stdout):
        xy, raw = item[:2], item[3:]
        path = _strip(prefix, raw)
        if path is None or not path or _ignored(path, ignore):
            continue
        out[path.rstrip("/")] = xy
    return out


def _git_list(workspace: Path, *args: str) -> list[str]:
    """The entries of `git ls-files -z --full-name ARGS` (paths from the repository root)."""
    r = _git(workspace, "ls-files", "-z", "--full-name", *args)
    _must_have_worked(r, "git ls-files")
    return _split_z(r.stdout)


def _git_unseen(workspace: Path, prefix: str, ignore: Sequence[str]) -> dict[str, str]:
    """What `git status` cannot show and a role can arrange with the programs it may run:
    tracked files marked assume-unchanged or skip-worktree (`git update-index`), whose
    changes status no longer reports, and `.gitignore` files that git ignores (one holding
    `*` ignores itself and everything beside it). Each is watched like a dirty path."""
    found: dict[str, str] = {}
    for item in _git_list(workspace, "-v", "--", "."):
        tag = item[:1]
        if tag.islower() or tag == "S":  # h, s, m, r, c, k: assume-unchanged; S: skip-worktree
            found[item[2:]] = f"{tag} "
    # --directory: a folder that is ignored as a whole is one entry, not walked (a
    # .gitignore inside a folder that was already ignored can hide nothing more).
    hidden = ("--others", "--ignored", "--exclude-standard", "--directory", "--",
              ":(glob)**/.gitignore")  # fmt: skip
    for raw in _git_list(workspace, *hidden):
        parts = PurePosixPath(raw).parts
        if parts[-1] == ".gitignore" and not SELF_IGNORING_TOOL_DIRS.intersection(parts):
            found[raw] = "!!"
    out = {}
    for raw, xy in found.items():
        path = _strip(prefix, raw)
        if path and not _ignored(path, ignore):
            out[path] = xy
    return out


def _git_dirty(workspace: Path, prefix: str, ignore: Sequence[str]) -> dict[str, Any]:
    status = _git_unseen(workspace, prefix, ignore)
    status.update(_git_status(workspace, prefix, ignore))
    return {p: (xy, _fingerprint(workspace / p)) for p, xy in status.items()}


def _git_moved(workspace: Path, prefix: str, old: str | None, new: str | None) -> list[str]:
    """Paths that differ between two commits (a role moved HEAD under the audit)."""
    if old == new or new is None:
        return []
    base = old or _git(workspace, "hash-object", "-t", "tree", "/dev/null").stdout.strip()
    r = _git(workspace, "diff", "--name-only", "-z", "--no-renames", base, new, "--", ".")
    if r.exit_code != 0:
        raise AuditError(f"git diff failed: {r.error or r.first_line()}")
    return [p for p in (_strip(prefix, x) for x in _split_z(r.stdout)) if p]


# --- snapshots ---------------------------------------------------------------------------


class AuditError(Exception):
    """The audit could not tell what changed."""


def _walk(workspace: Path, ignore: Sequence[str]) -> dict[str, os.stat_result]:
    found: dict[str, os.stat_result] = {}
    ws = os.fspath(workspace)
    for dirpath, dirnames, filenames in os.walk(ws):
        rel_dir = os.path.relpath(dirpath, ws)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        keep = []
        for d in dirnames:
            rel = rel_dir + d
            if d == ".git":
                # A repository's insides are not walked (git changes them as it works),
                # but one appearing or going is a change like any other.
                if not _ignored(rel, ignore):
                    with contextlib.suppress(FileNotFoundError):
                        found[rel] = os.lstat(os.path.join(dirpath, d))
                continue
            if _ignored(rel + "/", ignore) and not _holds_guarded(rel + "/"):
                continue
            full = os.path.join(dirpath, d)
            if os.path.islink(full):  # os.walk lists a symlink to a folder as a folder
                filenames.append(d)
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in filenames:
            rel = rel_dir + name
            if _ignored(rel, ignore):
                continue
            try:
                found[rel] = os.lstat(os.path.join(dirpath, name))
            except FileNotFoundError:
                continue
    return found


def snapshot(
    workspace: Path, ignore: Sequence[str] = ALWAYS_IGNORED, git: bool | None = None
) -> Snapshot:
    """The workspace's state now. Blocking: call it in a worker thread from async code.

    `git` is the step's audit mode, decided by its first snapshot (None: decide now) and
    kept for every later one: a workspace that was no repository when the step began is
    not audited through git because a role ran `git init` (with a `.git/info/exclude`
    of its own, git would then hide every later change)."""
    ignore = tuple(ignore)
    repo = _git_repo(workspace) if git is not False else None
    if git and repo is None:
        raise AuditError("the workspace is no longer a git repository")
    if repo is not None:
        return Snapshot(
            git=True,
            ignore=ignore,
            prefix=repo.prefix,
            head=_git_head(workspace),
            entries=_git_dirty(workspace, repo.prefix, ignore),
            guards=_repo_guards(workspace, repo),
        )
    stats = _walk(workspace, ignore)
    entries = {p: _fingerprint(workspace / p) for p in stats}
    return Snapshot(
        git=False,
        ignore=ignore,
        entries=entries,
        stats={p: _stat_key(st) for p, st in stats.items()},
    )


def changed_paths(workspace: Path, before: Snapshot) -> list[str]:
    """Workspace-relative paths that changed since `before`, sorted. Blocking."""
    ignore = before.ignore
    if before.git:
        after = _git_dirty(workspace, before.prefix, ignore)
        changed = {
            p for p in before.entries.keys() | after.keys() if before.entries.get(p) != after.get(p)
        }
        moved = _git_moved(workspace, before.prefix, before.head, _git_head(workspace))
        changed.update(p for p in moved if not _ignored(p, ignore))
        return sorted(changed)
    now = _walk(workspace, ignore)
    changed = set(before.entries.keys() - now.keys())
    for p, st in now.items():
        old = before.entries.get(p)
        if old is None or (
            before.stats.get(p) != _stat_key(st) and _fingerprint(workspace / p) != old
        ):
            changed.add(p)
    return sorted(changed)


def tampered(workspace: Path, before: Snapshot) -> list[str]:
    """The repository's guard files that changed since `before` (paths relative to the
    workspace, `.git/config` at the top of a repository), sorted. Blocking."""
    if not before.git or before.guards is None:
        return []
    repo = _git_repo(workspace)
    if repo is None:  # the repository itself went away
        return sorted(before.guards) or [".git"]
    now = _repo_guards(workspace, repo)
    return sorted(
        p for p in before.guards.keys() | now.keys() if before.guards.get(p) != now.get(p)
    )


# --- the audit ---------------------------------------------------------------------------


def _tail(text: str, limit: int = TAIL_CHARS) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def _command_output(argv: Sequence[str], r: proc.ProcResult) -> str:
    if r.error is not None:
        return f"{' '.join(argv)} could not run: {r.error}"
    parts = [r.stdout.rstrip("\n"), r.stderr.rstrip("\n")]
    text = "\n".join(p for p in parts if p)
    if r.timed_out:
        text += f"\n[{' '.join(argv)} ran longer than {COMMAND_TIMEOUT:g} s and was stopped]"
    elif r.exit_code:
        text += f"\n[{' '.join(argv)} exited {r.exit_code}]"
    return text.strip("\n")


def record(
    batch: str,
    *,
    passed: bool,
    outside_roots: Sequence[str] = (),
    failed_command: Sequence[str] | None = None,
    output_tail: str = "",
) -> dict[str, Any]:
    return {
        "batch": batch,
        "passed": passed,
        "outside_roots": list(outside_roots),
        "failed_command": list(failed_command) if failed_command is not None else None,
        "output_tail": _tail(output_tail),
    }


async def run_audit(
    workspace: Path,
    batch: str,
    roots: Sequence[str],
    before: Snapshot,
    *,
    build: Sequence[str] | None = None,
    test: Sequence[str] | None = None,
    run_commands: bool = True,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Audit the batch: what changed since `before`, then build and test (with `env`, by
    default orkeon's). Returns the audit record. `run_commands=False` checks the paths only."""
    from anyio import to_thread

    try:
        changed = await to_thread.run_sync(changed_paths, workspace, before)
        guards = await to_thread.run_sync(tampered, workspace, before)
    except AuditError as exc:
        return record(batch, passed=False, output_tail=str(exc))
    outside = [shown(p) for p in changed if not under(p, roots)]
    guards = [shown(p) for p in guards]
    if outside or guards:
        lines = []
        if outside:
            lines += [f"changed outside the roots of batch {batch} ({', '.join(roots)}):"]
            lines += [f"  {p}" for p in outside]
        if guards:
            lines += ["changed the repository's configuration or hooks (never a role's work):"]
            lines += [f"  {p}" for p in guards]
        return record(
            batch,
            passed=False,
            outside_roots=[*outside, *guards],
            output_tail="\n".join(lines),
        )
    if run_commands:
        for argv in (build, test):
            if not argv:
                continue
            r = await proc.arun(list(argv), cwd=workspace, timeout=COMMAND_TIMEOUT, env=env)
            if r.exit_code != 0:
                return record(
                    batch,
                    passed=False,
                    failed_command=argv,
                    output_tail=_command_output(argv, r),
                )
    return record(batch, passed=True)
