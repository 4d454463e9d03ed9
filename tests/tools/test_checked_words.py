"""The shell tool runs the words that were checked (docs/security.md, "The gate and the rule
sets": "A command is split into words once, when the call is checked: the patterns, the
program checks, the hooks and the shell tool all read those same words, so the words judged
are the words that run").

The pipeline's check splits the command (catalog `command_field`) into `CheckedCall.words`;
nothing after it splits again. Here a rule set and a hook record what they were given and
the tool prints what it ran (`echo`), through the real pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from kit.pipeline import make_pipeline

from orkeon_run.calls import CallContext, CheckedCall
from orkeon_run.catalog import TOOLS, ShellInput
from orkeon_run.hooks import Hooks, PreToolVerdict
from orkeon_run.ledger import Ledger
from orkeon_run.policy.programs import ShellRules
from orkeon_run.policy.rules import RuleSet
from orkeon_run.tools import ToolEnv
from orkeon_run.tools.shell import run_shell

# Quotes, a tab and doubled spaces: the words differ from the text split on spaces.
COMMAND = "echo \"a  b\" 'c'\tx\\ y"
WORDS = ("echo", "a  b", "c", "x y")


@dataclass(frozen=True)
class Recording(RuleSet):
    """A rule set that lets everything through and keeps what it judged."""

    seen: list[tuple[tuple[str, ...], Any]] = field(default_factory=list, compare=False)

    def refusal(self, tool: str, subjects: Any, argv: Any = None) -> str | None:
        self.seen.append((tuple(subjects), argv))
        return super().refusal(tool, subjects, argv)


class Seeing(Hooks):
    """Pre-tool hooks that keep the words of each call they see; `rewrite` first answers
    with that command as the call's updated input."""

    def __init__(self, rewrite: str | None = None) -> None:
        self.seen: list[tuple[str, ...] | None] = []
        self.rewrite = rewrite

    async def pre_tool(
        self, ctx: CallContext, call: CheckedCall, call_id: str, ledger: Ledger
    ) -> PreToolVerdict:
        self.seen.append(call.words)
        if self.rewrite is not None and call.command != self.rewrite:
            return PreToolVerdict(updated_input={"command": self.rewrite})
        return PreToolVerdict()


def call(ws: Path, rules: RuleSet, hooks: Hooks, command: str) -> Any:
    pipeline = make_pipeline(ws, rule_sets=[rules], hooks=hooks)
    ctx = CallContext(step=pipeline.step, role="analyst", workspace=ws)
    return anyio.run(pipeline.call, ctx, "shell", {"command": command}, "c1")


def test_the_words_judged_are_the_words_that_run(tmp_path: Path) -> None:
    ws = tmp_path.resolve()
    rules, hooks = Recording("watch"), Seeing()
    out = call(ws, rules, hooks, COMMAND)
    assert out.outcome == "ran", out.result
    # The rule set's patterns saw the words joined, its program checks the words...
    assert rules.seen == [((COMMAND, " ".join(WORDS)), WORDS)]
    # ...the hook the same words, and the tool ran exactly them.
    assert hooks.seen == [WORDS]
    assert out.result["stdout"] == " ".join(WORDS[1:]) + "\n"


def test_a_rewritten_command_is_split_once_more_and_that_is_what_runs(tmp_path: Path) -> None:
    """A hook's updatedInput goes through the check again (docs/hooks.md): the rewrite's
    words are judged, and they are what runs."""
    ws = tmp_path.resolve()
    rules, hooks = Recording("watch"), Seeing(rewrite="echo 're written'")
    out = call(ws, rules, hooks, COMMAND)
    assert rules.seen[-1] == (("echo 're written'", "echo re written"), ("echo", "re written"))
    assert out.result["stdout"] == "re written\n"


def test_the_tool_never_splits_the_command_again(tmp_path: Path) -> None:
    """The tool reads `CheckedCall.words`, not the command text: a call whose words say
    otherwise (which the check never makes) runs its words."""
    entry = TOOLS["shell"]
    args = ShellInput(command="echo as written")
    checked = CheckedCall(entry, {"command": args.command}, args, words=("echo", "as judged"))
    env = ToolEnv(workspace=tmp_path.resolve(), shell_rules=ShellRules())
    result = anyio.run(run_shell, checked, env, 30.0)
    assert result["stdout"] == "as judged\n"


def test_a_command_that_cannot_be_split_is_answered_with_the_checks_reason(
    tmp_path: Path,
) -> None:
    """docs/tools.md: "cannot split | 126 | `shell: cannot split the command: No closing
    quotation`"; no rule set's program check gets words for it."""
    ws = tmp_path.resolve()
    rules, hooks = Recording("watch"), Seeing()
    out = call(ws, rules, hooks, "echo 'open")
    assert rules.seen == [(("echo 'open",), None)] and hooks.seen == [None]
    assert out.result == {
        "exit_code": 126,
        "stdout": "",
        "stderr": "shell: cannot split the command: No closing quotation",
    }
