"""The shell sandbox switched on for runs (issue 11 item 1), black box: `orkeon run` and
`orkeon validate` (in-process through the runner, or as a process), the scripted model
making the calls, on the real kernel. Where no sandbox can be made is played for real:
orkeon runs inside a user namespace that may make no more of them."""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from kit import DATA
from kit.process import orkeon
from kit.sandbox import LINUX_ONLY, require_sandbox
from kit.steps import calls, events, make_workspace, run_step, scripted, shell, write

from orkeon_run.tools import sandbox as sb

pytestmark = LINUX_ONLY

FILES = {"README.md": "# app\n", "src/a/__init__.py": "", "src/b/__init__.py": ""}
PY = sys.executable


@pytest.fixture(scope="module", autouse=True)
def sandbox_works_here() -> None:
    require_sandbox()


def plan(roots: list[str], name: str = "a") -> dict[str, Any]:
    return {"batches": [{"name": "b1", "roles": [{"name": name, "roots": roots, "task": "t"}]}]}


def batch(script: list[dict[str, Any]], roots: list[str] | None = None, **more: Any) -> Any:
    """A dev-batches inputs document with one role, b1/a, under `roots` (src/a/)."""
    return scripted({"b1/a": script}, plan=plan(roots or ["src/a/"]), **more)


# --- on --------------------------------------------------------------------------------


def test_a_roles_commands_run_in_the_sandbox_by_default(tmp_path: Path) -> None:
    """Writes under the role's roots only; the run directory and `.git` are out of reach;
    orkeon's own process is not visible; the result says "on"."""
    ws = make_workspace(tmp_path, FILES)
    script = [
        {"tool_calls": [
            shell("touch src/a/made.txt"),
            shell("touch src/b/sneaky.txt"),
            shell("cp README.md .git/hooks/pre-commit"),
            shell(f"cat /proc/{os.getpid()}/environ"),
            shell("ls -A .orkeon/runs/r1"),
        ]},
        {"text": "done"},
    ]  # fmt: skip
    rd = ws / ".orkeon" / "runs" / "r1"
    result = run_step("dev-batches", batch(script), ws, run_dir=rd)
    assert result["sandbox"] == "on"
    assert (result["status"], result["exit_code"]) == ("succeeded", 0), result["error"]
    made, sneaky, hook, environ_, runs = (c["result"] for c in calls(rd, "b1/a"))
    assert made["exit_code"] == 0 and (ws / "src/a/made.txt").exists()
    assert sneaky["exit_code"] == 1 and "Read-only file system" in sneaky["stderr"]
    assert hook["exit_code"] == 1 and "Read-only file system" in hook["stderr"]
    assert not (ws / "src/b/sneaky.txt").exists() and not (ws / ".git/hooks/pre-commit").exists()
    assert environ_["exit_code"] == 1 and "No such file" in environ_["stderr"]
    assert (runs["exit_code"], runs["stdout"]) == (0, "")  # the run directory looks empty
    assert (rd / "events.jsonl").exists()
    assert result["audits"][0]["passed"] is True


def test_operator_hooks_run_outside_the_sandbox(tmp_path: Path) -> None:
    """A native hook is the operator's code: it writes where the role's commands cannot."""
    ws = make_workspace(tmp_path, FILES)
    marks = tmp_path / "marks"
    marks.mkdir()
    hook = {"event": "pre-tool", "command": f"touch {marks}/{{tool}}"}
    script = [{"tool_calls": [shell(f"touch {marks}/from-the-role")]}, {"text": "done"}]
    result = run_step("dev-batches", batch(script, hooks=[hook]), ws)
    assert sorted(os.listdir(marks)) == ["shell"]  # the hook's; the command's was refused
    rd = ws / ".orkeon" / "runs" / result["run_id"]
    (call,) = calls(rd, "b1/a")
    assert call["result"]["exit_code"] == 1 and call["hooks"][0]["exit_code"] == 0


