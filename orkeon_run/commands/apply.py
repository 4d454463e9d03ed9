"""`orkeon apply FILE [--workspace DIR]`: apply a patch `--patch` wrote, after checking it
(docs/output.md, "The patch"; docs/ci.md, "A patch applied by another job").

Checked first, all of it, before the work tree or the index is touched:

1. the patch's SHA-256 is the manifest's `patch_sha256`;
2. the workspace's HEAD is the manifest's `base`, exactly (a patch is applied to the
   commit it was made against: the job that applies it checks that commit out);
3. the paths git reads in the patch (`git apply --numstat`, renames' both sides) are
   exactly the manifest's, and none is a guard (policy/guards.py `patch_guard`: `.git`,
   the workspace guards, `.github/workflows/`);
4. applied to a scratch index (HEAD's tree, never the repository's index), each file's
   new content has the manifest's `blob` and `sha256`, and a deleted file is gone;
5. `git apply --check --index` (the work tree and the index agree with HEAD there).

Then `git apply --index`. Exit 0 applied, 1 refused (every reason on stderr, nothing
applied), 2 bad input (FILE unreadable or no orkeon patch, DIR no git work tree). Every
git command is the audit's own git (run/audit/gitcmd.py: no hook, filter or fsmonitor of
the repository runs).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from ..errors import InputError
from ..escape import write_line
from ..policy.guards import patch_guard
from ..proc import ProcResult
from ..run.audit.git import git_repo
from ..run.audit.gitcmd import AuditGit, Git
from ..run.audit.paths import AuditError
from ..run.patchfile import PatchFile, PatchFormatError, parse, sha256


def main(file: str, workspace: str | None = None) -> int:
    ws = Path(os.path.expanduser(workspace or "."))
    if not ws.is_dir():
        raise InputError(f"--workspace: not a directory: {workspace}")
    ws = ws.resolve()
    try:
        data = Path(file).read_bytes()
    except OSError as exc:
        raise InputError(f"FILE: cannot read {file}: {exc.strerror or exc}") from None
    try:
        pf = parse(data)
    except PatchFormatError as exc:
        raise InputError(f"FILE: {file}: {exc}") from None
    how = AuditGit.default(ws)
    if how.program is None:
        raise InputError("--workspace: no git program was found outside it")
    git = how.bind(ws)
    try:
        repo = git_repo(git)
    except AuditError as exc:
        raise InputError(f"--workspace: {exc}") from None
    if repo is None:
        raise InputError(f"--workspace: not a git work tree: {ws}")
    try:
        refused = refusals(git, pf, repo.head, repo.prefix)
    except AuditError as exc:
        refused = [str(exc)]
    if refused:
        for why in refused:
            write_line(sys.stderr, f"orkeon apply: refused: {why}")
        write_line(sys.stderr, f"orkeon apply: nothing was applied from {file}")
        return 1
    if pf.paths:
        done = git("apply", "--index", "--binary", *_below(repo.prefix), stdin=pf.patch)
        if done.exit_code != 0:
            write_line(sys.stderr, f"orkeon apply: git apply failed: {_why(done)}")
            return 1
    n = len(pf.paths)
    files = f"{n} file{'' if n == 1 else 's'}"
    write_line(sys.stdout, f"orkeon apply: applied {files} from {file} on {pf.manifest['base']}")
    return 0


def refusals(git: Git, pf: PatchFile, head: str | None, prefix: str = "") -> list[str]:
    """Every reason not to apply `pf` here (checks 1-5 of the module's docstring); [] when
    it may be applied. `prefix`: the workspace's folder in its repository (git applies a
    patch's paths below it, and names them from the repository's top)."""
    m = pf.manifest
    if sha256(pf.patch) != m["patch_sha256"]:
        return ["the patch's SHA-256 is not the manifest's: it was changed after it was written"]
    if head != m["base"]:
        return [
            f"the workspace's HEAD is {head or 'no commit'}, the patch's base is {m['base']}: "
            "check out the commit the run started from"
        ]
    if not pf.paths:
        return []
    out: list[str] = []
    listed = set(pf.paths)
    in_patch = _patch_paths(git, pf.patch, prefix)
    if in_patch is None:
        return ["git cannot read the patch"]
    for path in sorted(in_patch - listed):
        out.append(f"{path}: changed by the patch, not listed in its manifest")
    for path in sorted(listed - in_patch):
        out.append(f"{path}: listed in the manifest, not changed by the patch")
    for path in sorted(in_patch | listed):
        guard = patch_guard(path)
        if guard is not None:
            out.append(f"{path}: a guard ({guard}): a patch may not change it")
    if out:
        return out
    out = _contents(git, pf, prefix)
    if out:
        return out
    check = git("apply", "--check", "--index", "--binary", *_below(prefix), stdin=pf.patch)
    if check.exit_code != 0:
        return [f"the patch does not apply here: {_why(check)}"]
    return []


def _patch_paths(git: Git, patch: bytes, prefix: str = "") -> set[str] | None:
    """The paths git's own reading of `patch` changes (a rename's both sides), relative to
    the workspace (a path outside it keeps its name from the repository's top)."""
    r = git("apply", "--numstat", "-z", *_below(prefix), stdin=patch)
    if r.exit_code != 0 or r.stdout_dropped:
        return None
    fields = r.stdout.split("\0")
    found: set[str] = set()
    i = 0
    while i < len(fields):
        entry = fields[i]
        if not entry:
            i += 1
            continue
        parts = entry.split("\t", 2)
        if len(parts) == 3 and parts[2]:
            found.add(parts[2])
            i += 1
        else:  # a rename or copy: "A\tD\t", then the old and the new path
            found.update(p for p in fields[i + 1 : i + 3] if p)
            i += 3
    return {p.removeprefix(prefix) if prefix and p.startswith(prefix) else p for p in found}


def _below(prefix: str) -> list[str]:
    """A patch's paths are the workspace's: in a folder of its repository, git is told
    so (it reads them from the repository's top, and skips those outside the folder)."""
    return [f"--directory={prefix}"] if prefix else []


def _contents(git: Git, pf: PatchFile, prefix: str = "") -> list[str]:
    """The patch applied to a scratch index made from HEAD: each listed file's content
    there against the manifest's digests."""
    with tempfile.TemporaryDirectory(prefix="orkeon-apply-") as tmp:
        index = Path(tmp, "index")
        made = git("read-tree", "HEAD", index=index)
        if made.exit_code != 0:
            raise AuditError(f"git read-tree failed: {_why(made)}")
        tried = git("apply", "--cached", "--binary", *_below(prefix), stdin=pf.patch, index=index)
        if tried.exit_code != 0:
            return [f"the patch does not apply to its base: {_why(tried)}"]
        staged = git("ls-files", "-s", "-z", "--", *pf.paths, index=index)
        if staged.exit_code != 0:
            raise AuditError(f"git ls-files failed: {_why(staged)}")
    blobs: dict[str, str] = {}
    for entry in staged.stdout.split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if len(fields) == 3:
            blobs[path] = fields[1]
    out: list[str] = []
    wanted = []
    for f in pf.manifest["files"]:
        got = blobs.get(f["path"])
        if f["status"] == "deleted":
            if got is not None:
                out.append(f"{f['path']}: the manifest says deleted, the patch keeps it")
        elif got != f["blob"]:
            out.append(f"{f['path']}: its new content is not the manifest's (blob {got})")
        else:
            wanted.append(f)
    if wanted:
        ids = "".join(f["blob"] + "\n" for f in wanted).encode()
        shown = git("cat-file", "--batch", stdin=ids)
        data = shown.stdout.encode("utf-8", "surrogateescape")
        at = 0
        for f in wanted:
            end = data.find(b"\n", at)
            head = data[at:end].split() if end >= 0 else []
            if shown.exit_code != 0 or len(head) != 3 or not head[2].isdigit():
                raise AuditError("git cat-file --batch: unexpected output")
            size = int(head[2])
            if sha256(data[end + 1 : end + 1 + size]) != f["sha256"]:
                out.append(f"{f['path']}: its new content is not the manifest's (sha256)")
            at = end + 1 + size + 1
    return out


def _why(r: ProcResult) -> str:
    return r.first_line() or r.error or f"git exited {r.exit_code}"
