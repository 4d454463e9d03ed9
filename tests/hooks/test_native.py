"""Native hooks (the native hooks contract, docs/hooks.md), run for real: every hook
here is an executable script in tests/data/hooks/ or a program of the base list."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orkeon_run.config.inputs import NativeHook as InputHook
from orkeon_run.hooks import native
from orkeon_run.hooks.native import NativeHook, argv_for, expand, number, path_word, run_hook
from orkeon_run.policy.programs import ShellRules
from orkeon_run.policy.words import CommandRefused, split_command

pytestmark = pytest.mark.anyio

HookCmd = Callable[..., str]


async def run(
    command: str,
    workspace: Path,
    rules: ShellRules,
    *,
    event: str = "pre-tool",
    tool: str = "file_write",
    path: object = "src/x.ts",
    limit: float = native.HOOK_LIMIT,
) -> native.NativeRun:
    hook = NativeHook(1, event, command)
    return await run_hook(
        hook, tool=tool, path=path, workspace=workspace, program_rules=rules, limit=limit
    )


# --- numbering and replacement ---------------------------------------------------------


def test_numbered_from_one_across_all_events() -> None:
    """docs/hooks.md: "Numbered from 1 in the order given, across all events"."""
    hooks = number(
        [
            InputHook(event="post-tool", command="true"),
            InputHook(event="stop", command="true"),
            InputHook(event="pre-tool", command="false"),
        ]
    )
    assert [(h.n, h.event) for h in hooks] == [(1, "post-tool"), (2, "stop"), (3, "pre-tool")]


@pytest.mark.parametrize(
    ("path", "word"),
    [
        ("src/x.ts", "src/x.ts"),
        ("a_b-c.d/@e+f=g,h:i", "a_b-c.d/@e+f=g,h:i"),
        ("/workspace/generated/x.ts", "/workspace/generated/x.ts"),
        ("café.md", "café.md"),
        ("-rf", "-"),
        ("has space", "-"),
        ("semi;colon", "-"),
        ("$HOME/x", "-"),
        ("a*b", "-"),
        ("quote'x", "-"),
        ("", "-"),
        (None, "-"),
        (3, "-"),
    ],
)
def test_path_word_character_rule(path: object, word: str) -> None:
    """The hooks contract (docs/hooks.md): "{path} the call's path argument, as the model
    wrote it, when it holds only letters, digits and ._/@+=,:- and does not start with -; -
    otherwise or without one"."""
    assert path_word(path) == word


def test_three_words_are_replaced_once() -> None:
    """The hooks contract (docs/hooks.md): "Three words are replaced in the command before
    it runs" ({tool}, {event}, {path})."""
    got = expand("node h.mjs {tool} {event} {path} {other}", tool="file_write",
                 event="pre-tool", path="src/{tool}")  # fmt: skip
    # `src/{tool}` holds braces, so {path} becomes `-`; {other} is not a word.
    assert got == "node h.mjs file_write pre-tool - {other}"
    assert expand("x {path}", tool="t", event="e", path="a/b.py") == "x a/b.py"


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from(["{tool}", "{path}", "{event}", " ", "'", '"', "\\", "a", "{", "}",
                         "x{path}y", "$", ";", "-"]),
        max_size=12,
    ),
    path=st.text(alphabet="ab/._-' \"\\{}$;", max_size=8),
)  # fmt: skip
def test_argv_for_is_splitting_the_replaced_command(parts: list[str], path: str) -> None:
    """Splitting once and replacing in each argument gives what splitting the replaced
    command gives (or both refuse)."""
    command = "".join(parts)
    try:
        want: list[str] | None = split_command(expand(command, tool="t", event="e", path=path))
    except CommandRefused:
        want = None
    try:
        got: list[str] | None = argv_for(command, tool="t", event="e", path=path)
    except CommandRefused:
        got = None
    assert got == want


# --- how a hook runs -------------------------------------------------------------------


async def test_a_hook_that_exits_0_allows(workspace: Path, hook_rules: ShellRules,
                                          hook_cmd: HookCmd) -> None:  # fmt: skip
    r = await run(hook_cmd("allow.sh"), workspace, hook_rules)
    assert r.ok and r.line is None
    assert r.run.exit_code == 0 and not r.run.timed_out


