"""Exit 4, `error.kind`, `schema_version` and the required `model` (docs/output.md, "Exit
codes"): a provider that refuses the key, rate-limits or errs past every retry, or cannot
be reached ends the step "failed" with exit 4 and `error.kind` "provider", through the
runner and through the real `orkeon run` command; a role's own failure still wins (exit 1).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from kit import ROOT
from kit.fakes.protocols import OPENAI, PROTOCOLS, Protocol
from kit.fakes.server import FakeServer, unreachable_url
from kit.process import orkeon
from kit.steps import environ, make_workspace, read_jsonl, run_step, write

from orkeon_run.agent.role import RoleResult
from orkeon_run.jobs.jobdir import outcome
from orkeon_run.run.steps.outcome import verdict
from orkeon_run.vocabulary import SCHEMA_VERSION

FILES = {"README.md": "# demo\n", "src/app.py": "print('hi')\n"}
PLAN = {
    "batches": [
        {
            "name": "b1",
            "roles": [
                {"name": "api", "roots": ["src/"], "task": "t"},
                {"name": "web", "roots": ["web/"], "task": "t"},
            ],
        }
    ]
}
MISSING = 'orkeon: model: required; "provider": "scripted" runs a script with no network\n'


def model(proto: Protocol, url: str, **more: Any) -> dict[str, Any]:
    return {"provider": proto.name, "model": proto.model, "base_url": url, "timeout_seconds": 5,
            **more}  # fmt: skip


def base_url(proto: Protocol, server: FakeServer) -> str:
    return server.base_url  # type: ignore[attr-defined,no-any-return]


def failing(proto: Protocol, how: str) -> tuple[FakeServer | None, str, int]:
    """A provider failing `how`: (its server or None, its base URL, the requests a role
    with `max_retries` 2 makes before it gives up)."""
    if how == "unreachable":
        url = unreachable_url()
        return None, url + ("/v1" if proto.name == "openai" else ""), 0
    server = proto.server().start()
    if how == "401":
        server.api_key = "another-key"  # type: ignore[attr-defined]
        return server, base_url(proto, server), 1  # not retried
    server.answer_always(proto.rate_limited() if how == "429" else proto.server_error())
    return server, base_url(proto, server), 3


@pytest.mark.timeout(30)
@pytest.mark.parametrize("proto", PROTOCOLS, ids=lambda p: p.name)
@pytest.mark.parametrize("how", ["401", "429", "500", "unreachable"])
def test_a_provider_failure_exits_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, proto: Protocol, how: str
) -> None:
    monkeypatch.setenv(proto.key_env, proto.key)
    ws = make_workspace(tmp_path, FILES)
    server, url, requests = failing(proto, how)
    try:
        doc = {"request": "r", "model": model(proto, url, max_retries=2)}
        result = run_step("dev-spec", doc, ws, run_dir=tmp_path / "run")
    finally:
        if server is not None:
            server.stop()
    assert (result["status"], result["exit_code"]) == ("failed", 4), result["error"]
    assert result["error"]["kind"] == "provider"
    (analyst,) = result["roles"]  # the writer never started
    assert (analyst["name"], analyst["status"], analyst["error_kind"]) == (
        "analyst",
        "failed",
        "provider",
    )
    assert result["error"]["message"] == f"role analyst failed: {analyst['error']}"
    words = {"401": "authentication failed (HTTP 401)", "429": "rate limited (HTTP 429)",
             "500": "server error (HTTP 500)", "unreachable": f"cannot connect to {url}"}  # fmt: skip
    assert words[how] in analyst["error"]
    if server is not None:
        assert len(server.requests) == requests
    ends = [e for e in read_jsonl(tmp_path / "run" / "events.jsonl") if e["type"] == "role.end"]
    assert [(e["role"], e["error_kind"]) for e in ends] == [("analyst", "provider")]


@pytest.mark.timeout(60)
def test_the_command_exits_4_and_every_line_has_the_schema_version(tmp_path: Path) -> None:
    """Through the real `orkeon run` (a child process): a rate limit that outlasts the
    retries is exit 4; each stream-json line and events.jsonl line carries `schema_version`,
    and the result validates against `orkeon schema result`."""
    ws = make_workspace(tmp_path, FILES)
    env = environ(tmp_path, **{OPENAI.key_env: OPENAI.key})
    with OPENAI.server() as server:
        server.push(OPENAI.reply("src/app.py prints hi."))  # the analyst finishes
        server.answer_always(OPENAI.rate_limited())  # the writer is rate-limited for good
        doc = {"request": "r", "model": model(OPENAI, server.base_url, max_retries=1)}
        proc = orkeon("run", "dev-spec", "--workspace", str(ws), "--inputs", json.dumps(doc),
                      "--output", "stream-json", "--progress", "none",
                      cwd=tmp_path, env=env, timeout=50)  # fmt: skip
    assert proc.returncode == 4, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines and all(e["schema_version"] == SCHEMA_VERSION for e in lines)
    result = lines[-1]
    assert result.pop("type") == "result" and result.pop("ts") > 0
    assert (result["status"], result["exit_code"], result["error"]["kind"]) == (
        "failed",
        4,
        "provider",
    )
    assert [(r["name"], r["status"]) for r in result["roles"]] == [
        ("analyst", "succeeded"),
        ("writer", "failed"),
    ]
    rd = Path(next(e for e in lines if e["type"] == "run.start")["run_dir"])
    saved = json.loads((rd / "result.json").read_text())
    assert saved == result and saved["schema_version"] == SCHEMA_VERSION
    events = read_jsonl(rd / "events.jsonl")
    assert all(e["schema_version"] == SCHEMA_VERSION for e in events)
    schema = orkeon("schema", "result", cwd=tmp_path, env=env, timeout=None)
    assert schema.returncode == 0, schema.stderr
    jsonschema.validate(saved, json.loads(schema.stdout))
    event_schema = orkeon("schema", "event", cwd=tmp_path, env=env, timeout=None)
    assert event_schema.returncode == 0, event_schema.stderr
    for event in events:
        jsonschema.validate(event, json.loads(event_schema.stdout))


def test_a_role_that_failed_on_its_own_wins_over_a_provider_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two roles of a batch: b1/api's provider fails, b1/web's answers keep being cut at the
    output limit (its own failure). The work is known broken: exit 1, kind "role"."""
    monkeypatch.setenv(OPENAI.key_env, OPENAI.key)
    ws = make_workspace(tmp_path, FILES)

    def by_role(req: Any) -> Any:
        if "role `web`" in req.body["messages"][0]["content"]:  # its system prompt
            return OPENAI.reply("thinking …", cut=True)
        return OPENAI.server_error()

    with OPENAI.server() as server:
        server.fallback = by_role
        doc = {"model": model(OPENAI, server.base_url, max_retries=0), "plan": PLAN}
        result = run_step("dev-batches", doc, ws, run_dir=tmp_path / "run")
    roles = {r["name"]: r for r in result["roles"]}
    assert roles["b1/api"]["error_kind"] == "provider"
    assert roles["b1/web"]["status"] == "failed" and "error_kind" not in roles["b1/web"]
    assert (result["status"], result["exit_code"], result["error"]["kind"]) == ("failed", 1, "role")
    assert "role b1/api failed: openai" in result["error"]["message"]
    assert "role b1/web failed:" in result["error"]["message"]


