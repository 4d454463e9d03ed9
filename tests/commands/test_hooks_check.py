"""`orkeon hooks list` / `orkeon hooks check` (docs/hooks.md): the hooks contract's "run it
once by hand first (node .orkeon/hooks/pre.mjs file_read README.md)"."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from orkeon_run.commands.hooks import check, list_lines, settings_lines
from orkeon_run.config.inputs import MatcherGroup, NativeHook, SettingsCommand
from orkeon_run.policy.programs import ShellRules

pytestmark = pytest.mark.anyio

HookCmd = Callable[..., str]


def hooks(*pairs: tuple[str, str]) -> list[NativeHook]:
    return [NativeHook(event=e, command=c) for e, c in pairs]  # type: ignore[arg-type]


def test_list_numbers_hooks_as_the_model_sees_them() -> None:
    """docs/hooks.md: "`orkeon hooks list` prints one line per hook, `#N EVENT COMMAND`"."""
    got = list_lines(
        hooks(
            ("pre-tool", "node .orkeon/hooks/pre.mjs {tool} {path}"),
            ("stop", "true"),
            ("post-tool", "node .orkeon/hooks/post.mjs {tool} {path}"),
        )
    )
    assert got == [
        "#1 pre-tool node .orkeon/hooks/pre.mjs {tool} {path}",
        "#2 stop true",
        "#3 post-tool node .orkeon/hooks/post.mjs {tool} {path}",
    ]


async def test_check_runs_each_hook_once_and_shows_what_the_model_reads(
    workspace: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """docs/hooks.md: "`orkeon hooks check` runs each pre-tool and post-tool hook once on a
    sample call (default `--tool file_read --path README.md`), prints `#N EVENT COMMAND -> exit CODE
    (SECONDS s)` and what the model would read, and exits 0 when every hook exited 0,
    else 1"."""
    log, deny = hook_cmd("log_call.sh", "{event}", "{tool}", "{path}"), hook_cmd("deny.sh")
    lines, code = await check(
        hooks(("pre-tool", log), ("pre-tool", deny), ("stop", log), ("post-tool", log)),
        workspace=workspace,
        shell_rules=hook_rules,
    )
    assert code == 1
    ran = log.replace("{event}", "{e}").replace("{tool}", "file_read")
    ran = ran.replace("{path}", "README.md")
    pattern = [
        rf"#1 pre-tool {re.escape(ran.format(e='pre-tool'))} -> exit 0 \(\d+\.\d\d s\)",
        r"   the model would read: nothing from this hook; the call runs",
        rf"#2 pre-tool {re.escape(deny)} -> exit 2 \(\d+\.\d\d s\)",
        rf"   the model would read: \[pre-tool hook #2 \({re.escape(deny)}\) exited 2: "
        r"generated/ is rebuilt, not edited\]",
        rf"#3 stop {re.escape(log)} -> not run \(stop hooks are stored, not run\)",
        rf"#4 post-tool {re.escape(ran.format(e='post-tool'))} -> exit 0 \(\d+\.\d\d s\)",
        r"   the model would read: the result, unchanged by this hook",
    ]
    assert len(lines) == len(pattern)
    for line, pat in zip(lines, pattern, strict=True):
        assert re.fullmatch(pat, line), (line, pat)
    # Every hook ran once, even after one failed (unlike a real call), the stop hook never.
    assert (workspace / "calls.log").read_text().splitlines() == [
        "pre-tool file_read README.md",
        "post-tool file_read README.md",
    ]


