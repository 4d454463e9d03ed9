"""The shell sandbox's policy (what is writable, protected, hidden), the audit's policy,
the walk for nested `.git` entries, and the refusal where no sandbox can be made: real
files and real processes, as in test_sandbox.py."""

from __future__ import annotations

import itertools
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from kit.pipeline import make_pipeline, shell_call
from kit.sandbox import ENV, LINUX_ONLY, RULES, make_ws, require_sandbox, role, sh

from orkeon_run.tools import sandbox as sb
from orkeon_run.tools.sandbox import CREDENTIAL_STORES, SandboxPolicy, find_git_dirs
from orkeon_run.tools.sandbox.bwrap import mounts

pytestmark = [LINUX_ONLY, pytest.mark.usefixtures("sandbox_mode")]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_ws(tmp_path)


# --- the walk for .git -------------------------------------------------------------------


def test_every_git_entry_is_found_without_following_symlinks(ws: Path, tmp_path: Path) -> None:
    (ws / "src/sub").mkdir()
    (ws / "src/sub/.git").write_text("gitdir: ../../.git/modules/sub\n")  # a submodule's file
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "repo/.git").mkdir(parents=True)
    (ws / "linked").symlink_to(elsewhere)  # not walked: it leads out
    (ws / ".orkeon/runs/r1/copy/.git").mkdir(parents=True)  # orkeon's folder is not walked
    found, complete = find_git_dirs(ws)
    assert complete
    assert sorted(p.relative_to(ws).as_posix() for p in found) == [
        ".git",
        "src/sub/.git",
        "src/vendor/lib/.git",
    ]


def test_the_walk_stops_at_its_limit_and_says_so(ws: Path) -> None:
    for i in range(30):
        (ws / "docs" / f"d{i}").mkdir()
    found, complete = find_git_dirs(ws, limit=10)
    assert not complete and len(found) <= 1
    assert find_git_dirs(ws, limit=10_000)[1]


def test_a_gitdir_file_protects_the_folder_it_names(ws: Path) -> None:
    (ws / "src/real-git").mkdir()
    (ws / "src/wt").mkdir()
    (ws / "src/wt/.git").write_text("gitdir: ../real-git\n")
    policy = role(ws, ["src"])
    assert {ws / "src/wt/.git", ws / "src/real-git", ws / ".git", ws / ".orkeon"} <= set(
        policy.read_only
    )
    require_sandbox()
    assert sh(ws, "touch src/real-git/config", policy)["exit_code"] == 1
    assert sh(ws, "touch src/wt/file", policy)["exit_code"] == 0


# --- what a policy holds -------------------------------------------------------------------


def test_a_roles_policy_hides_the_run_config_and_credential_stores(
    ws: Path, tmp_path: Path
) -> None:
    cfg = tmp_path / "cfg"
    policy = role(ws, ["src/", "./src", "docs"], cfg)
    assert policy.writable == (ws / "src", ws / "docs")
    home = Path(os.path.realpath(Path.home()))
    assert policy.hidden == (ws / ".orkeon/runs/r1", cfg, *(home / p for p in CREDENTIAL_STORES))
    assert policy.with_roots(None).writable == ()
    assert policy.with_roots(["."]).writable == (ws,)
    assert policy.with_roots(["."]).read_only == policy.read_only
    assert not policy.network and role(ws, None, network=True).network


def test_mounts_change_only_what_the_command_would_see(ws: Path, tmp_path: Path) -> None:
    """Protecting a folder outside every writable one, or hiding one under the hidden
    host /tmp, would add mounts (and folders in the private /tmp) for nothing."""
    outside_tmp = Path("/var/tmp") if ws.is_relative_to("/tmp") else Path("/tmp")
    policy = SandboxPolicy(
        workspace=ws,
        writable=(ws / "src",),
        read_only=(ws / ".git", ws / "src/vendor/lib/.git"),
        hidden=(ws / ".orkeon/runs/r1", Path("/tmp"), outside_tmp),
    )
    args = mounts(policy, tmp_path / "private")
    pairs = [tuple(args[i : i + 3]) for i in range(len(args) - 2)]
    assert ("--bind", str(ws / "src"), str(ws / "src")) in pairs
    assert ("--ro-bind", str(ws / "src/vendor/lib/.git"), str(ws / "src/vendor/lib/.git")) in pairs
    assert str(ws / ".git") not in args  # not under a writable path: read-only already
    assert sealed(args, str(ws / ".orkeon/runs/r1"))
    assert ("--bind", str(tmp_path / "private"), "/tmp") in pairs
    assert args.count("/tmp") == 1  # hiding the host's /tmp again would change nothing
    assert sealed(args, str(outside_tmp))


