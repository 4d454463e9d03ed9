"""Hook scripts written for Claude Code run unchanged (issue 4: 'a set of scripts written for
Claude Code (reading `.tool_input.file_path` and `.tool_input.command` with jq or python)
run unchanged').

The scripts in `tests/data/cc_hooks/claude/` are copied into the workspace's
`.claude/hooks/` and named from a `.claude/settings.json` the way Claude Code users write it
(`"$CLAUDE_PROJECT_DIR"/.claude/hooks/…`, `python3 …`), which orkeon reads through the
`settings` input. Only PATH is touched: `python3` there is this interpreter, so the suite
does not pay for a version manager's shim on every hook.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit import DATA
from kit.pipeline import refusal_lines, sample_call

from orkeon_run.calls import CallContext
from orkeon_run.config.inputs import parse_inputs
from orkeon_run.events import NullLog
from orkeon_run.hooks import PreToolVerdict
from orkeon_run.hooks.claude.settings import SettingsHooks, load_settings_hooks
from orkeon_run.ledger import Ledger
from orkeon_run.limits import BudgetLimits

SCRIPTS = DATA / "cc_hooks" / "claude"

pytestmark = pytest.mark.skipif(shutil.which("jq") is None, reason="the scripts use jq")


def hook(name: str) -> dict[str, str]:
    prefix = "python3 " if name.endswith(".py") else ""
    return {"type": "command", "command": f'{prefix}"$CLAUDE_PROJECT_DIR"/.claude/hooks/{name}'}


CLAUDE_SETTINGS = {
    "permissions": {"allow": ["Bash", "Write", "Edit", "Read"]},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    hook("block_rm_rf.sh"),
                    hook("bash_command_validator.py"),
                    hook("log_bash.sh"),
                    hook("rewrite_ls.sh"),
                ],
            },
            {
                "matcher": "Edit|MultiEdit|Write",
                "hooks": [hook("protect_files.sh"), hook("deny_secrets.py")],
            },
            {"matcher": "Read", "hooks": [hook("read_context.py")]},
        ],
        "PostToolUse": [
            {"matcher": "Write|Edit|MultiEdit", "hooks": [hook("strip_trailing_ws.sh")]},
            {"matcher": "Bash", "hooks": [hook("bash_stderr_feedback.py")]},
        ],
        "UserPromptSubmit": [{"hooks": [hook("no_secrets_prompt.sh")]}],
        "SessionStart": [{"matcher": "startup", "hooks": [hook("session_context.sh")]}],
        "Stop": [{"hooks": [hook("tests_must_pass.sh")]}],
        "Notification": [{"hooks": [hook("notify.sh")]}],
    },
}


class Claude:
    def __init__(self, ws: Path) -> None:
        self.ws = ws
        shutil.copytree(SCRIPTS, ws / ".claude" / "hooks")
        (ws / ".claude" / "settings.json").write_text(json.dumps(CLAUDE_SETTINGS, indent=2))
        warnings: list[str] = []
        config = load_settings_hooks(
            parse_inputs({"settings": [".claude/settings.json"]}),
            workspace=ws,
            config_dir=ws / "no-user-config",
            environ={},
            stdin_is_tty=False,
            warn=warnings.append,
        )
        # Claude Code's `permissions` block is not orkeon's to honour, and it says so.
        settings = ws / ".claude" / "settings.json"
        assert warnings == [
            f"{settings}: permissions: ignored: orkeon's gate rules are the inputs' `gate` "
            "(docs/inputs.md)"
        ]
        self.hooks = SettingsHooks(config, workspace=ws, events=NullLog())
        self.ledger = Ledger(BudgetLimits())
        self.ctx = CallContext(step="dev-batches", role="b1/api", workspace=ws, session_id="s1")

    def pre(self, tool: str, **input: Any):
        call = sample_call(self.ctx.workspace, tool, input)
        return anyio.run(self.hooks.pre_tool, self.ctx, call, "c1", self.ledger)

    def post(self, tool: str, result: Any, **input: Any):
        call = sample_call(self.ctx.workspace, tool, input)
        return anyio.run(
            self.hooks.post_tool, self.ctx, call, result, "c1", self.ledger, PreToolVerdict()
        )

    def cmd(self, name: str) -> str:
        return hook(name)["command"]


@pytest.fixture
def claude(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Claude:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return Claude(workspace)


def test_rm_rf_guard_blocks_with_its_stderr(claude: Claude) -> None:
    v = claude.pre("shell", command="rm -rf /")
    assert refusal_lines(v) == [
        f"[PreToolUse hook ({claude.cmd('block_rm_rf.sh')}) blocked the call: "
        "Refusing to run a destructive command: rm -rf /]"
    ]
    assert refusal_lines(claude.pre("shell", command="rm -rf ./build")) == []


def test_official_bash_validator_sees_tool_name_bash(claude: Claude) -> None:
    """The Claude Code example exits 0 unless `tool_name == "Bash"`: orkeon sends Claude
    Code's tool name, so the guard is not skipped."""
    v = claude.pre("shell", command="grep -r TODO src")
    assert refusal_lines(v) == [
        f"[PreToolUse hook ({claude.cmd('bash_command_validator.py')}) blocked the call: "
        "• Use 'rg' (ripgrep) instead of 'grep' for better performance and features]"
    ]
    assert refusal_lines(claude.pre("shell", command="git status")) == []