async def test_check_exits_0_when_every_hook_exits_0(
    workspace: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    lines, code = await check(
        hooks(("pre-tool", hook_cmd("allow.sh")), ("post-tool", "true {tool} {path}")),
        workspace=workspace,
        shell_rules=hook_rules,
        tool="Write",
        path="src/x.ts",
    )
    assert code == 0
    assert re.fullmatch(r"#2 post-tool true file_write src/x\.ts -> exit 0 \(\d+\.\d\d s\)",
                        lines[2])  # fmt: skip


async def test_check_shows_a_hook_that_cannot_run(workspace: Path) -> None:
    """The hooks contract (docs/hooks.md): "A hook that cannot run refuses every call of the
    step: run it once by hand first"."""
    lines, code = await check(
        hooks(("pre-tool", "node .orkeon/hooks/pre.mjs {tool} {path}")),
        workspace=workspace,
        shell_rules=ShellRules(),
    )
    assert code == 1
    assert lines[0].startswith(
        "#1 pre-tool node .orkeon/hooks/pre.mjs file_read README.md -> could not run ("
    )
    assert lines[1].startswith(
        "   the model would read: [pre-tool hook #1 (node .orkeon/hooks/pre.mjs file_read "
        "README.md) could not run: program 'node' is an interpreter"
    )


async def test_check_refuses_an_unknown_tool(workspace: Path) -> None:
    with pytest.raises(ValueError, match="unknown tool 'nope'"):
        await check([], workspace=workspace, shell_rules=ShellRules(), tool="nope")


def settings(**events: list[tuple[str | None, str]]) -> dict[str, list[MatcherGroup]]:
    return {
        event: [
            MatcherGroup(matcher=m, hooks=[SettingsCommand(type="command", command=c)])
            for m, c in groups
        ]
        for event, groups in events.items()
    }


def test_list_shows_settings_shape_hooks_in_configuration_order() -> None:
    config = settings(PreToolUse=[("Write|Edit", "./protect.sh"), (None, "true")])
    config["PostToolUse"] = [
        MatcherGroup(hooks=[SettingsCommand(type="command", command="lint", timeout=5)])
    ]
    assert settings_lines(config) == [
        "PreToolUse [Write|Edit] ./protect.sh",
        "PreToolUse [*] true",
        "PostToolUse [*] lint (timeout 5 s)",
    ]
    assert settings_lines({}) == []


async def test_check_runs_settings_shape_tool_hooks_on_the_sample_call(workspace: Path) -> None:
    block = "echo \"no $(cat | tr -d '\\n' | wc -c) bytes\" >&2; exit 2"
    config = settings(
        PreToolUse=[("Read", block), ("Write", "touch never")],
        PostToolUse=[(None, "exit 0")],
    )
    lines, code = await check(
        [], workspace=workspace, shell_rules=ShellRules(), settings_config=config
    )
    assert code == 1
    assert len(lines) == 4
    assert re.fullmatch(rf"PreToolUse {re.escape(block)} -> exit 2 \(\d+\.\d\d s\)", lines[0])
    assert re.fullmatch(
        rf"   the model would read: \[PreToolUse hook \({re.escape(block)}\) blocked the call: "
        r"no \d+ bytes\]",
        lines[1],
    )
    assert re.fullmatch(r"PostToolUse exit 0 -> exit 0 \(\d+\.\d\d s\)", lines[2])
    assert lines[3] == "   the model would read: the result, unchanged by these hooks"
    assert not (workspace / "never").exists()  # its matcher is Write: not this call


async def test_check_gives_a_shell_sample_call_no_path(
    workspace: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """docs/hooks.md: "`{path}` is the call's path argument ...; `-` otherwise, or when the
    call has none": a shell call has none, so the sample call must not show `--path`."""
    log = hook_cmd("log_call.sh", "{event}", "{tool}", "{path}")
    lines, code = await check(
        hooks(("pre-tool", log)), workspace=workspace, shell_rules=hook_rules, tool="Bash"
    )
    assert code == 0, lines
    assert (workspace / "calls.log").read_text().splitlines() == ["pre-tool shell -"]


async def test_check_takes_an_mcp_tool_name_with_no_path_and_its_matchers(
    workspace: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """docs/tools.md: an MCP tool is named `mcp__SERVER__TOOL` in rules, matchers and hook
    payloads. The sample call of one has no path and no server is started: native hooks
    get the name as `{tool}`, settings-shape hooks matching `mcp__.*` see it as
    `tool_name`, and one matching `Read` does not run."""
    log = hook_cmd("log_call.sh", "{event}", "{tool}", "{path}")
    name = "mcp__git__git_status"
    seen = (
        "python3 -c \"import json,sys; print(json.load(sys.stdin)['tool_name'], file=sys.stderr)\""
        "; exit 2"
    )
    config = settings(PreToolUse=[("mcp__.*", seen), ("Read", "touch never")])
    lines, code = await check(
        hooks(("pre-tool", log)),
        workspace=workspace,
        shell_rules=hook_rules,
        tool=name,
        path="README.md",
        settings_config=config,
    )
    assert code == 1, lines
    assert (workspace / "calls.log").read_text().splitlines() == [f"pre-tool {name} -"]
    assert f"blocked the call: {name}]" in lines[-1]
    assert not (workspace / "never").exists()


def test_the_command_names_mcp_tools_among_those_it_takes(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from orkeon_run.__main__ import main

    doc = '{"model": {"provider": "scripted", "script": {}}}'
    code = main(
        ["hooks", "check", "--inputs", doc, "--tool", "nope", "--workspace", str(workspace)]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("orkeon: --tool: unknown tool 'nope' (one of: file_read, ")
    assert err.rstrip().endswith(", or mcp__SERVER__TOOL)")
    code = main(["hooks", "check", "--inputs", doc, "--tool", "mcp__git__git_status",
                 "--workspace", str(workspace)])  # fmt: skip
    assert code == 0, capsys.readouterr()
