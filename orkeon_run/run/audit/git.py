"""The audit's view of a git workspace: its repository, the guard files that decide what
git runs and reports, and what `git status` and friends say changed. Every git command
goes through a `gitcmd.Git` (the audit's own git, its switches, its sandbox)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .gitcmd import Git, must_have_worked
from .paths import (
    SELF_IGNORING_TOOL_DIRS,
    AuditError,
    Fingerprint,
    Ignore,
    fingerprint,
)


@dataclass(frozen=True)
class Repo:
    prefix: str  # the workspace's path inside its repository ("" at the top)
    git_dir: Path
    common_dir: Path  # differs from git_dir in a linked worktree
    head: str | None = None  # the commit HEAD names; None before the first commit


def git_repo(git: Git) -> Repo | None:
    """Where the workspace sits in its repository and its HEAD, or None: not in a git work
    tree, or no git program to ask."""
    found = _find_repo(git)
    return found if isinstance(found, Repo) else None


def repo_or_error(git: Git) -> Repo:
    """`git_repo`, or AuditError saying why there is none."""
    found = _find_repo(git)
    if isinstance(found, Repo):
        return found
    raise AuditError(f"the workspace is no longer a git repository ({found})")


def _find_repo(git: Git) -> Repo | str:
    if git.how.program is None:
        return "no git program was found outside the workspace"
    workspace = git.workspace
    if not (workspace / ".git").exists():
        # Only a workspace inside a work tree is a git workspace; ask git.
        r = git("rev-parse", "--is-inside-work-tree")
        if r.exit_code != 0 or r.stdout.strip() != "true":
            return r.error or r.first_line() or "not inside a work tree"
    # One git for both: HEAD^{commit} fails (exit 1, the three lines printed) while unborn.
    r = git("rev-parse", "--show-prefix", "--git-dir", "--git-common-dir", "-q", "--verify",
            "HEAD^{commit}")  # fmt: skip
    lines = r.stdout.split("\n")
    if r.exit_code not in (0, 1) or len(lines) < 3:
        return r.error or r.first_line() or f"git rev-parse exited {r.exit_code}"
    # Only the line ends go: a folder name may begin or end with a space.
    prefix, git_dir, common_dir = (line.rstrip("\r") for line in lines[:3])
    head = lines[3].strip() if r.exit_code == 0 and len(lines) > 3 else None
    return Repo(prefix, workspace / git_dir, workspace / common_dir, head or None)


# What in a git folder decides which programs git runs (aliases, fsmonitor, hooks,
# filters) or what it reports (info/exclude hides paths from `git status`). Not the rest
# of info/: git itself writes info/refs (`git gc`, an automatic gc after a commit).
REPO_GUARDS = ("config", "config.worktree", "hooks", "info/exclude", "info/attributes",
               "info/sparse-checkout", "info/grafts")  # fmt: skip


def _outside_guards(workspace: Path, prefix: str) -> dict[str, Path]:
    """Files outside the workspace that decide what its `git status` shows to a role's own
    git (the audit's reads none of the user's files): the `.gitignore` and `.gitattributes`
    of the folders between the repository's top and the workspace (`../.gitignore`), and
    the user's git configuration, global ignore and attributes files (by absolute path)."""
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


def _submodule_dirs(repo: Repo) -> list[Path]:
    """The git folders of the repository's submodules (`modules/NAME`, nested ones
    under theirs): a submodule's `info/exclude` hides files in it as the top one's
    does."""
    found = []
    for top, dirs, files in os.walk(repo.common_dir / "modules"):
        if "HEAD" in files:  # a git folder: only its own `modules/` may hold more
            found.append(Path(top))
            dirs[:] = [d for d in dirs if d == "modules"]
    return found


def folder_guards(workspace: Path, folder: Path) -> dict[str, Fingerprint]:
    """The guard files of one git folder, by their path relative to the workspace."""
    found: dict[str, Fingerprint] = {}
    for name in REPO_GUARDS:
        top = folder / name
        paths = [top]
        if top.is_dir() and not top.is_symlink():
            paths = [Path(d, f) for d, _, files in os.walk(top) for f in files]
        for path in paths:
            fp = fingerprint(path)
            if fp[0] != "missing":
                found[os.path.relpath(path, workspace)] = fp
    return found


def repo_guards(workspace: Path, repo: Repo) -> dict[str, Fingerprint]:
    found: dict[str, Fingerprint] = {}
    for name, path in _outside_guards(workspace, repo.prefix).items():
        fp = fingerprint(path)
        if fp[0] != "missing":
            found[name] = fp
    for folder in dict.fromkeys((repo.common_dir, repo.git_dir, *_submodule_dirs(repo))):
        found.update(folder_guards(workspace, folder))
    return found