def role(status: str, kind: str | None = None) -> RoleResult:
    return RoleResult("r", status, 1, 0, 0, "", error_kind=kind)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("roles", "error", "kind", "expected"),
    [
        ([role("succeeded")], None, "role", ("succeeded", None)),
        ([role("failed", "provider")], None, "role", ("failed", "provider")),
        # The audit of a batch whose role the provider cut short: still the provider's.
        ([role("failed", "provider"), role("succeeded")], "audit failed", "audit",
         ("failed", "provider")),
        ([role("failed", "provider"), role("stopped")], None, "role", ("failed", "role")),
        ([role("failed", "provider"), role("budget_exhausted")], None, "role",
         ("budget_exhausted", "budget")),
        ([role("succeeded")], "audit failed", "audit", ("failed", "audit")),
        ([role("succeeded")], "no spec", "role", ("failed", "role")),
    ],
)  # fmt: skip
def test_which_failure_names_the_step(
    roles: list[RoleResult], error: str | None, kind: Any, expected: tuple[str, str | None]
) -> None:
    assert verdict(roles, error, kind) == expected


def test_jobs_read_exit_4_and_the_kind_and_old_results_as_before() -> None:
    new = {"schema_version": 2, "status": "failed", "exit_code": 4,
           "error": {"kind": "provider", "message": "m"}, "roles": []}  # fmt: skip
    assert outcome(new, None) == "provider_failed"
    # A role "failed" by its own doing, in a result that says its kind: not the provider.
    own = {"schema_version": 2, "status": "failed", "exit_code": 1,
           "error": {"kind": "role", "message": "m"}, "roles": [{"status": "failed"}]}  # fmt: skip
    assert outcome(own, None) == "failed"
    # A result from before error.kind: a "failed" role meant its provider failed.
    old = {"status": "failed", "exit_code": 1, "error": "m", "roles": [{"status": "failed"}]}
    assert outcome(old, None) == "provider_failed"