def sealed(args: list[str], folder: str) -> bool:
    """`folder` is hidden: an empty tmpfs, made read-only after every mount inside it."""
    pairs = list(itertools.pairwise(args))
    tmpfs, ro = pairs.index(("--tmpfs", folder)), pairs.index(("--remount-ro", folder))
    inner = [i for i, (_, b) in enumerate(pairs) if b.startswith(folder + "/")]
    return tmpfs < ro and all(tmpfs < i < ro for i in inner)


def test_a_workspace_inside_a_hidden_folder_is_shown_and_writable(off_tmp: Path) -> None:
    """docs/scale.md, "Jobs are isolated from each other": a job's workspace
    (OUT/ID/workspace) lies in the output folder its sandbox hides; bubblewrap used to fail
    making its mount point in the read-only cover (`Can't mkdir OUT/ID/workspace:
    Read-only file system`)."""
    require_sandbox()
    out = off_tmp / "out"
    ws = out / "job1" / "workspace"
    (ws / "src").mkdir(parents=True)
    (out / "job2").mkdir()
    (out / "job2" / "events.jsonl").write_text("sibling's secret\n")
    policy = SandboxPolicy.for_role(ws, ["src"], run_dir=out / "job1", hidden=[out])
    for argv in (["touch", "src/new.py"], ["cat", "README"]):
        res = sb.run(policy, argv, cwd=ws, timeout=30, env=ENV)
        assert "Read-only file system" not in res.stderr
    assert (ws / "src/new.py").is_file()
    res = sb.run(policy, ["cat", str(out / "job2/events.jsonl")], cwd=ws, timeout=30, env=ENV)
    assert res.exit_code != 0 and "secret" not in res.stdout
    res = sb.run(policy, ["touch", str(out / "planted")], cwd=ws, timeout=30, env=ENV)
    assert res.exit_code != 0 and not (out / "planted").exists()


# --- the audit's build and test ----------------------------------------------------------


def test_the_audits_commands_write_the_workspace_but_not_its_guards(
    ws: Path, tmp_path: Path
) -> None:
    require_sandbox()
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "settings.json").write_text("{}")
    policy = SandboxPolicy.for_audit(ws, run_dir=ws / ".orkeon/runs/r1", config_dir=cfg)
    assert policy.writable == (ws,)
    assert not set(policy.hidden) - {ws / ".orkeon/runs/r1", cfg}  # credentials stay
    assert policy.temp_root == Path(tempfile.gettempdir())  # a build's scratch: on disk
    assert role(ws, None).temp_root is None  # a role's: in memory

    def run(*argv: str) -> int | None:
        return sb.run(policy, list(argv), cwd=ws, timeout=30, env=ENV).exit_code

    assert run("touch", "README.md", "docs/new.md", "src/vendor/lib/x.py", "build.out") == 0
    for path in (".git/config", ".orkeon/settings.json", "src/vendor/lib/.git/config",
                 ".orkeon/runs/r1/state.json", f"{cfg}/settings.json"):  # fmt: skip
        assert run("touch", path) == 1, path
    assert run("cat", ".orkeon/runs/r1/state.json") == 1
    assert (ws / ".orkeon/runs/r1/state.json").read_text() == '{"secret": "run-state"}\n'


