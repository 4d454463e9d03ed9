"""Failures that name their fix, and what CI steps around a run rely on: bare `orkeon`,
shell completion, `.orkeon/.gitignore`, `validate` finding a hook's missing program or
script, and a role whose every call was refused said as such (docs/output.md,
docs/inputs.md, docs/ci.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kit import git, process
from kit.cli import clean_environment, orkeon, run_dir, run_json
from kit.steps import environ, events, make_workspace, write

BIN = Path(sys.executable).parent


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clean_environment(tmp_path, monkeypatch)
    return make_workspace(tmp_path, {"README.md": "# demo\n"})


def spec_doc(**more):
    script = {
        "analyst": [{"text": "ok"}],
        "writer": [{"tool_calls": [write(".orkeon/spec.md", "# S\n")]}],
    }
    return {"request": "x", "model": {"provider": "scripted", "script": script}, **more}


# --- bare orkeon ------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [[], ["hooks"], ["jobs"]], ids=["orkeon", "hooks", "jobs"])
def test_bare_orkeon_prints_its_help_whole_and_exits_2(tmp_path, argv):
    """The help as --help prints it, line by line (not squeezed into one error line); exit
    2, since nothing ran: a CI script whose command word came out empty fails."""
    proc = process.orkeon(*argv, cwd=tmp_path, timeout=None)
    assert proc.returncode == 2
    assert proc.stderr == ""
    help_text = process.orkeon(*argv, "--help", cwd=tmp_path, timeout=None).stdout
    assert proc.stdout.rstrip("\n") == help_text.rstrip("\n")
    assert proc.stdout.startswith(f"Usage: orkeon {' '.join(argv)}".rstrip() + " [OPTIONS] COMMAND")
    assert "\nCommands:\n" in proc.stdout


# --- shell completion -------------------------------------------------------------------


def test_completion_completes_steps_and_flags_in_a_real_bash(tmp_path):
    """`orkeon --install-completion bash` writes the script and sources it from ~/.bashrc;
    bash, with that script, completes `orkeon run pi` to `pipeline` and `--max-u` to
    `--max-usd`, by asking orkeon itself."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash here")
    home = tmp_path / "home"
    home.mkdir()
    env = {**environ(tmp_path), "HOME": str(home), "SHELL": bash,
           "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip
    proc = subprocess.run([str(BIN / "orkeon"), "--install-completion", "bash"],
                          capture_output=True, text=True, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    script = home / ".bash_completions" / "orkeon.sh"
    assert f"source '{script}'" in (home / ".bashrc").read_text()

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        probe = (f"source '{script}'; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
                 '_orkeon_completion orkeon; printf "%s\\n" "${COMPREPLY[@]}"')  # fmt: skip
        out = subprocess.run([bash, "--norc", "-c", probe], capture_output=True, text=True,
                             env=env, timeout=60)  # fmt: skip
        return out.stdout.split()

    assert complete("orkeon", "run", "pi") == ["pipeline"]
    assert complete("orkeon", "run", "pipeline", "--max-u") == ["--max-usd"]
    assert "report" in complete("orkeon", "")


def test_show_completion_prints_the_script_for_this_shell(tmp_path, capsys, monkeypatch):
    clean_environment(tmp_path, monkeypatch)
    code, out, _ = orkeon(capsys, "--show-completion")
    assert code == 0 and "_ORKEON_COMPLETE=complete_" in out and "orkeon" in out


# --- .orkeon/.gitignore ------------------------------------------------------------------


def git_status(ws: Path) -> list[str]:
    out = git(ws, "status", "--porcelain", "--untracked-files=all")
    return sorted(line[3:] for line in out.splitlines())


def test_a_first_run_leaves_a_gitignore_that_keeps_runs_out_of_commits(ws, capsys):
    code, result, _ = run_json(capsys, "dev-spec", ws, doc=spec_doc())
    assert code == 0
    ignore = ws / ".orkeon" / ".gitignore"
    assert "\n/runs/\n" in ignore.read_text()
    assert run_dir(ws, result).is_dir()
    # What `git add -A` in a later CI step would take: the spec and the .gitignore, no run.
    assert git_status(ws) == [".orkeon/.gitignore", ".orkeon/spec.md"]


def test_the_users_gitignore_is_never_touched(ws, capsys):
    ignore = ws / ".orkeon" / ".gitignore"
    ignore.parent.mkdir()
    ignore.write_text("# mine\n*.log\n")
    os.chmod(ignore, 0o444)  # not even opened for writing
    code, _, _ = run_json(capsys, "dev-spec", ws, doc=spec_doc())
    assert code == 0
    assert ignore.read_text() == "# mine\n*.log\n"


def test_no_gitignore_when_the_run_is_kept_elsewhere(ws, tmp_path, capsys):
    elsewhere = tmp_path / "runs" / "one"
    code, _, _ = run_json(capsys, "dev-spec", ws, "--run-dir", str(elsewhere), doc=spec_doc())
    assert code == 0 and (elsewhere / "result.json").is_file()
    assert not (ws / ".orkeon" / ".gitignore").exists()
    assert git_status(ws) == [".orkeon/spec.md"]


# --- validate: hooks that cannot run ----------------------------------------------------


def validate(capsys, ws: Path, command: str, **shell) -> tuple[int, str]:
    doc = {"hooks": [{"event": "pre-tool", "command": command}],
           "shell": shell or {"allow_interpreters": True}}  # fmt: skip
    code, _, err = orkeon(capsys, "validate", "--workspace", str(ws), "--inputs", json.dumps(doc))
    return code, err


def test_validate_finds_a_missing_hook_script_and_names_it(ws, capsys):
    """The issue's case: `python3 .orkeon/hooks/guard.py` with no guard.py passed validate,
    then refused every call of the run."""
    code, err = validate(capsys, ws, "python3 .orkeon/hooks/guard.py {tool} {path}")
    assert code == 2
    assert err == (
        "orkeon: hooks[0].command: no such file: .orkeon/hooks/guard.py (the script python3 "
        f"would run, relative to the workspace, {ws})\n"
    )
    guard = ws / ".orkeon" / "hooks" / "guard.py"
    guard.parent.mkdir(parents=True)
    guard.write_text("import sys\n")
    assert validate(capsys, ws, "python3 .orkeon/hooks/guard.py {tool} {path}") == (0, "")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("no-such-guard-xyz {tool}", "no such program on PATH: no-such-guard-xyz"),
        ("./hooks/check.sh {path}", "no such program: ./hooks/check.sh (a path is relative"),
        ("python3 -u -W ignore hooks/g.py", "no such file: hooks/g.py (the script python3"),
        ("bash -e hooks/x.sh {tool}", "no such file: hooks/x.sh (the script bash"),
        ("node --require ./r.js hooks/pre.mjs", "no such file: hooks/pre.mjs (the script node"),
    ],
)
def test_validate_names_each_kind_of_missing_hook_file(ws, capsys, command, expected):
    code, err = validate(capsys, ws, command, allow_interpreters=True,
                         extra_allowed_commands=["no-such-guard-xyz", "./hooks/check.sh", "bash"])  # fmt: skip
    assert code == 2 and err.startswith(f"orkeon: hooks[0].command: {expected}"), err


