"""One P5 session, run through orkeon or a peer (Claude Code, Codex CLI): N tool calls,
each behind one settings-shape PreToolUse hook `echo x >> LOG`, against a loopback fake
model API (`fake_anthropic.py` for orkeon and Claude Code, `fake_responses.py` for Codex),
timed from process start to exit. CPU time is user + sys of the process and of every
child it waited for (`os.wait4`), the figure that holds on a loaded machine.

Workloads: `read` (orkeon `file_read` / Claude Code `Read` of README.md), `shell` (`cat
README.md` through orkeon's shell tool / Codex's `exec_command`), `scripted` (orkeon only,
the scripted provider, no HTTP).

The peers are found (`find`) from ORKEON_BENCH_CLAUDE / ORKEON_BENCH_CODEX (the binary),
else under ORKEON_BENCH_PEERS (default `bench/peers/npm/`, ignored by git) as npm installs
them there; `HOW` says how (docs/performance.md, "P5").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..common import group_cpu, new_group, remove_group

HERE = Path(__file__).resolve().parent
PEERS = {
    "claude": ("ORKEON_BENCH_CLAUDE", "cc", "claude", "@anthropic-ai/claude-code@2.1.332"),
    "codex": ("ORKEON_BENCH_CODEX", "codex", "codex", "@openai/codex@0.169.0"),
}


def peers_dir() -> Path:
    return Path(os.environ.get("ORKEON_BENCH_PEERS") or HERE / "npm")


def find(peer: str) -> Path | None:
    """The peer's binary, or None when it is not installed where we look."""
    var, folder, exe, _ = PEERS[peer]
    given = os.environ.get(var)
    path = Path(given) if given else peers_dir() / folder / "node_modules" / ".bin" / exe
    return path if path.is_file() and os.access(path, os.X_OK) else None


def how(peer: str) -> str:
    var, folder, _, package = PEERS[peer]
    return f"npm install --prefix {peers_dir() / folder} {package} (or set {var})"


@dataclass
class Timed:
    wall: float
    cpu: float  # user + sys of the process and of every child it waited for (wait4)
    tree: float | None = None  # CPU of every process it started, waited for or not (cgroup)
    stderr: str = ""  # what it wrote there (bench_floor reads `-X importtime` lines from it)


def launch(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[Timed, int, str]:
    """Run `argv` to its end: its times, exit code and stderr; in a cpuacct group of its
    own where one can be made (`tree`: bench/common.py says why)."""
    group = new_group("session")

    def join() -> None:  # in the child, before exec: it and all it starts are counted
        if group is not None:
            (group / "cgroup.procs").write_text("0")

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        p = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
            preexec_fn=join if group is not None else None,
        )  # fmt: skip
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode(errors="replace")
    tree = None
    if group is not None:
        tree = group_cpu(group)
        remove_group(group)
    return Timed(wall, usage.ru_utime + usage.ru_stime, tree, text), p.returncode, text


def project(tmp: str) -> str:
    p = os.path.join(tmp, "project")
    os.makedirs(os.path.join(p, "src"))
    Path(p, "README.md").write_text("hello\n")
    Path(p, "src", "app.py").write_text("print('hi')\n")
    for args in (["init", "-q"], ["add", "."], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=p, check=True)
    return p