async def test_refusal_reads_number_command_code_and_stderr_first(
    workspace: Path, hook_rules: ShellRules, hook_cmd: HookCmd
) -> None:
    """The hooks contract (docs/hooks.md): "the model reads the hook's number, its command,
    its exit code and the first line it printed (its error output first)"."""
    cmd = hook_cmd("deny.sh", "{tool}", "{path}")
    r = await run(cmd, workspace, hook_rules, path="src/x.ts")
    expanded = cmd.replace("{tool}", "file_write").replace("{path}", "src/x.ts")
    assert r.line == f"[pre-tool hook #1 ({expanded}) exited 2: generated/ is rebuilt, not edited]"
    assert r.run.command == expanded and r.run.exit_code == 2


async def test_stdout_line_when_there_is_no_error_output(
    workspace: Path, hook_rules: ShellRules, hook_cmd: HookCmd
) -> None:
    cmd = hook_cmd("stdout_only.sh", "{path}")
    r = await run(cmd, workspace, hook_rules, event="post-tool", path="src/x.ts")
    assert r.line == (
        f"[post-tool hook #1 ({cmd.replace('{path}', 'src/x.ts')}) exited 1: "
        "lint: 3 problems in src/x.ts]"
    )


async def test_a_hook_that_prints_nothing(workspace: Path) -> None:
    r = await run("false", workspace, ShellRules())
    assert r.line == "[pre-tool hook #1 (false) exited 1: (no output)]"


async def test_runs_in_the_workspace_without_variable_expansion(
    workspace: Path, hook_rules: ShellRules, hook_cmd: HookCmd
) -> None:
    """The hooks contract (docs/hooks.md): "Orkeon Code runs a hook ... in /workspace" and
    "no variable is expanded"."""
    cmd = hook_cmd("log_call.sh", "{event}", "{tool}", "{path}", "$HOME", "'a b'")
    r = await run(cmd, workspace, hook_rules, tool="file_read", path="README.md")
    assert r.ok
    assert (workspace / "calls.log").read_text() == "pre-tool file_read README.md $HOME a b\n"


async def test_stdin_is_dev_null(workspace: Path, hook_rules: ShellRules,
                                 hook_cmd: HookCmd) -> None:  # fmt: skip
    """docs/hooks.md: "stdin is /dev/null"."""
    r = await run(hook_cmd("read_stdin.sh"), workspace, hook_rules)
    assert r.ok, r.line


@pytest.mark.parametrize("op", [";", "&&", "||", "|", "&", "<", ">", ">>", "$(", "`"])
async def test_shell_operators_refused_again_at_run_time(workspace: Path, op: str) -> None:
    """The hooks contract (docs/hooks.md): ";, &&, ||, |, &, <, >, >>, $( and backticks are
    refused, by the tool and by /hooks add" — a hook that slipped past the inputs check
    cannot run."""
    r = await run(f"echo a {op} touch pwned", workspace, ShellRules())
    assert r.line is not None
    assert r.line.startswith(f"[pre-tool hook #1 (echo a {op} touch pwned) could not run: ")
    assert "is refused" in r.line
    assert not (workspace / "pwned").exists()


async def test_program_must_be_one_the_shell_tool_runs(workspace: Path) -> None:
    """The hooks contract (docs/hooks.md): "The program must be one the shell tool runs:
    node, npm, dotnet and find under Orkeon:Tools:Shell:AllowInterpreters ... and any other
    under ...ExtraAllowedCommands"."""
    r = await run("node .orkeon/hooks/pre.mjs {tool} {path}", workspace, ShellRules())
    assert r.line is not None
    assert r.line.startswith(
        "[pre-tool hook #1 (node .orkeon/hooks/pre.mjs file_write src/x.ts) could not run: "
    )
    assert "allow_interpreters" in r.line
    r = await run("curl http://127.0.0.1:9", workspace, ShellRules())
    assert r.line is not None and "could not run: program 'curl' is not allowed" in r.line
    # Allowed through extra_allowed_commands, the same program runs.
    r = await run("sh -c 'exit 0'", workspace, ShellRules(extra_allowed_commands=("sh",)))
    assert r.ok