@pytest.mark.parametrize(
    "command",
    ["python3 -c pass", "python3 -m json.tool {path}", "bash -c true",
     "echo {tool} {path}", "python3 {path}"],
)  # fmt: skip
def test_validate_passes_hooks_with_no_script_file(ws, capsys, command):
    assert validate(capsys, ws, command, allow_interpreters=True,
                    extra_allowed_commands=["bash"]) == (0, "")  # fmt: skip


def test_a_hook_script_that_is_not_executable(ws, capsys):
    script = ws / "hooks" / "check.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\nexit 0\n")
    code, err = validate(
        capsys, ws, "./hooks/check.sh", extra_allowed_commands=["./hooks/check.sh"]
    )
    assert code == 2 and "./hooks/check.sh is not executable (chmod +x it" in err
    script.chmod(0o755)
    assert validate(
        capsys, ws, "./hooks/check.sh", extra_allowed_commands=["./hooks/check.sh"]
    ) == (0, "")


def test_run_warns_of_a_missing_hook_script_then_runs(ws, capsys):
    """`orkeon run` keeps the contract that a hook that cannot run refuses the call, and
    says why before it starts."""
    doc = spec_doc(hooks=[{"event": "pre-tool", "command": "python3 .orkeon/hooks/guard.py {tool}"}],
                   shell={"allow_interpreters": True})  # fmt: skip
    code, result, err = run_json(capsys, "dev-spec", ws, doc=doc)
    assert code == 1
    assert "hooks[0].command: no such file: .orkeon/hooks/guard.py" in err
    (call,) = [e for e in events(run_dir(ws, result)) if e["type"] == "tool.call"]
    assert call["refused_by"] == "hook"