def test_operator_hooks_cannot_read_orkeons_memory(tmp_path: Path) -> None:
    """docs/security.md, "Hooks": native and settings-shape hooks keep their rights
    (here: writing outside the workspace) but run where /proc/<orkeon> is not visible, so
    a hook tricked into running the model's code cannot read the key from its environ."""
    ws = make_workspace(tmp_path, FILES)
    out = tmp_path / "seen"
    out.mkdir()
    reader = f"{DATA / 'veil' / 'read_orkeon.py'} {os.getpid()} {out}"
    settings = {"PreToolUse": [{"hooks": [{"type": "command", "command": reader}]}]}
    script = [{"tool_calls": [write("src/a/x.py", "x = 1\n")]}, {"text": "done"}]
    allowed = {"extra_allowed_commands": [str(DATA / "veil" / "read_orkeon.py")]}
    for hooks in ([{"event": "pre-tool", "command": reader}], settings):
        result = run_step("dev-batches", batch(script, hooks=hooks, shell=allowed), ws)
        assert result["status"] == "succeeded", result
    seen = [json.loads(line) for line in (out / "seen.jsonl").read_text().splitlines()]
    assert [s["hook"] for s in seen] == ["pre-tool", "settings"]  # both ran, and wrote here
    for s in seen:
        assert s["environ"] is None and s["environ_error"] == "FileNotFoundError", s
        assert s["cmdline"] is None


class Listener:
    """A TCP server on the host's 127.0.0.1 that counts the connections it accepted."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        conn.close()
        self.accepted.set()


@pytest.mark.parametrize("network", [False, True])
def test_the_network_is_off_unless_the_inputs_turn_it_on(tmp_path: Path, network: bool) -> None:
    ws = make_workspace(tmp_path, FILES)
    server = Listener()
    try:
        connect = (
            "import socket, sys\nsocket.create_connection(('127.0.0.1', int(sys.argv[1])), 20)\n"
        )
        script = [
            {"tool_calls": [write("src/a/net.py", connect)]},
            {"tool_calls": [shell(f"{shlex.quote(PY)} src/a/net.py {server.port}")]},
            {"text": "done"},
        ]
        shell_inputs = {"network": network, "extra_allowed_commands": [PY]}
        result = run_step("dev-batches", batch(script, shell=shell_inputs), ws)
        rd = ws / ".orkeon" / "runs" / result["run_id"]
        call = calls(rd, "b1/a")[1]
        if network:
            assert call["result"]["exit_code"] == 0, call["result"]
            assert server.accepted.wait(60)
        else:
            assert call["result"]["exit_code"] == 1
            assert "ConnectionRefusedError" in call["result"]["stderr"]
            assert not server.accepted.is_set()
    finally:
        server.sock.close()


def test_the_audits_build_and_test_run_in_the_audits_sandbox(tmp_path: Path) -> None:
    """They run the model's code: the workspace is theirs to write, not its `.git`, not
    `.orkeon/`, not the run directory, and not orkeon's environment in /proc. What they
    write is judged like the roles' work: here `build/`, which git ignores."""
    ws = make_workspace(tmp_path, {**FILES, ".gitignore": "build/\n"})
    rd = tmp_path / "run"
    probe = (
        f"import os, pathlib; pathlib.Path('build').mkdir(); pathlib.Path('build/out').write_text('x'); "
        f"tries = {{p: os.access(p, os.W_OK) for p in ('.git', '.orkeon', '{rd}')}}; "
        f"tries['environ'] = os.path.exists('/proc/{os.getpid()}/environ'); "
        f"pathlib.Path('build/seen.json').write_text(repr(tries))"
    )
    script = [{"tool_calls": [write("src/a/x.py", "x = 1\n")]}, {"text": "done"}]
    result = run_step(
        "dev-batches", batch(script, audit={"build": [PY, "-c", probe]}), ws, run_dir=rd
    )
    assert result["audits"][0]["passed"] is True, result["audits"]
    seen = (ws / "build/seen.json").read_text()
    assert seen == f"{{'.git': False, '.orkeon': False, '{rd}': False, 'environ': False}}"
    failing = ["touch", ".git/planted"]
    result = run_step("dev-batches", batch(script, audit={"test": failing}), ws)
    (rec,) = result["audits"]
    assert rec["failed_command"] == failing and "Read-only file system" in rec["output_tail"]
    assert not (ws / ".git/planted").exists()


# --- off -------------------------------------------------------------------------------


