"""How MCP tools are wired into the parts below a run (issue 15): rules naming them, crews
listing them, hook matchers counting them, trust covering their servers, where servers
come from, the one "cannot run here" seam at the pipeline's stage 2, what inputs.json
keeps."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit.pipeline import make_pipeline

from orkeon_run.calls import BUILTINS, CallContext, Catalog
from orkeon_run.catalog import TOOLS, declared_tool
from orkeon_run.config.crews import Crew
from orkeon_run.config.inputs import parse_inputs
from orkeon_run.config.mcp import REDACTED
from orkeon_run.config.mcp_sources import load_servers
from orkeon_run.config.trust import (
    config_hash,
    doc_is_trusted,
    mcp_json_trusted,
    record_mcp_json_trust,
    record_trust,
)
from orkeon_run.errors import InputError
from orkeon_run.events import EventLog
from orkeon_run.hooks.claude.sources import load_settings_hooks
from orkeon_run.pipeline import check_call
from orkeon_run.policy.gate import Gate
from orkeon_run.policy.rules import RuleSet, parse_rule
from orkeon_run.run.rundir import redact_inputs

SERVER = {"command": [sys.executable, "-m", "server"]}


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


# --- rules -----------------------------------------------------------------------------------


def test_rules_name_mcp_tools_as_claude_codes_permission_rules_do() -> None:
    rs = RuleSet.parse(
        "r", allow=["mcp__git", "mcp__db__*", "mcp__web__fetch"], deny=["mcp__git__git_push"]
    )
    verdicts = {
        tool: rs.refusal(tool, ())
        for tool in (
            "mcp__git__git_status",
            "mcp__git__git_push",
            "mcp__db__query",
            "mcp__web__fetch",
            "mcp__web__post",
            "mcp__gitx__a",  # another server whose name starts the same
            "file_read",
        )
    }
    allowed = "mcp__git, mcp__db__*, mcp__web__fetch"
    assert verdicts == {
        "mcp__git__git_status": None,
        "mcp__git__git_push": "mcp__git__git_push",
        "mcp__db__query": None,
        "mcp__web__fetch": None,
        "mcp__web__post": allowed,
        "mcp__gitx__a": allowed,
        "file_read": allowed,
    }
    assert parse_rule("mcp__my-db__run_query").tool == "mcp__my-db__run_query"


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ("mcp__git__git_log(*)", "rule 'mcp__git__git_log(*)': an MCP tool's rule takes no pattern: write mcp__git__git_log"),
        ("mcp__", "'mcp__' is not an MCP rule: write mcp__SERVER__TOOL, mcp__SERVER__* or mcp__SERVER"),
        ("mcp__my.db__q", "'mcp__my.db__q' is not an MCP rule"),
        ("mcp__git__", "'mcp__git__' is not an MCP rule"),
    ],
)  # fmt: skip
def test_bad_mcp_rules_are_named(rule: str, problem: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_rule(rule)
    assert str(caught.value).startswith(problem)


def test_gate_rules_naming_no_configured_server_are_warned_about(tmp_path: Path) -> None:
    from orkeon_run.run.prepare import prepare

    doc = {"gate": {"deny": ["mcp__gti__*", "mcp__git__git_push"]}, "mcp_servers": {"git": SERVER}}
    env = {"ORKEON_CONFIG_DIR": str(tmp_path / "cfg")}
    config = prepare(doc, step=None, workspace=str(tmp_path), environ=env)
    assert config.warnings == ("gate.deny[0]: 'mcp__gti__*' names no MCP server of this run (git)",)


# --- crews -----------------------------------------------------------------------------------


def crew(tools: list[str]) -> dict[str, Any]:
    return {"step": "dev-plan", "roles": [{"name": "planner", "prompt": "p.md", "tools": tools}]}


def test_a_crew_role_may_list_mcp_entries() -> None:
    entries = ["file_read", "mcp__git__git_status", "mcp__tracker__*", "mcp__db"]
    assert Crew.model_validate(crew(entries)).roles[0].tools == entries
    with pytest.raises(ValueError) as caught:
        Crew.model_validate(crew(["file_read", "mcp__git__bad name"]))
    assert "'mcp__git__bad name' is not an MCP tool entry" in str(caught.value)
    with pytest.raises(ValueError) as caught:
        Crew.model_validate(crew(["git_status"]))
    assert "unknown tool 'git_status'" in str(caught.value)


# --- matchers --------------------------------------------------------------------------------


def test_matcher_warnings_count_the_tools_the_servers_could_list(tmp_path: Path) -> None:
    def group(matcher: str) -> dict[str, Any]:
        return {"matcher": matcher, "hooks": [{"type": "command", "command": "true"}]}

    matchers = ["mcp__.*", "mcp__git__.*", "mcp__git__git_status", "mcp__gti__.*", "Bash|mcp__x"]
    inputs = parse_inputs({"hooks": {"PreToolUse": [group(m) for m in matchers]}})

    def warned(servers: list[str]) -> list[str]:
        warnings: list[str] = []
        load_settings_hooks(
            inputs,
            workspace=tmp_path,
            config_dir=tmp_path / "cfg",
            environ={},
            warn=warnings.append,
            mcp_servers=servers,
        )
        return [w.split("matcher ")[1].split(" matches")[0] for w in warnings]

    assert warned([]) == ["'mcp__.*'", "'mcp__git__.*'", "'mcp__git__git_status'", "'mcp__gti__.*'"]
    assert warned(["git"]) == ["'mcp__gti__.*'"]
    warnings: list[str] = []
    load_settings_hooks(
        inputs, workspace=tmp_path, config_dir=tmp_path, environ={}, warn=warnings.append,
        mcp_servers=["git"],
    )  # fmt: skip
    # Every name of the catalog's tools (file_read, Read, read_file, ...), then the servers'.
    names = ", ".join(n for t in TOOLS.values() for n in t.names)
    assert warnings[0].endswith(f"matches no tool ({names}, mcp__git__*)")


# --- trust -----------------------------------------------------------------------------------


def test_the_trust_hash_covers_mcp_servers_and_keeps_older_trust(tmp_path: Path) -> None:
    hooks = {"PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]}
    doc = {"hooks": hooks, "Orkeon": {"shell": {}}}
    # The hash before servers existed, which users' trusted.json files hold.
    before = json.dumps(
        {"hooks": hooks, "Orkeon": {"Orkeon": {"shell": {}}}},
        sort_keys=True,
        separators=(",", ":"),
    )
    assert config_hash(doc) == "sha256:" + hashlib.sha256(before.encode()).hexdigest()
    with_servers = {**doc, "mcpServers": {"git": SERVER}}
    assert config_hash(with_servers) != config_hash(doc)
    other = {**doc, "mcpServers": {"git": {"command": "other"}}}
    assert config_hash(other) != config_hash(with_servers)

    ws = tmp_path / "ws"
    write(ws / ".orkeon" / "settings.json", with_servers)
    record_trust(ws, config_dir=tmp_path)
    kwargs: dict[str, Any] = {"config_dir": tmp_path, "environ": {}, "stdin_is_tty": False}
    assert doc_is_trusted(ws, with_servers, **kwargs)
    assert not doc_is_trusted(ws, other, **kwargs)

    mcp_json = {"mcpServers": {"proj": SERVER}}
    write(ws / ".mcp.json", mcp_json)
    assert not mcp_json_trusted(ws, mcp_json, **kwargs)
    record_mcp_json_trust(ws, config_dir=tmp_path)
    assert mcp_json_trusted(ws, mcp_json, **kwargs)
    assert not mcp_json_trusted(ws, {"mcpServers": {"proj": {"command": "x"}}}, **kwargs)
    # The environment variable trusts it as it is, only when stdin is not a terminal.
    env = {"ORKEON_TRUST_PROJECT_HOOKS": "1"}
    assert mcp_json_trusted(
        ws, {"mcpServers": {}}, config_dir=tmp_path, environ=env, stdin_is_tty=False
    )
    assert not mcp_json_trusted(ws, {"mcpServers": {}}, config_dir=tmp_path, environ=env, stdin_is_tty=True)  # fmt: skip


# --- where servers come from -------------------------------------------------------------------


def servers_of(ws: Path, cfg: Path, inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    warnings: list[str] = []
    found = load_servers(
        parse_inputs(inputs), workspace=ws, config_dir=cfg, environ={}, stdin_is_tty=False,
        warn=warnings.append,
    )  # fmt: skip
    return {n: s.argv or s.url for n, s in found.items()}, warnings


def test_servers_come_from_every_source_and_a_later_one_replaces_a_name_whole(
    tmp_path: Path,
) -> None:
    ws, cfg = tmp_path / "ws", tmp_path / "cfg"
    write(cfg / "settings.json", {"mcpServers": {"a": {"command": "user-a"}, "b": {"command": "user-b", "env": {"X": "1"}}}})  # fmt: skip
    write(ws / ".orkeon" / "settings.json", {"mcpServers": {"b": {"url": "http://127.0.0.1:1/mcp"}, "c": {"command": "project-c"}}})  # fmt: skip
    record_trust(ws, config_dir=cfg)
    write(ws / ".mcp.json", {"mcpServers": {"c": {"command": "mcp-json-c"}, "d": {"command": "mcp-json-d"}}})  # fmt: skip
    record_mcp_json_trust(ws, config_dir=cfg)
    write(ws / "team.json", {"mcpServers": {"d": {"command": "team-d"}}, "permissions": {}})
    inputs = {"settings": ["team.json"], "mcp_servers": {"e": {"command": "inputs-e"}, "a": {"command": "inputs-a"}}}  # fmt: skip
    found, warnings = servers_of(ws, cfg, inputs)
    assert found == {
        "a": ["inputs-a"],
        "b": "http://127.0.0.1:1/mcp",  # replaced whole: no `env` left from the user's `b`
        "c": ["mcp-json-c"],
        "d": ["team-d"],
        "e": ["inputs-e"],
    }
    assert warnings == []


def test_untrusted_workspace_servers_are_skipped_and_not_checked(tmp_path: Path) -> None:
    ws, cfg = tmp_path / "ws", tmp_path / "cfg"
    write(ws / ".orkeon" / "settings.json", {"mcpServers": {"s": {"command": ""}}})
    write(ws / ".mcp.json", {"mcpServers": {"m": {"bad": 1}}})
    found, warnings = servers_of(ws, cfg, {})
    assert found == {}
    assert [w.split(": the workspace's")[0] for w in warnings] == [
        str(ws / ".orkeon" / "settings.json"),
        str(ws / ".mcp.json"),
    ]
    assert "were not started (m); trust them as they are now" in warnings[1]
    # Once trusted, they are checked like any file, and their problems named.
    record_trust(ws, config_dir=cfg)
    with pytest.raises(InputError) as caught:
        servers_of(ws, cfg, {})
    assert caught.value.problems == [f"{ws / '.orkeon' / 'settings.json'}: mcpServers.s.command: is empty"]  # fmt: skip


def test_servers_of_two_sources_that_give_one_tool_prefix_are_an_error(tmp_path: Path) -> None:
    ws, cfg = tmp_path / "ws", tmp_path / "cfg"
    write(cfg / "settings.json", {"mcpServers": {"my.db": {"command": "a"}}})
    with pytest.raises(InputError) as caught:
        servers_of(ws, cfg, {"mcp_servers": {"my_db": {"command": "b"}}})
    assert caught.value.problems == [
        "MCP servers: servers 'my.db' and 'my_db' both give tool names mcp__my_db__…; rename one"
    ]


# --- the catalog and stage 2 -----------------------------------------------------------------


def test_a_tool_that_cannot_run_here_is_refused_at_stage_2_before_the_gate_and_hooks(
    workspace: Path,
) -> None:
    echo = declared_tool("mcp__s__echo", "Echo.", {"type": "object", "x-kept": 1}, "m:f")
    down = "[refused: MCP server s is not running: it exited with code 1]"
    catalog = Catalog([echo], [lambda name: down if name.startswith("mcp__s__") else None])
    assert catalog.get("mcp__s__echo") is echo and catalog.get("file_read") is TOOLS["file_read"]
    assert catalog.specs(["mcp__s__echo"])[0].input_schema == {"type": "object", "x-kept": 1}

    refused = check_call(workspace, "mcp__s__never_listed", {}, catalog)
    assert (refused.by, refused.text) == (None, down)  # type: ignore[union-attr]
    checked = check_call(workspace, "mcp__s__echo", {"any": [1]}, Catalog([echo]))
    assert checked.tool is echo and checked.input == {"any": [1]}  # type: ignore[union-attr]
    assert checked.path is None  # type: ignore[union-attr]
    not_object = check_call(workspace, "mcp__s__echo", ["x"], Catalog([echo]))
    assert not_object.text == "error: the input must be a JSON object"  # type: ignore[union-attr]
    unknown = check_call(workspace, "mcp__s__echo", {}, BUILTINS)
    assert unknown.text == "error: there is no tool named 'mcp__s__echo'"  # type: ignore[union-attr]

    class Recording(EventLog):
        def __init__(self) -> None:
            super().__init__(None)
            self.seen: list[dict[str, Any]] = []

        def emit(self, type: str, **fields: Any) -> None:
            self.seen.append({"type": type, **fields})

    events = Recording()
    pipeline = make_pipeline(
        workspace,
        native=[("pre-tool", "false")],  # would refuse every call that reaches the hooks
        gate=Gate(deny=["mcp__s"]),
        events=events,
    )
    ctx = CallContext(step="s", role="r", workspace=workspace, catalog=catalog)
    out = anyio.run(pipeline.call, ctx, "mcp__s__echo", {}, "c1")
    assert (out.outcome, out.refused_by, out.result, out.hooks) == ("refused", None, down, [])
    assert [e["type"] for e in events.seen] == ["tool.start", "tool.call"]


def test_a_catalog_cannot_shadow_a_built_in_name() -> None:
    with pytest.raises(ValueError) as caught:
        Catalog([declared_tool("Bash", "", {}, "m:f")])
    assert str(caught.value) == "tool names taken by built-in tools: Bash"


# --- inputs.json -----------------------------------------------------------------------------


def test_saved_inputs_keep_variable_references_and_redact_the_rest() -> None:
    doc = {
        "model": {"provider": "scripted"},
        "mcp_servers": {
            "db": {
                "command": ["db-server", "--password", "sk-abcdefghijklmnopqrstuv"],
                "env": {"DB_URL": "postgres://u:p@h/db", "TOKEN": "${DB_TOKEN}", "N": 3},
            },
            "web": {
                "url": "https://example.invalid/mcp",
                "headers": {"Authorization": "Bearer ${WEB}", "X-Key": "abc"},
            },
        },
        "request": "r",
    }
    saved = redact_inputs(doc)
    assert list(saved) == ["model", "mcp_servers", "request"]
    db, web = saved["mcp_servers"]["db"], saved["mcp_servers"]["web"]
    assert db["command"] == ["db-server", "--password", REDACTED]
    assert db["env"] == {"DB_URL": REDACTED, "TOKEN": "${DB_TOKEN}", "N": REDACTED}
    assert web["headers"] == {"Authorization": "Bearer ${WEB}", "X-Key": REDACTED}
    assert web["url"] == "https://example.invalid/mcp"
