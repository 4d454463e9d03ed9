"""The audit's own git (run/audit/gitcmd.py): found outside the workspace, run with an
environment of its own, its filter drivers switched off (submodules' too), and inside a
sandbox with nothing writable as the fence behind those switches."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kit import git
from kit.sandbox import LINUX_ONLY, require_sandbox

from orkeon_run.run import audit
from orkeon_run.run.audit.gitcmd import AuditGit, driver_switches, find_git, repository_folders
from orkeon_run.tools.sandbox import SandboxPolicy

REAL_GIT = find_git(Path("/nonexistent"), os.environ["PATH"])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "repo"
    (ws / "src").mkdir(parents=True)
    (ws / "src/x.py").write_text("x = 1\n")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "init")
    return ws.resolve()


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_git_is_never_found_in_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    planted = executable(ws / ".venv/bin/git", "#!/bin/sh\n")
    executable(tmp_path / "elsewhere/git", "#!/bin/sh\n")
    (tmp_path / "link").symlink_to(ws / ".venv/bin")  # a folder outside that leads in
    path = os.pathsep.join(
        [str(ws / ".venv/bin"), "relative/bin", "", str(tmp_path / "link"),
         str(tmp_path / "elsewhere"), "/usr/bin"]
    )  # fmt: skip
    assert planted.exists()
    assert find_git(ws, path) == (tmp_path / "elsewhere/git").resolve()
    assert find_git(ws, str(ws / ".venv/bin")) is None


def test_filter_drivers_are_switched_off_whatever_their_name() -> None:
    names = ["core.bare", "filter.lfs.clean", "filter.A.b.process", "filter.lfs.required",
             "diff.x.textconv"]  # fmt: skip
    assert driver_switches(names) == [
        "filter.lfs.clean=", "filter.lfs.smudge=", "filter.lfs.process=",
        "filter.lfs.required=false",
        "filter.A.b.clean=", "filter.A.b.smudge=", "filter.A.b.process=",
        "filter.A.b.required=false",
    ]  # fmt: skip
    with pytest.raises(audit.AuditError, match="cannot switch off"):
        driver_switches(["filter.a=b.clean"])


def plant_filter(repo: Path, marker: Path, where: Path | None = None) -> None:
    """A clean filter on every file that writes git's environment to `marker`."""
    script = executable(repo.parent / "filter.sh", f"#!/bin/sh\nenv > {marker}\ncat\n")
    config = (where or repo / ".git") / "config"
    config.write_text(config.read_text() + f'[filter "evil"]\n\tclean = {script}\n')
    (repo / ".gitattributes").write_text("* filter=evil\n")


def test_the_audits_git_gets_an_environment_of_its_own(repo: Path, tmp_path: Path) -> None:
    """Bypassing the switches (the filter runs), git's environment holds no variable of
    orkeon's: no key, no credential, no GIT_* of the caller."""
    marker = tmp_path / "env.txt"
    plant_filter(repo, marker)
    os.utime(repo / "src/x.py", (1, 1))
    os.environ["ORKEON_TEST_SECRET_TOKEN"] = "hunter2"
    try:
        runner = AuditGit(REAL_GIT).bind(repo)
        runner._run(["status", "--porcelain"])  # no switch: the filter runs
    finally:
        del os.environ["ORKEON_TEST_SECRET_TOKEN"]
    seen = dict(line.split("=", 1) for line in marker.read_text().splitlines() if "=" in line)
    assert "hunter2" not in marker.read_text()
    assert seen["GIT_CONFIG_GLOBAL"] == "/dev/null" and seen["GIT_CONFIG_NOSYSTEM"] == "1"
    assert not {k for k in seen if "TOKEN" in k or "KEY" in k}
    marker.unlink()
    runner("status", "--porcelain")  # with them: it does not
    assert not marker.exists()