async def test_a_script_by_path_must_be_listed_by_that_path(
    workspace: Path, hook_cmd: HookCmd
) -> None:
    r = await run(hook_cmd("allow.sh"), workspace, ShellRules(extra_allowed_commands=("bash",)))
    assert r.line is not None and "is given by path" in r.line


async def test_a_missing_program_could_not_run(workspace: Path) -> None:
    """The hooks contract (docs/hooks.md): "A hook that cannot run refuses every call of the
    step": a missing program is a `could not run` line, never an exception."""
    rules = ShellRules(extra_allowed_commands=("no-such-program-xyz",))
    r = await run("no-such-program-xyz {path}", workspace, rules)
    assert r.line == (
        "[pre-tool hook #1 (no-such-program-xyz src/x.ts) could not run: "
        "no such program: no-such-program-xyz]"
    )
    assert r.run.exit_code is None


async def test_past_the_limit_is_killed_and_named(
    workspace: Path, hook_rules: ShellRules, hook_cmd: HookCmd
) -> None:
    """The hooks contract (docs/hooks.md): "runs longer than 60 seconds": the limit's text
    is `ran longer than 60 s`; a limit the budget cut shorter names that limit."""
    assert native._limit_text(native.HOOK_LIMIT) == "60"
    # Not killed, the hook would have ended by itself after 60 s, exit 0, not timed out.
    r = await run(hook_cmd("sleep.sh", "60"), workspace, hook_rules, limit=0.3)
    assert r.run.timed_out and r.run.exit_code is None
    assert r.line == f"[pre-tool hook #1 ({hook_cmd('sleep.sh', '60')}) ran longer than 0.3 s]"


# Hang guard (quiet: 2.2 s, so 9x): the hook ignores SIGTERM and never ends by itself, so
# returning at all means SIGKILL came; the lower bound is the 2 s grace.
@pytest.mark.timeout(20)
async def test_a_hook_that_ignores_sigterm_is_killed(
    workspace: Path, hook_rules: ShellRules, hook_cmd: HookCmd
) -> None:
    started = time.monotonic()
    r = await run(hook_cmd("ignore_term.sh"), workspace, hook_rules, limit=0.2)
    took = time.monotonic() - started
    assert r.run.timed_out
    assert took >= 2.2  # 0.2 s, then SIGTERM, then SIGKILL 2 s later
    assert r.line is not None and r.line.endswith("ran longer than 0.2 s]")


# Hang guard (quiet: 0.1 s): the child holds the pipes 60 s, past it, so returning at all
# means orkeon stopped reading when the hook exited.
@pytest.mark.timeout(20)
async def test_a_child_that_holds_the_pipe_does_not_hang_orkeon(
    workspace: Path, hook_rules: ShellRules, hook_cmd: HookCmd
) -> None:
    r = await run(hook_cmd("fork_child.sh"), workspace, hook_rules)
    assert r.ok and r.run.first_line == "left a child behind"


# Hang guard only (quiet: 0.5 s): the verdict is the capped line.
@pytest.mark.timeout(30)
async def test_fifty_megabytes_of_output_are_capped(
    workspace: Path, hook_rules: ShellRules, hook_cmd: HookCmd
) -> None:
    r = await run(hook_cmd("print_50mb.sh"), workspace, hook_rules, event="post-tool")
    assert r.line == (
        f"[post-tool hook #1 ({hook_cmd('print_50mb.sh')}) exited 1: fifty megabytes of output]"
    )


async def test_stop_hooks_are_never_run(workspace: Path) -> None:
    """The hooks contract (docs/hooks.md): "nothing runs a stop hook: /hooks stores them for
    later" — `run_hook` refuses to."""
    with pytest.raises(ValueError, match="stop hooks are stored, not run"):
        await run("true", workspace, ShellRules(), event="stop")


async def test_a_very_long_line_is_cut(
    workspace: Path, hook_rules: ShellRules, hook_cmd: HookCmd
) -> None:
    r = await run(hook_cmd("long_line.sh"), workspace, hook_rules)
    assert r.line == f"[pre-tool hook #1 ({hook_cmd('long_line.sh')}) exited 1: {'x' * 999}…]"
