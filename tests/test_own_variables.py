"""Every variable orkeon consumes is orkeon's own (docs/security.md, "What orkeon keeps for
itself"): the trace exporter's `OTEL_EXPORTER_OTLP_*` (headers, certificates, client key),
every `ORKEON_*`, and the variables an MCP server's configuration names, are in no program
orkeon starts (the shell, native and settings-shape hooks, the audit's build and test, MCP
servers), and their values are `[redacted]` wherever a program prints them anyway.

The run is the real `orkeon run` as a process, the scripted model playing a model that
prints the environment of every place its work reaches."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kit.steps import calls, environ, make_workspace, scripted, shell

from orkeon_run.environ import REDACTED, Redactor, own_name, scrubbed, url_secrets

PY = sys.executable
OTEL_SECRET = "otel-bearer-5f1c9a7e3b"
CLIENT_KEY = "/keys/orkeon-otlp-client.key"
CA_FILE = "/certs/orkeon-otlp-ca.pem"
MCP_PAT = "mcp-pat-0a1b2c3d4e5f"
OWN_ENV = {
    "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer {OTEL_SECRET}",
    "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": CLIENT_KEY,
    "OTEL_EXPORTER_OTLP_CERTIFICATE": CA_FILE,
    "OTEL_SDK_DISABLED": "true",  # nothing is exported: this test is about the children
    "ORKEON_REQUEST": "a request the operator keeps for a CI job",
    "Orkeon__Tools__Shell__AllowInterpreters": "true",
    "UPSTREAM_PAT": MCP_PAT,  # named by an MCP server's env: orkeon's too from then on
}
# What prints each program's environment: `python3 dump.py WHERE FOLDER` prints it and
# writes it to FOLDER/WHERE.
DUMP = (
    "import json, os, sys\n"
    "from pathlib import Path\n"
    "text = json.dumps(dict(os.environ))\n"
    "print(text)\n"
    "Path(sys.argv[2], sys.argv[1]).write_text(text)\n"
)


def run_cli(
    tmp: Path, ws: Path, doc: dict[str, Any]
) -> tuple[subprocess.CompletedProcess[str], Path]:
    rd = tmp / f"run-{len(list(tmp.glob('run-*')))}"
    env = {**environ(tmp), **OWN_ENV}
    done = subprocess.run(
        [
            PY,
            "-m",
            "orkeon_run",
            "run",
            "dev-batches",
            "--inputs",
            json.dumps(doc),
            "--workspace",
            str(ws),
            "--run-dir",
            str(rd),
            "--output",
            "json",
            "--progress",
            "plain",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
        timeout=120,
    )
    return done, rd


# What orkeon sets for a hook (docs/hooks.md, "Execution and environment"), not passes on.
HOOK_VARS = {"ORKEON_HOOK_PATH", "ORKEON_HOOK_TOOL", "ORKEON_HOOK_EVENT", "ORKEON_PROJECT_DIR"}


def assert_none_of_orkeons(env: dict[str, str], where: str) -> None:
    own = sorted(k for k in env if (own_name(k) and k not in HOOK_VARS) or k == "UPSTREAM_PAT")
    assert own == [], f"{where} saw {own}"
    for value in (OTEL_SECRET, CLIENT_KEY, CA_FILE, MCP_PAT):
        assert not any(value in v for v in env.values()), (where, value)


@pytest.mark.parametrize("hooks", ["native", "settings"])
def test_no_program_orkeon_starts_sees_its_variables_and_no_record_holds_them(
    tmp_path: Path, hooks: str
) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    ws = make_workspace(
        tmp_path,
        {
            "README.md": "# app\n",
            "src/__init__.py": "",
            "dump.py": DUMP,
            "notes.txt": f"the collector's token: {OTEL_SECRET}\n",
        },
    )
    script = {
        "b1/api": [
            {"tool_calls": [shell(f"{shlex.quote(PY)} dump.py shell src"), shell("cat notes.txt")]},
            {"text": "done"},
        ]
    }
    hook = shlex.join([PY, str(ws / "dump.py"), str(hooks), str(dumps)])
    doc = scripted(
        script,
        plan={
            "batches": [
                {"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "look"}]}
            ]
        },
        shell={"extra_allowed_commands": [PY]},
        audit={"build": [PY, "dump.py", "audit", "src"]},
        mcp_servers={
            "fake": {"command": PY, "args": ["-c", "pass"], "env": {"UPSTREAM": "${UPSTREAM_PAT}"}}
        },
    )
    if hooks == "native":
        doc["hooks"] = [{"event": "post-tool", "command": hook}]
    else:
        doc["hooks"] = {"PostToolUse": [{"hooks": [{"type": "command", "command": hook}]}]}
    done, rd = run_cli(tmp_path, ws, doc)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded", result["error"]

    printed, cat = calls(rd, "b1/api")
    assert_none_of_orkeons(json.loads(printed["result"]["stdout"]), "the shell")
    assert cat["result"]["stdout"] == f"the collector's token: {REDACTED}\n"
    assert_none_of_orkeons(json.loads((dumps / hooks).read_text()), f"a {hooks} hook")
    assert_none_of_orkeons(json.loads((ws / "src" / "audit").read_text()), "the audit's build")

    texts = [p.read_text(errors="replace") for p in sorted(rd.rglob("*")) if p.is_file()]
    for text in [*texts, done.stdout, done.stderr]:
        for value in (OTEL_SECRET, CLIENT_KEY, CA_FILE):
            assert value not in text


def test_the_configurations_secrets_are_redacted_and_its_variables_kept_from_children(
    tmp_path: Path,
) -> None:
    """An MCP server's `headers` and `env` values, the variables they name, and the
    credentials inside the model's `base_url` and a server's `url`."""
    from orkeon_run.run.context import child_environ
    from orkeon_run.run.prepare import prepare
    from orkeon_run.run.secrets import run_redactor

    ws = make_workspace(tmp_path, {"README.md": "x\n"}, git=False)
    doc = {
        "workspace": str(ws),
        "model": {
            "provider": "openai",
            "model": "m",
            "api_key_env": "LLM_ACCESS",
            "base_url": "https://gateway-user:gw-pass-123456@llm.example/v1?sig=q-sig-abcdef12",
        },
        "mcp_servers": {
            "web": {
                "url": "https://mcp.example/mcp?access=url-tok-12345678",
                "headers": {"Authorization": "Bearer ${WEB_PAT}"},
            },
            "db": {
                "command": "db-server",
                "env": {"DB_URL": "${DB_URL}", "MODE": "literal-mode-value"},
            },
        },
    }
    env = {
        "PATH": "/bin",
        "LLM_ACCESS": "llm-key-0123456789",
        "WEB_PAT": "web-pat-0123456789",
        "DB_URL": "postgres://u:db-pass-9876@db/x",
        "KEEP": "kept",
    }
    config = prepare(doc, step=None, environ=env, need_model=True)
    red = run_redactor(config, env)
    for secret in (
        "gw-pass-123456",
        "q-sig-abcdef12",
        "url-tok-12345678",
        "web-pat-0123456789",
        "postgres://u:db-pass-9876@db/x",
        "literal-mode-value",
        "llm-key-0123456789",
    ):
        assert red.text(f"x {secret} y") == f"x {REDACTED} y", secret
    import os

    old = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        child = child_environ(config, credentials=False)
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert child == {"PATH": "/bin", "KEEP": "kept"}


def test_scrubbed_drops_every_variable_orkeon_consumes() -> None:
    env = {
        "PATH": "/bin",
        "ORKEON_ANYTHING": "1",
        "orkeon__tools__shell__x": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c",
        "OTEL_SERVICE_NAME": "svc",
        "TRACEPARENT": "00-abc-def-01",
    }
    assert scrubbed(environ=env, credentials=False) == {
        "PATH": "/bin",
        "OTEL_SERVICE_NAME": "svc",
        "TRACEPARENT": "00-abc-def-01",
    }


def test_the_redactor_knows_the_exporters_secrets_and_orkeons_folders() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-api-key=abcdefgh1234,tenant=acme-tenant-1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel-user:otel-pass-1234@collector:4318",
        "ORKEON_CONFIG_DIR": "/home/someone/.config/orkeon",
        "ORKEON_MODEL": "anthropic:claude-sonnet-4-5",  # the run's recorded configuration
    }
    red = Redactor.from_environ(env)
    for secret in (
        "abcdefgh1234",
        "acme-tenant-1",
        "otel-pass-1234",
        "/home/someone/.config/orkeon",
    ):
        assert secret in red.secrets
    assert "anthropic:claude-sonnet-4-5" not in red.secrets
    assert url_secrets("https://h/p") == []