@pytest.mark.parametrize("kind", ["audit", "role"])
def test_a_missing_orkeon_folder_is_made_so_no_command_can_plant_one(
    tmp_path: Path, kind: str
) -> None:
    require_sandbox()
    ws = tmp_path / "plain"
    ws.mkdir()
    if kind == "audit":
        policy = SandboxPolicy.for_audit(ws, run_dir=None)
    else:
        policy = SandboxPolicy.for_role(ws, ["."], run_dir=None)
    assert (ws / ".orkeon").is_dir()
    got = sb.run(policy, ["mkdir", "-p", ".orkeon/hooks"], cwd=ws.resolve(), timeout=30, env=ENV)
    assert got.exit_code == 1 and not (ws / ".orkeon/hooks").exists()
    assert sb.run(policy, ["mkdir", "src"], cwd=ws.resolve(), timeout=30, env=ENV).exit_code == 0


def test_git_inside_the_sandbox_reads_but_cannot_change_the_repository(ws: Path) -> None:
    require_sandbox()
    subprocess.run(["git", "-C", str(ws), "add", "README.md"], check=True)
    policy = role(ws, ["."])
    assert sh(ws, "git status --porcelain", policy)["stdout"].startswith("A  README.md")
    got = sh(ws, "git add docs", policy)
    assert got["exit_code"] != 0 and "Read-only file system" in got["stderr"]


# --- no sandbox here ---------------------------------------------------------------------


def test_without_a_sandbox_every_call_is_refused(ws: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-bwrap"
    policy = role(ws, ["."], bwrap=missing)
    refusal = f"[refused: the shell sandbox is not available here: bubblewrap is not installed at {missing}]"
    for command in ("touch made", "rm -rf .", "touch a && touch b"):
        assert sh(ws, command, policy) == refusal
    pipeline = make_pipeline(ws, rules=RULES, environ=ENV, sandbox=policy)
    assert shell_call(pipeline, "touch made", (".",)) == refusal
    assert not (ws / "made").exists()
    got = sb.run(policy, ["touch", "made"], cwd=ws, timeout=30, env=ENV)
    assert got.exit_code is None and got.error == refusal[len("[refused: ") : -1]
    assert not (ws / "made").exists()


def test_a_bubblewrap_that_cannot_make_namespaces_is_the_reason(ws: Path, tmp_path: Path) -> None:
    """What Ubuntu 24.04's AppArmor rule does to bubblewrap, played by a program that
    answers the same way."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    avail = sb.probe(fake)
    assert not avail.ok and avail.bwrap == fake
    assert avail.reason == "setting up uid map: Permission denied"
    assert avail.fix == sb.diagnose()
    got = sh(ws, "touch made", role(ws, ["."], bwrap=fake))
    assert (
        got
        == "[refused: the shell sandbox is not available here: setting up uid map: Permission denied]"
    )
    assert not (ws / "made").exists()


@pytest.mark.parametrize(
    ("files", "says"),
    [
        (
            {"proc/kernel/apparmor_restrict_unprivileged_userns": "1\n"},
            "kernel.apparmor_restrict_unprivileged_userns=0",
        ),
        ({"proc/kernel/unprivileged_userns_clone": "0\n"}, "kernel.unprivileged_userns_clone=1"),
        ({"proc/user/max_user_namespaces": "0\n"}, "user.max_user_namespaces="),
        ({"root/.dockerenv": ""}, "--security-opt seccomp=unconfined"),
        ({}, "unprivileged user namespaces must be allowed"),
    ],
)
def test_the_fix_names_what_refuses_namespaces(
    tmp_path: Path, files: dict[str, str], says: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    fix = sb.diagnose(tmp_path / "proc", tmp_path / "root")
    assert says in fix and fix.endswith(
        '"shell": {"sandbox": "off"} in the inputs to run commands unconfined'
    )


def test_running_unconfined_is_said_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sb, "_warned", False)  # an earlier run in this process said it
    sb.warn_unconfined_once()
    sb.warn_unconfined_once()
    err = capsys.readouterr().err
    assert err.count("run unconfined, with every right of the user running orkeon") == 1, err