def _split_z(text: str) -> list[str]:
    return [p for p in text.split("\0") if p]


def _strip(prefix: str, path: str) -> str | None:
    if prefix and not path.startswith(prefix):
        return None
    return path[len(prefix) :]


def git_status(git: Git, prefix: str, ignore: Ignore) -> dict[str, str]:
    """Dirty paths (workspace-relative) -> their XY status, those `ignore` leaves out
    dropped. An untracked folder, which `--untracked-files=all` shows only for a repository
    nested in the workspace (git does not look inside one), keeps its trailing `/`, and is
    kept even when ignored: its guards count whatever the patterns."""
    r = git(
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules=none",
        "--",
        ".",
    )
    must_have_worked(r, "git status")
    out: dict[str, str] = {}
    for item in _split_z(r.stdout):
        xy, raw = item[:2], item[3:]
        path = _strip(prefix, raw)
        if path is None or not path:
            continue
        if xy == "??" and path.endswith("/"):
            if not ignore.prunes_folder(path.rstrip("/")):
                out[path] = xy
        elif not ignore(path):
            out[path.rstrip("/")] = xy
    return out


def _git_list(git: Git, *args: str) -> list[str]:
    """The entries of `git ls-files -z --full-name ARGS` (paths from the repository root)."""
    r = git("ls-files", "-z", "--full-name", *args)
    must_have_worked(r, "git ls-files")
    return _split_z(r.stdout)


def git_unseen(git: Git, prefix: str, ignore: Ignore) -> dict[str, str]:
    """What `git status` cannot show and a role can arrange with the programs it may run:
    tracked files marked assume-unchanged or skip-worktree (`git update-index`), whose
    changes status no longer reports, and `.gitignore` files that git ignores (one holding
    `*` ignores itself and everything beside it). Each is watched like a dirty path."""
    found: dict[str, str] = {}
    for item in _git_list(git, "-v", "--", "."):
        tag = item[:1]
        if tag.islower() or tag == "S":  # h, s, m, r, c, k: assume-unchanged; S: skip-worktree
            found[item[2:]] = f"{tag} "
    # --directory: a folder that is ignored as a whole is one entry, not walked (a
    # .gitignore inside a folder that was already ignored can hide nothing more).
    hidden = ("--others", "--ignored", "--exclude-standard", "--directory", "--",
              ":(glob)**/.gitignore")  # fmt: skip
    for raw in _git_list(git, *hidden):
        parts = PurePosixPath(raw).parts
        if parts[-1] == ".gitignore" and not SELF_IGNORING_TOOL_DIRS.intersection(parts):
            found[raw] = "!!"
    out = {}
    for raw, xy in found.items():
        path = _strip(prefix, raw)
        if path and not ignore(path):
            out[path] = xy
    return out


# The history a batch must leave as it found it (docs/security.md, "The audit").
HISTORY = ("refs/heads/", "refs/tags/", "refs/stash")


def git_refs(git: Git, repo: Repo) -> dict[str, str]:
    """The repository's history: `HEAD` (what its file names, and the commit) and every
    branch, tag and the stash, ref -> object id. Read by the audit's own git."""
    r = git("for-each-ref", "--format=%(refname) %(objectname)")
    must_have_worked(r, "git for-each-ref")
    out = {}
    for line in r.stdout.splitlines():
        name, _, oid = line.rpartition(" ")
        if name.startswith(HISTORY):
            out[name] = oid
    try:
        named = (repo.git_dir / "HEAD").read_text(errors="backslashreplace").strip()
    except OSError as exc:
        named = f"unreadable: {exc.strerror}"
    out["HEAD"] = f"{named} {repo.head or '(no commit)'}"
    return out


def moved_refs(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The refs made, moved or deleted between two looks, sorted (`HEAD` first)."""
    moved = {r for r in before.keys() | after.keys() if before.get(r) != after.get(r)}
    return sorted(moved, key=lambda r: (r != "HEAD", r))


def git_moved(git: Git, prefix: str, old: str | None, new: str | None) -> list[str]:
    """Paths that differ between two commits (a role moved HEAD under the audit)."""
    if old == new or new is None:
        return []
    base = old or git("hash-object", "--no-filters", "-t", "tree", "/dev/null").stdout.strip()
    r = git(
        "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv",
        base, new, "--", ".",
    )  # fmt: skip
    if r.exit_code != 0:
        raise AuditError(f"git diff failed: {r.error or r.first_line()}")
    return [p for p in (_strip(prefix, x) for x in _split_z(r.stdout)) if p]
