"""Secrets stay out of the records (docs/security.md, "Secrets in the records"): the value of
the model's key variable and of every credential-like variable is `[redacted]` in the
events, transcripts, result, state, reports, and in what the model reads, wherever a
program printed it (a file the model `cat`s, a hook that echoes it).

The end-to-end test runs the real `orkeon run` against a loopback server speaking the
Anthropic Messages API, and reads what that server was sent: the model's side of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kit.fakes import anthropic_api
from kit.fakes.anthropic_api import AnthropicFake
from kit.process import orkeon
from kit.steps import environ, make_workspace

from orkeon_run.environ import MIN_SECRET_CHARS, REDACTED, Redactor
from orkeon_run.events import EventLog

KEY_ENV = "MY_LLM_ACCESS"  # a name that does not look like a credential: the key all the same
KEY = "llmkey-0123456789abcdef"
TOKEN = "deploy-planted-9876543210"
PEM = (
    "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n-----END KEY-----"
)


# --- the redactor -------------------------------------------------------------------------


def test_values_of_credential_variables_and_the_key_are_redacted() -> None:
    env = {
        "DEPLOY_TOKEN": TOKEN,
        KEY_ENV: KEY,
        "HOME": "/home/ci-runner-0001",
        "SSH_PRIVATE_KEY": PEM,
    }
    r = Redactor.from_environ(env, KEY_ENV)
    assert r.text(f"a {TOKEN} b {KEY}") == f"a {REDACTED} b {REDACTED}"
    assert r.text("/home/ci-runner-0001") == "/home/ci-runner-0001"  # not a credential name
    # A multi-line secret: whole, and each long line of it (a file printed another way).
    assert r.text(f"x{PEM}y") == f"x{REDACTED}y"
    assert r.text("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n") == f"{REDACTED}\n"
    clean = "nothing here"
    assert r.text(clean) is clean  # nothing copied when nothing is found


def test_short_values_are_not_redacted() -> None:
    """A 3-character "secret" would blank every `abc` of the run."""
    r = Redactor.from_environ({"SHORT_TOKEN": "abc", "OLLAMA_KEY": "none", "X_KEY": "a" * 7})
    assert not r
    assert r.text("abc none aaaaaaa") == "abc none aaaaaaa"
    assert MIN_SECRET_CHARS == 8
    assert Redactor(["a" * 8]).text("a" * 8) == REDACTED


def test_a_secret_inside_json_text_is_found_in_its_escaped_form() -> None:
    secret = 'p"a\\ss\tword-é12'
    r = Redactor([secret])
    line = json.dumps({"out": f"<{secret}>"}, ensure_ascii=False)
    assert json.loads(r.json_text(line)) == {"out": f"<{REDACTED}>"}
    value = {"stdout": f"{secret}\n", "exit_code": 0, "list": [secret]}
    assert r.value(value) == {"stdout": f"{REDACTED}\n", "exit_code": 0, "list": [REDACTED]}
    untouched = {"stdout": "fine"}
    assert r.value(untouched) is untouched


def test_the_event_log_redacts_the_file_the_stream_and_the_listeners(tmp_path: Path) -> None:
    import io

    stream = io.StringIO()
    seen: list[dict[str, Any]] = []
    log = EventLog(tmp_path / "events.jsonl", stream, Redactor([TOKEN]))
    log.listeners.append(seen.append)
    log.emit("tool.call", result={"stdout": f"token={TOKEN}"})
    log.close()
    for text in ((tmp_path / "events.jsonl").read_text(), stream.getvalue(), json.dumps(seen)):
        assert TOKEN not in text and f"token={REDACTED}" in text


# --- end to end ---------------------------------------------------------------------------


def leak_script(tmp: Path) -> Path:
    script = tmp / "leak.sh"
    script.write_text("#!/bin/sh\ncat .env >&2\nexit 1\n")
    script.chmod(0o755)
    return script


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_no_secret_reaches_the_records_or_the_model(tmp_path: Path) -> None:
    secrets_file = f"KEY={KEY}\nTOKEN={TOKEN}\n"
    ws = make_workspace(
        tmp_path, {"README.md": "# app\n", "src/__init__.py": "", ".env": secrets_file}
    )
    leak = leak_script(tmp_path)
    plan = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"],
                                                    "task": "Look around."}]}]}  # fmt: skip
    rd = tmp_path / "run"
    with AnthropicFake(api_key=KEY, models=("claude-x",)) as server:
        both = [
            ("c1", "file_read", {"file_path": ".env"}),
            ("c2", "shell", {"command": "cat .env"}),
        ]
        server.push(anthropic_api.message("reading", both), anthropic_api.message("done"))
        doc = {
            "model": {"provider": "anthropic", "model": "claude-x", "base_url": server.base_url,
                      "api_key_env": KEY_ENV, "max_retries": 0},
            "plan": plan,
            "shell": {"extra_allowed_commands": [str(leak)]},
            "hooks": {
                "SessionStart": [{"hooks": [{"type": "command", "command": "cat .env"}]}],
                "PostToolUse": [{"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "cat .env >&2; exit 2"},
                    {"type": "command", "command": "cat .env >&2; exit 1"}]}],
            },
        }  # fmt: skip
        # Native hooks are a list, settings-shape ones an object: the native one comes from
        # a second run below.
        env = {**environ(tmp_path), KEY_ENV: KEY, "DEPLOY_TOKEN": TOKEN}
        proc = orkeon(
            "run", "dev-batches", "--inputs", json.dumps(doc), "--workspace", str(ws),
            "--run-dir", str(rd), "--output", "json", "--progress", "plain",
            cwd=tmp_path, env=env,
        )  # fmt: skip
        sent = [json.dumps(r.body) for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "succeeded", result["error"]

    # What the model read: the file, the command's output, the hooks' context and feedback.
    assert len(sent) == 2
    for body in sent:
        assert KEY not in body and TOKEN not in body
    model_read = json.loads(sent[1])["messages"]
    first_prompt = json.dumps(model_read[0])
    assert f"KEY={REDACTED}" in first_prompt  # the SessionStart hook's context
    results = [b for m in model_read for b in m["content"] if isinstance(m["content"], list)
               and b.get("type") == "tool_result"]  # fmt: skip
    texts = [json.dumps(b["content"]) for b in results]
    assert all(f"TOKEN={REDACTED}" in t for t in texts), texts  # file_read, and cat + feedback

    # The records, and everything made from them; the log's warning about the hook that
    # exited 1 quotes what it printed.
    assert_clean(rd, proc.stdout + proc.stderr)
    assert f"TOKEN={REDACTED}" in proc.stderr
    for fmt in ("md", "json", "html", "junit"):
        report = orkeon("report", str(rd), "--format", fmt, cwd=tmp_path)
        assert report.returncode == 0, report.stderr
        assert KEY not in report.stdout and TOKEN not in report.stdout


def test_a_native_hook_that_echoes_a_secret_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kit.steps import calls, run_step, scripted, shell

    ws = make_workspace(tmp_path, {"src/__init__.py": "", ".env": f"TOKEN={TOKEN}\n"})
    leak = leak_script(tmp_path)
    plan = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]}
    doc = scripted(
        {"b1/api": [{"tool_calls": [shell("cat .env")]}, {"text": "done"}]},
        plan=plan,
        hooks=[{"event": "post-tool", "command": str(leak)}],
        shell={"extra_allowed_commands": [str(leak)]},
    )
    monkeypatch.setenv("CI_DEPLOY_TOKEN", TOKEN)  # run_step's environment is orkeon's
    rd = tmp_path / "run"
    result = run_step("dev-batches", doc, ws, run_dir=rd)
    assert result["status"] == "succeeded"
    (call,) = calls(rd, "b1/api")
    assert call["result"] == (
        '{"exit_code":0,"stdout":"TOKEN=[redacted]\\n","stderr":""}\n'
        f"[post-tool hook #1 ({leak}) exited 1: TOKEN=[redacted]]"
    )
    assert call["hooks"][0]["first_line"] == "TOKEN=[redacted]"
    assert_clean(rd)


def assert_clean(rd: Path, *more: str) -> None:
    texts = [p.read_text() for p in sorted(rd.rglob("*")) if p.is_file()]
    assert any(REDACTED in t for t in texts)
    for text in [*texts, *more]:
        assert KEY not in text and TOKEN not in text