@LINUX_ONLY
def test_in_the_sandbox_a_filter_the_switches_missed_can_change_nothing(
    repo: Path, tmp_path: Path
) -> None:
    """The fence behind the switches: a program the audit's git ran anyway writes nowhere
    (not the workspace, not its git folder) and does not see orkeon's process."""
    require_sandbox()
    script = executable(
        tmp_path / "out.sh",
        f"#!/bin/sh\ntouch {repo}/owned {repo}/.git/owned\n"
        f"cat /proc/{os.getpid()}/environ > {repo}/environ\ncat\n",
    )
    config = repo / ".git/config"
    config.write_text(config.read_text() + f'[filter "evil"]\n\tclean = {script}\n')
    (repo / ".gitattributes").write_text("* filter=evil\n")
    os.utime(repo / "src/x.py", (1, 1))
    box = SandboxPolicy.for_git(Path("/"), run_dir=None)
    runner = AuditGit(REAL_GIT, box).bind(repo)
    res = runner._run(["status", "--porcelain"])  # the filter runs, in the sandbox
    assert res.exit_code == 0, res.stderr
    assert not any((repo / p).exists() for p in ("owned", ".git/owned", "environ"))
    # Unconfined, the same program writes all three: the fence is what held.
    AuditGit(REAL_GIT).bind(repo)._run(["status", "--porcelain"])
    assert all((repo / p).exists() for p in ("owned", ".git/owned", "environ"))


@LINUX_ONLY
@pytest.mark.parametrize("layout", ["subfolder", "worktree"])
def test_a_sandboxed_git_sees_a_repository_around_the_workspace(
    repo: Path, tmp_path: Path, layout: str
) -> None:
    """The workspace in a subfolder of its repository, or a linked worktree whose git
    folder lies elsewhere (both under the host's /tmp, which the sandbox hides)."""
    require_sandbox()
    if layout == "subfolder":
        ws = repo / "src"
        assert repository_folders(ws) == (repo, repo / ".git")
    else:
        git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
        ws = (tmp_path / "wt").resolve()
        assert repository_folders(ws) == (
            ws,
            (repo / ".git/worktrees/wt").resolve(),
            (repo / ".git").resolve(),
        )
    tools = AuditGit(REAL_GIT, SandboxPolicy.for_git(Path("/"), run_dir=None))
    before = audit.snapshot(ws, tools=tools)
    assert before.git is True
    (ws / "new.txt").write_text("n\n")
    assert audit.changed_paths(ws, before, tools) == ["new.txt"]


def test_a_submodules_filter_is_switched_off_too(repo: Path, tmp_path: Path) -> None:
    """git status looks into a submodule with a git of its own, which reads the
    submodule's configuration; the audit's `-c` settings reach it."""
    sub = tmp_path / "sub"
    (sub).mkdir()
    (sub / "s.txt").write_text("s\n")
    (sub / ".gitattributes").write_text("* filter=evil\n")
    git(sub, "init", "-q")
    git(sub, "add", "-A")
    git(sub, "commit", "-q", "-m", "s")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "mod")
    git(repo, "commit", "-q", "-m", "mod")
    marker = tmp_path / "sub-filter.txt"
    moddir = repo / ".git/modules/mod"
    script = executable(tmp_path / "f.sh", f"#!/bin/sh\ntouch {marker}\ncat\n")
    config = moddir / "config"
    config.write_text(config.read_text() + f'[filter "evil"]\n\tclean = {script}\n')
    before = audit.snapshot(repo)
    (repo / "mod/s.txt").write_text("t\n")
    changed, guards = audit.compare(repo, before)
    assert not marker.exists()
    assert changed == ["mod"] and guards == []
    git(repo / "mod", "status", "--porcelain")
    assert marker.exists()  # the plant was live


def test_a_configuration_git_cannot_list_fails_the_audit_closed(repo: Path) -> None:
    """The drivers to switch off come from `git config --list`: when git cannot read the
    configuration the audit stops, rather than run with a driver left on."""
    config = repo / ".git/config"
    config.write_text(config.read_text() + '[filter "evil\n\tclean = touch x\n')
    with pytest.raises(audit.AuditError, match="git config --list failed: fatal: bad config"):
        audit.snapshot(repo)