def test_off_runs_unconfined_says_so_once_and_records_it(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, FILES)
    script = [{"tool_calls": [shell("touch src/b/sneaky.txt"), shell("touch src/b/two.txt")]}]
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps(batch(script, shell={"sandbox": "off"})))
    proc = orkeon("run", "dev-batches", "--inputs", f"@{inputs}", "--workspace",
                  str(ws), "--output", "json", "--progress", "none", cwd=tmp_path, timeout=300)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert result["sandbox"] == "off"
    said = [line for line in proc.stderr.splitlines() if "run unconfined" in line]
    assert len(said) == 1 and said[0].startswith("orkeon: warning: "), proc.stderr
    assert (ws / "src/b/sneaky.txt").exists()  # unconfined: the audit is what catches it
    assert result["audits"][0]["outside_roots"] == ["src/b/sneaky.txt", "src/b/two.txt"]


def test_a_repair_inherits_the_sandbox_setting(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, FILES)
    first = tmp_path / "first"
    script = [{"tool_calls": [shell("touch stray.txt")]}]
    failed = run_step("dev-batches", batch(script, shell={"sandbox": "off"}), ws, run_dir=first)
    assert failed["sandbox"] == "off" and failed["status"] == "failed"
    (ws / "stray.txt").unlink()
    repair = {"run": str(first), "role": "b1/a"}
    again = run_step("tasks-repair", scripted({"b1/a": script}, repair=repair), ws)
    assert again["sandbox"] == "off"
    assert again["audits"][0]["outside_roots"] == ["stray.txt"]
    (ws / "stray.txt").unlink()
    confined = scripted({"b1/a": script}, repair=repair, shell={"sandbox": "auto"})
    third = run_step("tasks-repair", confined, ws)
    assert third["sandbox"] == "on" and third["status"] == "succeeded", third
    assert not (ws / "stray.txt").exists()


# --- unavailable -----------------------------------------------------------------------


def no_namespaces(tmp: Path) -> list[str]:
    """A command-line prefix that starts a program in a user namespace that may create no
    other: there bubblewrap fails as on a machine that refuses namespaces."""
    bwrap = sb.probe().bwrap
    assert bwrap is not None
    return [str(bwrap), "--unshare-user", "--disable-userns", "--dev-bind", "/", "/",
            "--chdir", str(tmp), "--"]  # fmt: skip


def no_bubblewrap(tmp: Path) -> list[str]:
    """A command-line prefix that starts a program where no bubblewrap is installed: the
    bundled one's folder is empty and the system's is gone."""
    from orkeon_run.tools.sandbox.bwrap import SYSTEM_BWRAP

    bwrap = sb.probe().bwrap
    assert bwrap is not None
    hide = ["--ro-bind", "/dev/null", str(SYSTEM_BWRAP)] if SYSTEM_BWRAP.exists() else []
    return [str(bwrap), "--unshare-user", "--dev-bind", "/", "/", "--tmpfs", str(bwrap.parent),
            *hide, "--chdir", str(tmp), "--"]  # fmt: skip


