"""`orkeon hooks list`, `orkeon hooks check` and `orkeon hooks trust` (docs/hooks.md).

The advice "run it once by hand first" (docs/hooks.md), as a command: `check` runs each native
pre-tool and post-tool hook once on a sample call, exactly as the pipeline would (same
replacement, same program rules, same runner, 60 s limit), and shows what the model would
read. Settings-shape PreToolUse and PostToolUse hooks run too, through the same
`SettingsHooks` the pipeline uses, on the same sample call; the tool itself never runs
(their sample result is empty text). `--tool` may name an MCP server's tool
(`mcp__SERVER__TOOL`): no server is started, and its sample input is `{}`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ..calls import CallContext, CheckedCall
from ..catalog import TOOLS, Tool, canonical, declared_tool
from ..config.inputs import load_document, parse_inputs
from ..config.instructions import DEFAULT_FILES, record_instructions_trust
from ..config.trust import (
    checks_dir,
    checks_hash,
    crews_dir,
    mcp_json_path,
    project_settings_path,
    record_checks_trust,
    record_crews_trust,
    record_mcp_json_trust,
    record_plugin_trust,
    record_trust,
    workspace_plugins,
)
from ..errors import InputError
from ..escape import write_line
from ..events import NullLog
from ..hooks.claude.settings import SettingsHooks
from ..hooks.native import HOOK_LIMIT, RUN_EVENTS, HookSpec, ProgramRules, number, run_hook
from ..ledger import Ledger
from ..limits import BudgetLimits
from ..policy.mcpnames import is_mcp_name
from ..run.prepare import prepare, stdin_tty
from ..units import duration
from .mcp import role_lines

if TYPE_CHECKING:
    from ..calls import HookRun
    from ..config.inputs import MatcherGroup

INDENT = "   "
READS = f"{INDENT}the model would read: "
SAMPLE_ROLE = "hooks-check"


def list_lines(native_hooks: Sequence[HookSpec]) -> list[str]:
    """One line per native hook, `#N EVENT COMMAND`, numbered as the model sees them."""
    return [f"#{h.n} {h.event} {h.command}" for h in number(native_hooks)]


def settings_lines(config: Mapping[str, Sequence[MatcherGroup]] | None) -> list[str]:
    """One line per settings-shape hook, `EVENT [MATCHER] COMMAND`, in configuration order
    (`[*]` for a group without a matcher; ` (timeout N s)` when one is set, ` (async)`,
    ` (once)`, and ` (plugin NAME: ROOT)` for a plugin's hook). A hook that is not a
    command is named by its label: `POST URL` (http) or `prompt: FIRST LINE`."""
    out = []
    for event, groups in (config or {}).items():
        for group in groups:
            matcher = group.matcher if group.matcher else "*"
            for h in group.hooks:
                notes = f" (timeout {h.timeout:g} s)" if h.timeout is not None else ""
                if getattr(h, "background", False):
                    notes += " (async)"
                if h.once:
                    notes += " (once)"
                if h.plugin is not None:
                    notes += f" (plugin {h.plugin.name}: {h.plugin.root})"
                out.append(f"{event} [{matcher}] {h.label}{notes}")
    return out


def _run_line(head: str, run: HookRun, timed_out: str = "ran out of time") -> str:
    if run.timed_out:
        status = timed_out
    elif run.exit_code is None:
        status = "could not run"
    else:
        status = f"exit {run.exit_code}"
    return f"{head} -> {status} ({duration(run.seconds)})"


async def check(
    native_hooks: Sequence[HookSpec],
    *,
    workspace: Path,
    shell_rules: ProgramRules,
    tool: str = "file_read",
    path: str | None = "README.md",
    env: Mapping[str, str] | None = None,
    settings_config: Mapping[str, list[MatcherGroup]] | None = None,
) -> tuple[list[str], int]:
    """Run each hook once on a sample call of `tool` (an orkeon name or a Claude Code
    alias) with path `path`. Returns the lines to print and the exit code: 0 when every hook
    that ran exited 0, else 1. Raises ValueError for an unknown tool.

    Native hooks, in order, each on its own (a failing pre-tool hook does not keep the next
    one from running here): `#N EVENT COMMAND -> exit CODE (SECONDS s)`, COMMAND after
    replacement, as it ran (`ran longer than 60 s` or `could not run` in place of
    `exit CODE`), then the line the model would read. Stop hooks are listed, not run.
    Settings-shape hooks: one line per hook that ran, then what the model would read.
    `env` is the native hooks' environment (the shell tool's; None: orkeon's own).
    """
    entry = sample_tool(tool)
    if entry is None:
        raise ValueError(f"unknown tool {tool!r}")
    name = entry.name
    if entry.path_field is None:
        # A call of a tool with no path argument (shell) has none, so `{path}` reads `-`
        # there (docs/hooks.md); the sample must not show a path the real call never has.
        path = None
    lines: list[str] = []
    code = 0
    for hook in number(native_hooks):
        if hook.event not in RUN_EVENTS:
            lines.append(
                f"#{hook.n} {hook.event} {hook.command} -> not run (stop hooks are stored, not run)"
            )
            continue
        nr = await run_hook(
            hook,
            tool=name,
            path=path,
            workspace=workspace,
            program_rules=shell_rules,
            limit=HOOK_LIMIT,
            env=env,
        )
        run = nr.run
        head = f"#{hook.n} {hook.event} {run.command}"
        lines.append(_run_line(head, run, f"ran longer than {HOOK_LIMIT:g} s"))
        if nr.line is not None:
            code = 1
            lines.append(READS + nr.line)
        elif hook.event == "pre-tool":
            lines.append(READS + "nothing from this hook; the call runs")
        else:
            lines.append(READS + "the result, unchanged by this hook")
    if settings_config:
        more, failed = await _check_settings(settings_config, workspace, entry, path)
        lines += more
        code = 1 if failed else code
    return lines, code


def sample_tool(tool: str) -> Tool | None:
    """The catalog entry of `tool` (an orkeon name or a Claude Code alias), or for an MCP
    tool's name (`mcp__SERVER__TOOL`) the entry a run would declare for it; None: unknown."""
    if is_mcp_name(tool):
        return declared_tool(tool, "", {"type": "object"}, run="")
    name = canonical(tool)
    return TOOLS[name] if name is not None else None


async def _check_settings(
    config: Mapping[str, list[MatcherGroup]],
    workspace: Path,
    entry: Tool,
    path: str | None,
) -> tuple[list[str], bool]:
    hooks = SettingsHooks(dict(config), workspace=workspace, events=NullLog())
    ctx = CallContext(step=SAMPLE_ROLE, role=SAMPLE_ROLE, workspace=workspace)
    ledger = Ledger(BudgetLimits(seconds=None))
    field = entry.path_field
    input: dict[str, Any] = {field: path} if field and path else {}
    # A sample, not a call the model made: its input is shown to the hooks as it is.
    call = CheckedCall(entry, input, entry.input.model_construct(**input), path)
    lines: list[str] = []
    failed = False

    def show(runs: list[HookRun], reads: list[str], quiet: str) -> None:
        nonlocal failed
        for run in runs:
            lines.append(_run_line(f"{run.event} {run.command}", run))
            failed = failed or run.exit_code != 0
        if runs:
            lines.extend(READS + r for r in reads or [quiet])

    pre = await hooks.pre_tool(ctx, call, "hooks-check", ledger)
    reads = pre.refusal.text.split("\n") if pre.refusal else pre.context_lines
    if pre.stop:
        reads = [*reads, f"(continue: false: the role would stop: {pre.stop_reason})"]
    if pre.updated_input is not None:
        reads = [*reads, f"(the input would become {pre.updated_input})"]
    show(pre.runs, reads, "nothing from these hooks; the call runs")
    post = await hooks.post_tool(ctx, call, "", "hooks-check", ledger, pre)
    reads = list(post.lines)
    if post.stop:
        reads.append(f"(continue: false: the role would stop: {post.stop_reason})")
    show(post.runs, reads, "the result, unchanged by these hooks")
    return lines, failed


# --- the commands ------------------------------------------------------------------------


def _config(inputs: str, workspace: str | None) -> Any:
    config = prepare(
        load_document(inputs), step=None, workspace=workspace, stdin_is_tty=stdin_tty()
    )
    for line in config.warnings:
        write_line(sys.stderr, f"warning: {line}")
    return config


def list_main(inputs: str, *, workspace: str | None = None) -> int:
    """The hooks, numbered and in order, then the MCP tools each crew role gets."""
    config = _config(inputs, workspace)
    if config.sources is not None:
        config.sources.release()  # ORKEON_BARE=1: the plugins' data folder, unused here
    lines = list_lines(config.inputs.native_hooks) + settings_lines(config.settings_hooks)
    if config.mcp_servers:
        lines += role_lines(config)
    for line in lines:
        write_line(sys.stdout, line)
    return 0


def check_main(inputs: str, *, tool: str, path: str, workspace: str | None = None) -> int:
    if sample_tool(tool) is None:
        raise InputError(
            f"--tool: unknown tool {tool!r} (one of: {', '.join(TOOLS)}, or mcp__SERVER__TOOL)"
        )
    config = _config(inputs, workspace)
    try:
        lines, code = anyio.run(
            lambda: check(
                config.inputs.native_hooks,
                workspace=config.workspace,
                shell_rules=config.shell_rules,
                tool=tool,
                path=path,
                settings_config=config.settings_hooks,
            )
        )
    finally:
        if config.sources is not None:
            config.sources.release()  # ORKEON_BARE=1: the plugins' data folder
    for line in lines:
        write_line(sys.stdout, line)
    return code


def trust_main(workspace: str | None = None, inputs: str | None = None) -> int:
    """Trust the workspace's .orkeon/settings.json, .orkeon/crews/, .orkeon/checks/,
    .mcp.json, plugin folders (config/trust.py's `workspace_plugins`) and instruction files
    (config/instructions.py: each folder's, by the names `inputs`' `instructions.files`
    gives, default AGENTS.md and CLAUDE.md; its `workspace` when `workspace` is None) as
    they are now."""
    names: Sequence[str] = DEFAULT_FILES
    if inputs is not None:
        parsed = parse_inputs(load_document(inputs))
        names, workspace = parsed.instructions.files, workspace or parsed.workspace
    # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user (an
    # internal error, exit 1); the shell's way is to keep the text as it is.
    ws = Path(os.path.expanduser(workspace or "."))
    if not ws.is_dir():
        raise InputError(f"--workspace: not a directory: {ws}")
    ws = ws.resolve()
    trusted = []
    if project_settings_path(ws).is_file():
        trusted.append((project_settings_path(ws), record_trust(ws)))
    if crews_dir(ws).is_dir():
        trusted.append((crews_dir(ws), record_crews_trust(ws)))
    if checks_hash(ws) is not None:
        trusted.append((checks_dir(ws), record_checks_trust(ws)))
    if mcp_json_path(ws).is_file():
        trusted.append((mcp_json_path(ws), record_mcp_json_trust(ws)))
    for plugin in workspace_plugins(ws):
        trusted.append((plugin, record_plugin_trust(ws, plugin)))
    trusted += record_instructions_trust(ws, names)
    if not trusted:
        raise InputError(
            f"--workspace: nothing to trust in {ws} (no .orkeon/settings.json, no "
            ".orkeon/crews/, no .orkeon/checks/*.md, no .mcp.json, no plugin folder, no "
            f"instruction file: {', '.join(names)})"
        )
    for path, digest in trusted:
        write_line(sys.stdout, f"trusted {path} ({digest.removeprefix('sha256:')[:12]})")
    return 0