def hooks(log: str) -> dict[str, Any]:
    return {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": f"echo x >> {log}"}]}]}  # fmt: skip


def _wait_port(path: str) -> str:
    for _ in range(500):
        if os.path.exists(path) and Path(path).read_text().strip():
            return Path(path).read_text().strip()
        time.sleep(0.02)
    raise RuntimeError("the fake model API did not start")


def fake_anthropic(turns: list[Any], tmp: str) -> tuple[subprocess.Popen[bytes], str]:
    spec, log, port = (os.path.join(tmp, n) for n in ("scenario.json", "requests.jsonl", "port"))
    Path(spec).write_text(json.dumps({"turns": turns}))
    argv = [sys.executable, str(HERE / "fake_anthropic.py"), "--scenario", spec, "--log", log,
            "--port-file", port]  # fmt: skip
    srv = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return srv, _wait_port(port)


def _stop(srv: subprocess.Popen[bytes]) -> None:
    srv.terminate()
    srv.wait()


def _fired(log: str) -> int:
    return len(Path(log).read_text().splitlines()) if os.path.exists(log) else 0


def _check(what: str, rc: int, fired: int, calls: int, err: str) -> None:
    if rc != 0 or fired != calls:
        raise RuntimeError(f"{what}: exit {rc}, {fired}/{calls} hooks: {err.strip()[-400:]}")


def orkeon(binary: str, calls: int, tmp: str, workload: str) -> Timed:
    proj = project(tmp)
    log = os.path.join(tmp, "hooks.log")
    plan = {"batches": [{"name": "b1", "roles": [{"name": "dev", "roots": ["src/"], "task": "read"}]}]}  # fmt: skip
    srv = None
    if workload == "scripted":
        read = {"tool_calls": [{"tool": "file_read", "input": {"file_path": "README.md"}}]}
        model: dict[str, Any] = {"provider": "scripted", "script": {"b1/dev": [read] * calls + [{"text": "done"}]}}  # fmt: skip
    else:
        use = (
            {"type": "tool_use", "name": "file_read", "input": {"file_path": "README.md"}}
            if workload == "read"
            else {"type": "tool_use", "name": "shell", "input": {"command": "cat README.md"}}
        )
        srv, port = fake_anthropic([[use] for _ in range(calls)] + [[{"type": "text", "text": "done"}]], tmp)  # fmt: skip
        model = {"provider": "anthropic", "model": "claude-test", "base_url": f"http://127.0.0.1:{port}",
                 "api_key_env": "ORKEON_BENCH_KEY"}  # fmt: skip
    doc = {"workspace": proj, "plan": plan, "model": model, "hooks": hooks(log), "budget": {"seconds": 600}}  # fmt: skip
    inputs = os.path.join(tmp, "inputs.json")
    Path(inputs).write_text(json.dumps(doc))
    env = dict(os.environ, ORKEON_BENCH_KEY="sk-test")
    argv = [binary, "run", "dev-batches", "--inputs", "@" + inputs, "--output", "json",
            "--run-dir", os.path.join(tmp, "run")]  # fmt: skip
    try:
        timed, rc, err = launch(argv, proj, env)
    finally:
        if srv is not None:
            _stop(srv)
    _check("orkeon", rc, _fired(log), calls, err)
    return timed


def claude(binary: str, calls: int, tmp: str, workload: str = "read") -> Timed:
    proj = project(tmp)
    home = os.path.join(tmp, "home")
    os.makedirs(os.path.join(home, ".claude"))
    log = os.path.join(tmp, "hooks.log")
    use = {"type": "tool_use", "name": "Read", "input": {"file_path": os.path.join(proj, "README.md")}}  # fmt: skip
    os.makedirs(os.path.join(proj, ".claude"))
    settings = {"permissions": {"allow": ["Read"]}, "hooks": hooks(log)}
    Path(proj, ".claude", "settings.json").write_text(json.dumps(settings))
    trust = {"projects": {proj: {"hasTrustDialogAccepted": True}}}
    Path(home, ".claude.json").write_text(json.dumps(trust))
    srv, port = fake_anthropic([[use] for _ in range(calls)] + [[{"type": "text", "text": "done"}]], tmp)  # fmt: skip
    env = {"PATH": os.environ["PATH"], "HOME": home, "LANG": "C.UTF-8", "SHELL": "/bin/bash",
           "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "ANTHROPIC_API_KEY": "sk-test",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
           "DISABLE_AUTOUPDATER": "1"}  # fmt: skip
    try:
        timed, rc, err = launch(
            [binary, "-p", "do the thing", "--output-format", "json"], proj, env
        )
    finally:
        _stop(srv)
    _check("Claude Code", rc, _fired(log), calls, err)
    return timed


def codex(binary: str, calls: int, tmp: str, workload: str = "shell") -> Timed:
    proj = project(tmp)
    home = os.path.join(tmp, "codex-home")
    os.makedirs(home)
    log, rlog, portf = (os.path.join(tmp, n) for n in ("hooks.log", "responses.jsonl", "port"))
    argv = [sys.executable, str(HERE / "fake_responses.py"), "--calls", str(calls), "--command",
            "cat README.md", "--log", rlog, "--port-file", portf]  # fmt: skip
    srv = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port = _wait_port(portf)
    Path(home, "config.toml").write_text(
        f'model = "gpt-test"\nmodel_provider = "fake"\n[model_providers.fake]\nname = "fake"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\nwire_api = "responses"\nenv_key = "FAKE_OPENAI_KEY"\n'
        'request_max_retries = 0\nstream_max_retries = 0\n[[hooks.PreToolUse]]\nmatcher = "*"\n'
        f'[[hooks.PreToolUse.hooks]]\ntype = "command"\ncommand = "echo x >> {log}"\n'
    )
    env = {"PATH": os.environ["PATH"], "HOME": home, "CODEX_HOME": home, "LANG": "C.UTF-8",
           "SHELL": "/bin/bash", "FAKE_OPENAI_KEY": "sk-test"}  # fmt: skip
    run = [binary, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
           "--dangerously-bypass-hook-trust", "do the thing"]  # fmt: skip
    try:
        timed, rc, err = launch(run, proj, env)
    finally:
        _stop(srv)
    _check("Codex", rc, _fired(log), calls, err)
    return timed


RUNNERS = {"orkeon": orkeon, "claude": claude, "codex": codex}


def session(kind: str, binary: str, calls: int, workload: str) -> Timed:
    """One session in a fresh temporary folder."""
    with tempfile.TemporaryDirectory(prefix=f"orkeon-p5-{kind}-") as tmp:
        return RUNNERS[kind](binary, calls, tmp, workload)