# --- a role whose every call was refused -------------------------------------------------


def test_a_role_whose_every_call_was_refused_is_named_with_the_first_refusal(ws, tmp_path, capsys):
    """The writer's every write is refused by a hook: the error says that first, with the
    stage and the text the model read, then that no spec was written; so does the text
    summary."""
    deny = tmp_path / "deny.sh"
    deny.write_text(
        '#!/bin/sh\n[ "$1" = file_write ] || exit 0\necho "writes are frozen today" >&2\nexit 2\n'
    )
    deny.chmod(0o755)
    script = {
        "analyst": [{"tool_calls": [{"tool": "file_read", "input": {"file_path": "README.md"}}]}],
        "writer": [{"tool_calls": [write(".orkeon/spec.md", "# S\n")]},
                   {"tool_calls": [write(".orkeon/spec.md", "# S again\n")]}],
    }  # fmt: skip
    doc = {"request": "x", "model": {"provider": "scripted", "script": script},
           "hooks": [{"event": "pre-tool", "command": f"{deny} {{tool}} {{path}}"}],
           "shell": {"extra_allowed_commands": [str(deny)]}}  # fmt: skip
    argv = ["run", "dev-spec", "--workspace", str(ws), "--inputs", json.dumps(doc),
            "--progress", "none"]  # fmt: skip
    code, out, _ = orkeon(capsys, *argv, "--output", "json")
    result = json.loads(out)
    refusal = (
        f"[pre-tool hook #1 ({deny} file_write .orkeon/spec.md) exited 2: writes are frozen today]"
    )
    assert code == 1
    assert result["error"]["kind"] == "role"
    assert result["error"]["message"] == (
        f"every call of role writer was refused (2 calls; the first by a hook: {refusal}); "
        "the writer did not write the spec (.orkeon/spec.md)"
    )
    roles = {r["name"]: r for r in result["roles"]}
    assert roles["writer"]["all_refused"] == {"stage": "hook", "text": refusal}
    assert "all_refused" not in roles["analyst"]  # its read went through

    code, out, _ = orkeon(capsys, *argv, "--output", "text")
    assert f"    every call was refused, the first by hook: {refusal}\n" in out
    assert out.rstrip("\n").endswith("the writer did not write the spec (.orkeon/spec.md)")


def test_a_role_with_some_calls_through_is_not_all_refused(ws, tmp_path, capsys):
    deny = tmp_path / "deny-writes.sh"
    deny.write_text('#!/bin/sh\n[ "$1" = file_write ] && exit 2\nexit 0\n')
    deny.chmod(0o755)
    script = {"analyst": [{"text": "ok"}],
              "writer": [{"tool_calls": [{"tool": "file_read", "input": {"file_path": "README.md"}},
                                         write(".orkeon/spec.md", "# S\n")]}]}  # fmt: skip
    doc = {"request": "x", "model": {"provider": "scripted", "script": script},
           "hooks": [{"event": "pre-tool", "command": f"{deny} {{tool}}"}],
           "shell": {"extra_allowed_commands": [str(deny)]}}  # fmt: skip
    code, result, _ = run_json(capsys, "dev-spec", ws, doc=doc)
    assert code == 1
    assert result["error"] == {
        "kind": "role",
        "message": "the writer did not write the spec (.orkeon/spec.md)",
    }
    assert "all_refused" not in {r["name"]: r for r in result["roles"]}["writer"]
