"""What reaches the programs orkeon starts: never the model's key; no credential-like
variable where the model steers the command (the shell tool, native hooks)."""

from __future__ import annotations

import json

from kit.steps import make_workspace, run_step

from orkeon_run.environ import scrubbed


def test_scrubbed_drops_the_key_own_variables_and_credentials():
    env = {
        "PATH": "/bin",
        "OPENAI_API_KEY": "sk-x",
        "MY_LLM": "named-key",
        "GITHUB_TOKEN": "t",
        "DB_PASSWORD": "p",
        "KEYBOARD": "us",  # not a credential: KEY must be a whole word
        "ORKEON_CONFIG_DIR": "/c",
        "ORKEON_TRUST_PROJECT_HOOKS": "1",
    }
    assert scrubbed(["MY_LLM"], environ=env) == {"PATH": "/bin", "KEYBOARD": "us"}
    kept = scrubbed(["MY_LLM"], credentials=False, environ=env)
    assert kept == {
        "PATH": "/bin",
        "OPENAI_API_KEY": "sk-x",
        "GITHUB_TOKEN": "t",
        "DB_PASSWORD": "p",
        "KEYBOARD": "us",
    }


PROBE = "python3 -c \"import os\nprint(os.environ.get('DEPLOY_TOKEN'), 'PATH' in os.environ)\""


def test_the_shell_tool_and_native_hooks_never_see_credentials(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPLOY_TOKEN", "s3cret")
    ws = make_workspace(tmp_path, {"README.md": "x\n"})
    (ws / "probe.py").write_text(
        "import os, sys\nsys.stderr.write(str(os.environ.get('DEPLOY_TOKEN')))\nsys.exit(1)\n"
    )
    doc = {
        "plan": {
            "batches": [{"name": "b1", "roles": [{"name": "r", "roots": ["src/"], "task": "t"}]}]
        },
        "shell": {"allow_interpreters": True},
        "hooks": [{"event": "post-tool", "command": "python3 probe.py"}],
        "model": {
            "provider": "scripted",
            "script": {"b1/r": [{"tool_calls": [{"tool": "shell", "input": {"command": PROBE}}]}]},
        },
    }
    result = run_step("dev-batches", doc, ws)
    assert result["status"] == "succeeded", result["error"]
    run_dir = ws / ".orkeon" / "runs" / result["run_id"]
    events = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    (call,) = [e for e in events if e["type"] == "tool.call"]
    # The post-tool hook printed the variable it saw and failed, so its line was added.
    assert call["result"].startswith('{"exit_code":0,"stdout":"None True\\n"')
    assert call["result"].endswith("exited 1: None]")
    assert "s3cret" not in (run_dir / "events.jsonl").read_text()


def test_a_variable_orkeon_set_for_itself_is_not_inherited(monkeypatch):
    from orkeon_run import environ as environ_mod

    monkeypatch.delenv("SOME_TEST_SELF", raising=False)
    monkeypatch.setattr(environ_mod, "_SET_HERE", {})
    environ_mod.set_for_this_process("SOME_TEST_SELF", "1")
    assert "SOME_TEST_SELF" not in scrubbed(credentials=False)
    monkeypatch.setenv("SOME_TEST_USER", "mine")
    environ_mod.set_for_this_process("SOME_TEST_USER", "other")  # the user's value wins
    assert scrubbed(credentials=False)["SOME_TEST_USER"] == "mine"