def test_where_no_sandbox_can_be_made_validate_starts_no_confined_server_and_says_so(
    tmp_path: Path, off_tmp: Path
) -> None:
    """docs/tools.md, "Checking servers": `validate` never starts a server with more rights
    than a run would give it: where no sandbox can be made, a stdio server a run would
    confine is not started (its start would have written outside the workspace), and a
    warning says so; the inputs are valid (exit 0), as for the shell. A `"sandbox": "off"`
    server starts, as the operator said."""
    ws = make_workspace(tmp_path, FILES)
    planting = str(DATA / "mcp" / "planting_server.py")
    servers = {
        "boxed": {"command": [PY, planting, str(off_tmp / "boxed.txt")]},
        "free": {"command": [PY, planting, str(off_tmp / "free.txt")], "sandbox": "off"},
    }
    proc = orkeon("validate", "--inputs", json.dumps({"mcp_servers": servers}),
                  "--workspace", str(ws), wrap=no_namespaces(tmp_path), cwd=tmp_path, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not (off_tmp / "boxed.txt").exists()
    assert (off_tmp / "free.txt").is_file()
    (said,) = [line for line in proc.stderr.splitlines() if "mcp server boxed" in line]
    assert said.startswith("warning: mcp server boxed (stdio: ")
    assert ": not started: it would run in the shell sandbox, which is not available here: " in said
    (free, valid) = proc.stdout.splitlines()
    assert free.startswith("mcp server free (stdio: ") and valid == "inputs are valid"


def test_where_no_sandbox_can_be_made_shell_calls_are_refused_before_the_hooks(
    tmp_path: Path,
) -> None:
    """Stage 2 refuses the call (refused_by null): no hook runs for it; the other tools
    run; the audit's build is not run unconfined; the result says "unavailable"."""
    ws = make_workspace(tmp_path, FILES)
    marks = tmp_path / "marks"
    marks.mkdir()
    script = [
        {"tool_calls": [shell("touch src/a/made.txt"), write("src/a/x.py", "x = 1\n")]},
        {"text": "done"},
    ]
    doc = batch(
        script,
        hooks=[{"event": "pre-tool", "command": f"touch {marks}/{{tool}}"}],
        audit={"build": ["touch", str(marks / "build-ran")]},
    )
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps(doc))
    rd = tmp_path / "run"
    proc = orkeon("run", "dev-batches", "--inputs", f"@{inputs}", "--workspace",
                  str(ws), "--run-dir", str(rd), "--output", "json", "--progress", "none",
                  wrap=no_namespaces(tmp_path), cwd=tmp_path, timeout=300)  # fmt: skip
    result = json.loads(proc.stdout)
    assert result["sandbox"] == "unavailable"
    (said,) = [line for line in proc.stderr.splitlines() if "sandbox is not available" in line]
    assert "every shell call will be refused" in said and "fix=" in said
    shell_call, write_call = calls(rd, "b1/a")
    assert shell_call["outcome"] == "refused" and shell_call["refused_by"] is None
    assert shell_call["result"].startswith("[refused: the shell sandbox is not available here: ")
    assert "namespace" in shell_call["result"]
    assert shell_call["hooks"] == [] and write_call["outcome"] == "ran"
    assert sorted(os.listdir(marks)) == ["file_write"]  # the hook ran for the write only
    assert not (ws / "src/a/made.txt").exists()
    (rec,) = result["audits"]
    assert (proc.returncode, result["status"], rec["passed"]) == (1, "failed", False)
    assert rec["failed_command"] == ["touch", str(marks / "build-ran")]
    assert (
        "was not run: it runs the model's code, and the shell sandbox is not available"
        in (rec["output_tail"])
    )
    assert [e["refused_by"] for e in events(rd, "tool.call")] == [None, None]


def test_validate_says_whether_the_sandbox_can_be_made(tmp_path: Path) -> None:
    doc = json.dumps({"workspace": str(tmp_path)})
    here = orkeon("validate", "--inputs", doc, cwd=tmp_path, timeout=300)
    assert (here.returncode, here.stdout) == (0, "inputs are valid\n")
    assert "sandbox" not in here.stderr  # it can be made here: nothing to say
    off = orkeon(
        "validate", "--inputs", json.dumps({"shell": {"sandbox": "off"}}), cwd=tmp_path, timeout=300
    )
    assert off.returncode == 0 and "shell sandbox: off" in off.stderr
    there = orkeon(
        "validate", "--inputs", doc, wrap=no_namespaces(tmp_path), cwd=tmp_path, timeout=300
    )
    assert (there.returncode, there.stdout) == (0, "inputs are valid\n"), there.stderr
    lines = there.stderr.splitlines()
    (said,) = [line for line in lines if "shell sandbox" in line]
    assert said.startswith("warning: shell sandbox: not available here: ")
    (fix,) = [line for line in lines if line.startswith("fix: ")]
    assert fix.endswith('"shell": {"sandbox": "off"} in the inputs to run commands unconfined')