def test_command_log_and_rewrite(claude: Claude) -> None:
    v = claude.pre("shell", command="ls")
    assert refusal_lines(v) == [] and v.updated_input == {"command": "ls -la"}
    claude.pre("shell", command="git status", description="show the tree")
    log = (claude.ws / ".claude" / "bash-command-log.txt").read_text()
    assert log == "ls - No description\ngit status - show the tree\n"


def test_protected_files(claude: Claude) -> None:
    """The scripts read `tool_input.file_path` absolute, as Claude Code gives it."""
    v = claude.pre("file_write", file_path=".env", content="X=1")
    assert refusal_lines(v) == [
        f"[PreToolUse hook ({claude.cmd('protect_files.sh')}) blocked the call: "
        f"Blocked: {claude.ws}/.env matches protected pattern '.env']"
    ]
    v = claude.pre("file_edit", file_path="config/secrets/key.txt", old_string="a", new_string="b")
    assert refusal_lines(v) == [
        f"[PreToolUse hook ({claude.cmd('deny_secrets.py')}) denied the call: "
        f"{claude.ws}/config/secrets/key.txt is under secrets/; edit it by hand]"
    ]
    assert refusal_lines(claude.pre("file_write", file_path="src/app.py", content="x")) == []


def test_read_context(claude: Claude) -> None:
    v = claude.pre("file_read", file_path="generated/api.py")
    assert refusal_lines(v) == []
    assert v.context_lines == [
        f"<hook_context>{claude.ws}/generated/api.py is generated; change its source "
        "instead.</hook_context>"
    ]
    assert claude.pre("file_read", file_path="src/api.py").context_lines == []


def test_formatter_after_write(claude: Claude) -> None:
    """The formatter strips the blanks the tool left: the model is told the file changed,
    with its lines as they are now (rewrites.py)."""
    (claude.ws / "src").mkdir()
    target = claude.ws / "src" / "app.py"
    target.write_text("x = 1   \ny = 2\t\n")
    v = claude.post("file_write", "wrote src/app.py", file_path="src/app.py", content="…")
    [note] = v.lines
    assert note.startswith("Note: src/app.py changed on disk since you last read it. ")
    assert note.endswith(
        " Here are the relevant changes (shown with line numbers):\n1\tx = 1\n2\ty = 2"
    )
    assert target.read_text() == "x = 1\ny = 2\n"
    v = claude.post("file_write", "wrote src/app.py", file_path="src/app.py", content="…")
    assert v.lines == []  # already formatted: nothing changed, nothing to say


def test_post_bash_feedback_reads_tool_response(claude: Claude) -> None:
    v = claude.post(
        "shell", {"exit_code": 1, "stdout": "", "stderr": "fatal: bad ref\n"}, command="git log x"
    )
    assert v.lines == [
        f"[PostToolUse hook ({claude.cmd('bash_stderr_feedback.py')}) feedback: "
        "the command wrote to stderr: fatal: bad ref]"
    ]
    assert (
        claude.post("shell", {"exit_code": 0, "stdout": "ok", "stderr": ""}, command="true").lines
        == []
    )


def test_prompt_guard_and_session_context(claude: Claude) -> None:
    (claude.ws / "CONVENTIONS.md").write_text("Small PRs.\n")
    ctx = anyio.run(claude.hooks.session_start, claude.ctx, "startup", claude.ledger)
    assert ctx == f"<hook_context>Project: {claude.ws.name}\nSmall PRs.</hook_context>"
    assert anyio.run(claude.hooks.session_start, claude.ctx, "resume", claude.ledger) is None
    v = anyio.run(claude.hooks.user_prompt, claude.ctx, "use AKIAABCDEFGHIJKLMNOP", claude.ledger)
    assert v.blocked_reason == (
        f"[UserPromptSubmit hook ({claude.cmd('no_secrets_prompt.sh')}) blocked the prompt: "
        "That prompt appears to contain a credential — not sending it.]"
    )
    v = anyio.run(claude.hooks.user_prompt, claude.ctx, "add a test", claude.ledger)
    assert v.blocked_reason is None and v.context is None


def test_stop_until_tests_pass(claude: Claude) -> None:
    stop = claude.hooks.stop
    assert anyio.run(stop, claude.ctx, False, claude.ledger) == (
        f"[Stop hook ({claude.cmd('tests_must_pass.sh')}) asks to keep going: "
        "Tests are still failing — fix them before finishing.]"
    )
    assert anyio.run(stop, claude.ctx, True, claude.ledger) is None
    (claude.ws / "TESTS_PASS").touch()
    assert anyio.run(stop, claude.ctx, False, claude.ledger) is None


def test_notification_log(claude: Claude) -> None:
    anyio.run(claude.hooks.notification, claude.ctx, "orkeon needs your permission", claude.ledger)
    assert (claude.ws / "notifications.log").read_text() == "orkeon needs your permission\n"