@pytest.mark.slow
def test_a_run_needs_a_model(tmp_path: Path) -> None:
    """No model in the inputs, the flags, the environment or a settings file: exit 2, one
    line, nothing written. `--model` or ORKEON_MODEL give one."""
    ws = make_workspace(tmp_path, FILES)
    doc = json.dumps({"request": "r"})
    proc = orkeon("run", "dev-spec", "--workspace", str(ws), "--inputs", doc, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", MISSING)
    assert not (ws / ".orkeon").exists()
    proc = orkeon("validate", "--step", "dev-spec", "--workspace", str(ws),
                  "--inputs", doc, cwd=tmp_path)  # fmt: skip
    assert (proc.returncode, proc.stderr) == (2, MISSING)
    # Without a step, validate has no run to check the model for.
    assert orkeon("validate", "--inputs", doc, cwd=tmp_path).returncode == 0
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"writer": [{"tool_calls": [write(".orkeon/spec.md", "s")]}]}))
    argv = ["run", "dev-spec", "--workspace", str(ws), "--inputs", doc, "--output", "json",
            "--progress", "none"]  # fmt: skip
    by_flag = orkeon(*argv, "--model", f"scripted:{script}", cwd=tmp_path)
    assert by_flag.returncode == 0, by_flag.stderr
    by_env = orkeon(*argv, cwd=tmp_path, env=environ(tmp_path, ORKEON_MODEL=f"scripted:{script}"))
    assert by_env.returncode == 0, by_env.stderr
    assert json.loads(by_env.stdout)["error"] is None


def test_a_pipeline_whose_provider_fails_exits_4_and_repairs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dev-spec and dev-plan succeed, then the provider goes down during dev-batches: the
    pipeline ends with dev-batches' exit 4 and kind, and starts no tasks-repair (a repair
    would meet the same provider)."""
    monkeypatch.setenv(OPENAI.key_env, OPENAI.key)
    ws = make_workspace(tmp_path, FILES)
    plan = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]}
    with OPENAI.server() as server:
        spec = {"file_path": ".orkeon/spec.md", "content": "# Spec\n"}
        plan_file = {"file_path": ".orkeon/plan.json", "content": json.dumps(plan)}
        server.push(
            OPENAI.reply("src/app.py prints hi."),  # analyst
            OPENAI.reply(calls=[("w1", "file_write", spec)]),  # writer
            OPENAI.reply("written"),
            OPENAI.reply(calls=[("p1", "file_write", plan_file)]),  # planner
            OPENAI.reply("planned"),
        )
        server.answer_always(OPENAI.server_error())  # b1/api, and anything after
        doc = {"request": "r", "model": model(OPENAI, server.base_url, max_retries=1)}
        result = run_step("pipeline", doc, ws, run_dir=tmp_path / "run")
    assert [(s["name"], s["exit_code"]) for s in result["steps"]] == [
        ("dev-spec", 0),
        ("dev-plan", 0),
        ("dev-batches", 4),
    ]
    assert (result["status"], result["exit_code"], result["error"]["kind"]) == (
        "failed",
        4,
        "provider",
    )
    assert result["error"]["message"].startswith("dev-batches: role b1/api failed: openai")


def test_under_github_actions_exit_4_is_annotated_as_its_own_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orkeon_run.report.github import workflow_commands
    from orkeon_run.report.load import load

    monkeypatch.setenv(OPENAI.key_env, OPENAI.key)
    ws = make_workspace(tmp_path, FILES)
    with OPENAI.server() as server:
        server.api_key = "another-key"
        doc = {"request": "r", "model": model(OPENAI, server.base_url)}
        run_step("dev-spec", doc, ws, run_dir=tmp_path / "run")
    (line,) = workflow_commands(load(tmp_path / "run"), None)
    assert line.startswith(
        "::error title=orkeon dev-spec%3A the model provider failed (exit 4)%3A run the job "
        "again later::role analyst failed: openai gpt-4o-mini: authentication failed (HTTP 401)"
    )


def exit_table(path: Path) -> list[str]:
    """The rows of the first `| exit | meaning |` table in `path`."""
    lines = path.read_text().splitlines()
    start = lines.index("| exit | meaning |")
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_the_exit_codes_are_one_table_in_the_readme_and_the_output_docs() -> None:
    root = ROOT
    readme = exit_table(root / "README.md")
    assert readme == exit_table(root / "docs" / "output.md")
    assert [row.split("|")[1].strip() for row in readme] == ["0", "1", "2", "3", "4", "130"]


def test_orkeon_run_help_names_every_exit_code_of_the_table(capsys) -> None:
    from orkeon_run.__main__ import main

    assert main(["run", "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())  # unwrapped
    for row in exit_table(ROOT / "README.md"):
        code = row.split("|")[1].strip()
        assert re.search(rf"(Exit|,) {code} \w", shown), (code, shown[:400])


def test_a_step_that_cannot_start_its_work_says_input(tmp_path: Path) -> None:
    """The spec's path leads outside the workspace once the run looks (a symlink): status
    "error", exit 1, kind "input"; no role ran."""
    ws = make_workspace(tmp_path, FILES)
    (ws / ".orkeon").mkdir()
    (ws / ".orkeon" / "spec.md").symlink_to(tmp_path / "elsewhere.md")
    doc = {"request": "r", "model": {"provider": "scripted"}}
    result = run_step("dev-spec", doc, ws, run_dir=tmp_path / "run")
    assert (result["status"], result["exit_code"], result["roles"]) == ("error", 1, [])
    assert result["error"] == {
        "kind": "input",
        "message": "spec: .orkeon/spec.md is outside the workspace",
    }