def test_validate_says_when_hooks_cannot_be_kept_from_orkeons_memory(tmp_path: Path) -> None:
    """docs/security.md, "Hooks": where the veil cannot be made, hooks run as they
    are and `orkeon validate` says so (only when the inputs name hooks)."""
    hooks = json.dumps(
        {"workspace": str(tmp_path), "hooks": [{"event": "stop", "command": "true"}]}
    )
    here = orkeon("validate", "--inputs", hooks, cwd=tmp_path, timeout=300)
    assert here.returncode == 0 and "hooks:" not in here.stderr, here.stderr
    there = orkeon(
        "validate", "--inputs", hooks, wrap=no_bubblewrap(tmp_path), cwd=tmp_path, timeout=300
    )
    assert there.returncode == 0, there.stderr
    (said,) = [line for line in there.stderr.splitlines() if line.startswith("warning: hooks:")]
    assert "orkeon's processes cannot be hidden from them here: " in said
    assert "they would run as they are" in said


def test_an_unavailable_tool_is_refused_in_stage_2_whatever_the_tool(tmp_path: Path) -> None:
    """The seam is general (a role's catalog's checks, `calls.Catalog.unavailable`): any
    tool a check names is refused with its text, before the gate (which would refuse it
    with another text) and the hooks; the run's sandbox check is one such check."""
    import anyio
    from kit.pipeline import make_pipeline

    from orkeon_run.calls import BUILTINS, CallContext
    from orkeon_run.policy.gate import Gate
    from orkeon_run.run.confine import Confinement

    gate = Gate(deny=["file_read", "shell"])
    pipeline = make_pipeline(tmp_path, native=[("pre-tool", f"touch {tmp_path}/hooked")], gate=gate)
    check = Confinement("unavailable", reason="no namespaces").unavailable_check()
    assert check is not None and Confinement("on").unavailable_check() is None
    catalog = BUILTINS.with_check(
        lambda name: "[refused: the server is down]" if name == "file_read" else None
    )
    catalog = catalog.with_check(check)
    ctx = CallContext(step="dev-batches", role="b1/a", workspace=tmp_path, batch="b1", roots=("x",),
                      catalog=catalog)  # fmt: skip
    read = anyio.run(pipeline.call, ctx, "file_read", {"file_path": "a"}, "c1")
    assert (read.outcome, read.refused_by, read.result) == (
        "refused",
        None,
        "[refused: the server is down]",
    )
    sh = anyio.run(pipeline.call, ctx, "shell", {"command": "true"}, "c2")
    assert (sh.outcome, sh.refused_by) == ("refused", None)
    assert sh.result == "[refused: the shell sandbox is not available here: no namespaces]"
    assert not (tmp_path / "hooked").exists()


# --- what the sandbox shows -------------------------------------------------------------


def test_the_operators_files_under_tmp_are_shown_and_the_rest_of_tmp_is_not(
    tmp_path: Path,
) -> None:
    """docs/security.md, "What the sandbox shows": the files and programs the operator's
    own commands name (here the audit's test: a script and a flag file under the host's
    /tmp) are shown read-only wherever they lie; the host's /tmp as a whole stays hidden,
    from the audit's commands and from the role's."""
    assert tmp_path.resolve().is_relative_to("/tmp"), "pytest's tmp_path is under /tmp here"
    ws = make_workspace(tmp_path, FILES)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "flag").write_text("strict\n")
    secret = tmp_path / "other" / "secret"
    secret.parent.mkdir()
    secret.write_text("not for the sandbox\n")
    (tools / "audit.py").write_text(
        "import os, sys\n"
        "assert open(sys.argv[1]).read() == 'strict\\n'\n"
        f"assert not os.path.exists({str(secret)!r}), 'the rest of /tmp is shown'\n"
        f"assert not os.access({str(tools)!r} + '/flag', os.W_OK), 'writable'\n"
    )
    test = [PY, str(tools / "audit.py"), str(tools / "flag")]
    script = [
        {"tool_calls": [write("src/a/x.py", "x = 1\n"), shell(f"cat {secret}")]},
        {"text": "done"},
    ]
    rd = tmp_path / "run"
    result = run_step("dev-batches", batch(script, audit={"test": test}), ws, run_dir=rd)
    (rec,) = result["audits"]
    assert rec["passed"] is True, rec
    (peek,) = [c["result"] for c in calls(rd, "b1/a") if c["tool"] == "shell"]
    assert peek["exit_code"] != 0 and "No such file" in peek["stderr"]
