"""The tool-call pipeline end to end: real tools on a real workspace, real hook scripts,
real events.jsonl. Sentences quoted are from the native hooks contract (docs/hooks.md)
unless marked as the contract's (docs/inputs.md, docs/output.md)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from kit import DATA
from kit.pipeline import make_pipeline

from orkeon_run.calls import CallContext, CallOutcome, CheckedCall, HookRun, Refusal
from orkeon_run.events import EventLog
from orkeon_run.hooks import NO_HOOKS, Hooks, PostToolVerdict, PreToolVerdict
from orkeon_run.ledger import Ledger
from orkeon_run.limits import BudgetLimits
from orkeon_run.policy.gate import Gate
from orkeon_run.policy.programs import ShellRules
from orkeon_run.policy.rules import RuleSet
from orkeon_run.tools import ToolEnv

pytestmark = pytest.mark.anyio

HookCmd = Callable[..., str]
EVENT_KEYS = {
    "type", "ts", "schema_version", "step", "batch", "role", "seq", "tool", "input", "outcome", "refused_by",
    "result", "hooks", "tool_seconds", "hook_seconds",
}  # fmt: skip
HOOK_KEYS = {"n", "event", "command", "exit_code", "seconds", "timed_out", "first_line"}

ROLE = CallContext(step="dev-batches", role="b1/api", workspace=Path("."), batch="b1",
                   roots=("src/api/",))  # fmt: skip
FREE = CallContext(step="dev-spec", role="writer", workspace=Path("."))


class Harness:
    """A pipeline on `workspace` with its ledger and its events.jsonl."""

    def __init__(
        self,
        workspace: Path,
        *,
        hooks: Sequence[tuple[str, str]] = (),
        gate: Gate | None = None,
        rule_sets: Sequence[RuleSet] = (),
        rules: ShellRules | None = None,
        limits: BudgetLimits | None = None,
        tool_hooks: Any = None,
    ) -> None:
        self.workspace = workspace
        self.events_path = workspace.parent / "events.jsonl"
        self.ledger = Ledger(limits or BudgetLimits(seconds=None))
        self.pipeline = make_pipeline(
            workspace,
            native=hooks,
            hooks=tool_hooks or NO_HOOKS,
            gate=gate,
            rule_sets=rule_sets,
            rules=rules,
            ledger=self.ledger,
            events=EventLog(self.events_path),
        )

    async def call(self, tool: str, input: dict[str, Any], ctx: CallContext = ROLE) -> CallOutcome:
        return await self.pipeline.call(ctx, tool, input, "call-1")

    def events(self, kind: str | None = "tool.call") -> list[dict[str, Any]]:
        """The `tool.call` events (`kind=None`: every event)."""
        if not self.events_path.exists():
            return []
        lines = [json.loads(line) for line in self.events_path.read_text().splitlines()]
        return [e for e in lines if kind is None or e["type"] == kind]

    def log(self) -> list[str]:
        """Lines the log_call.sh hooks wrote (one per hook run)."""
        path = self.workspace / "calls.log"
        return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def ws(workspace: Path) -> Path:
    (workspace / "src" / "api").mkdir(parents=True)
    (workspace / "src" / "api" / "x.py").write_text("x = 1\n")
    (workspace / "tests").mkdir()
    return workspace


def write(path: str, content: str = "new\n") -> dict[str, Any]:
    return {"file_path": path, "content": content}


# --- a call that runs, and its event ----------------------------------------------------


async def test_a_call_runs_and_emits_one_event_with_every_field(ws: Path) -> None:
    """docs/output.md: "A `tool.call` event, one per call" with every listed field."""
    h = Harness(ws)
    out = await h.call("file_write", write("src/api/y.py"))
    assert out.outcome == "ran" and out.refused_by is None
    assert (ws / "src/api/y.py").read_text() == "new\n"
    await h.call("file_read", {"file_path": "src/api/y.py"})
    await h.call("file_read", {"file_path": "README.md"}, FREE)
    # Each call: a tool.start as it begins, its one tool.call when it is done.
    assert [e["type"] for e in h.events(None)] == ["tool.start", "tool.call"] * 3
    starts = h.events("tool.start")
    assert [(e["role"], e["seq"], e["tool"], e["target"]) for e in starts] == [
        ("b1/api", 1, "file_write", "src/api/y.py"),
        ("b1/api", 2, "file_read", "src/api/y.py"),
        ("writer", 1, "file_read", "README.md"),
    ]
    events = h.events()
    first = events[0]
    assert set(first) == EVENT_KEYS
    assert first["step"] == "dev-batches" and first["batch"] == "b1" and first["role"] == "b1/api"
    assert first["tool"] == "file_write" and first["input"] == write("src/api/y.py")
    assert first["outcome"] == "ran" and first["refused_by"] is None
    assert first["result"] == out.result and first["hooks"] == []
    assert first["tool_seconds"] > 0 and first["hook_seconds"] == 0
    # seq counts each role's calls.
    assert [(e["role"], e["seq"]) for e in events] == [("b1/api", 1), ("b1/api", 2), ("writer", 1)]
    assert events[1]["result"] == "new\n"


async def test_tool_time_is_charged_to_the_ledger(ws: Path) -> None:
    """docs/inputs.md: "each call charges its tool time"."""
    h = Harness(ws, rules=ShellRules())
    out = await h.call("shell", {"command": "sleep 0.2"})
    assert out.result == {"exit_code": 0, "stdout": "", "stderr": ""}
    assert 0.2 <= h.ledger.tool_seconds == pytest.approx(out.tool_seconds)
    assert h.ledger.hook_seconds == 0


async def test_unknown_tool_and_bad_input_are_error_results(ws: Path) -> None:
    h = Harness(ws)
    out = await h.call("nope", {})
    assert (out.outcome, out.refused_by) == ("refused", None)
    assert out.result == "error: there is no tool named 'nope'"
    out = await h.call("file_write", {"file_path": "src/api/z.py"})
    assert out.result == "error: file_write: the field 'content' is required"
    out = await h.call("file_write", write(""))
    assert out.result == "error: file_write: the field 'file_path' is empty"
    assert len(h.events()) == 3


async def test_a_tool_that_raises_becomes_a_text_result(ws: Path) -> None:
    # A ToolEnv without program rules makes the shell tool itself fail.
    h = Harness(ws)
    h.pipeline.tool_env = ToolEnv(workspace=ws, shell_rules=None)  # type: ignore[arg-type]
    out = await h.call("shell", {"command": "true"})
    assert out.outcome == "ran"
    assert isinstance(out.result, str) and out.result.startswith("error: shell failed: ")


# --- gate, workspace, rule sets, roots ---------------------------------------------------


async def test_a_call_the_gate_refuses_never_reaches_the_hooks(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """The hooks contract (docs/hooks.md): "A call the gate refuses, a session deny rule
    among them, never reaches the hooks" (nor the rule sets: docs/tools.md)."""
    log = hook_cmd("log_call.sh", "{event}")
    h = Harness(
        ws,
        hooks=[("pre-tool", log), ("post-tool", log)],
        gate=Gate(deny=["Write(src/**)"]),
        rule_sets=[RuleSet.parse("crew", deny=["file_write"])],
        rules=hook_rules,
    )
    out = await h.call("file_write", write("src/api/y.py"))
    assert out.result == "[refused by the gate: Write(src/**)]"
    assert (out.outcome, out.refused_by, out.hooks) == ("refused", "gate", [])
    assert not (ws / "src/api/y.py").exists()
    assert h.log() == []
    # A call the gate allows does reach them (the hooks work).
    await h.call("file_read", {"file_path": "README.md"})
    assert h.log() == ["pre-tool", "post-tool"]


async def test_gate_allow_rules_confine_calls(ws: Path) -> None:
    h = Harness(ws, gate=Gate(allow=["Read", "shell(git diff *)"]))
    assert (await h.call("file_read", {"file_path": "README.md"})).outcome == "ran"
    out = await h.call("shell", {"command": "ls"})
    assert out.result == "[refused by the gate: Read, shell(git diff *)]"


async def test_the_gate_does_not_check_hook_commands(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """The hooks contract (docs/hooks.md): "Orkeon Code runs a hook with the shell tool,
    from its own code ...: the gate does not check it"."""
    h = Harness(
        ws, hooks=[("pre-tool", hook_cmd("log_call.sh", "{tool}"))], gate=Gate(deny=["Bash"]),
        rules=hook_rules,
    )  # fmt: skip
    assert (await h.call("file_read", {"file_path": "README.md"})).outcome == "ran"
    assert h.log() == ["file_read"]
    assert (await h.call("shell", {"command": "true"})).refused_by == "gate"


@pytest.mark.parametrize("path", ["../outside.txt", "src/../../outside.txt", "/etc/passwd"])
async def test_paths_that_leave_the_workspace_are_refused(
    ws: Path, path: str, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    h = Harness(ws, hooks=[("pre-tool", hook_cmd("log_call.sh"))], rules=hook_rules)
    out = await h.call("file_write", write(path), FREE)
    assert out.result == f"[refused: {path} is outside the workspace]"
    assert out.refused_by == "workspace"
    assert not (ws.parent / "outside.txt").exists()
    assert h.log() == []


async def test_a_symlink_out_of_the_workspace_is_refused(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (ws / "link").symlink_to(outside)
    h = Harness(ws)
    out = await h.call("file_write", write("link/x.txt"), FREE)
    assert out.result == "[refused: link/x.txt is outside the workspace]"
    assert not (outside / "x.txt").exists()
    out = await h.call("list_files", {"path": "link"}, FREE)
    assert out.refused_by == "workspace"


async def test_rule_set_refusal_runs_no_hook(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """The hooks contract (docs/hooks.md): "the crew's callback checks the call again
    against the step's rule sets ...; a call they refuse runs no hook"."""
    h = Harness(
        ws,
        hooks=[("pre-tool", hook_cmd("log_call.sh")), ("post-tool", hook_cmd("log_call.sh"))],
        rule_sets=[
            RuleSet.parse("base", deny=["shell(git push *)"]),
            RuleSet.parse("writer", allow=["file_read", "file_write(docs/**)"]),
        ],
        rules=hook_rules,
    )
    out = await h.call("file_write", write("src/api/y.py"), FREE)
    assert out.result == "[refused by rule set writer: file_read, file_write(docs/**)]"
    assert out.refused_by == "rules" and out.hooks == []
    out = await h.call("shell", {"command": "git push origin main"}, FREE)
    assert out.result == "[refused by rule set base: shell(git push *)]"
    assert h.log() == []
    assert (await h.call("file_write", write("docs/a.md"), FREE)).outcome == "ran"
    assert len(h.log()) == 2


async def test_roots_refusal_runs_no_hook(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """The hooks contract (docs/hooks.md): "(and, for a role of a batch, against its roots);
    a call they refuse runs no hook"."""
    h = Harness(ws, hooks=[("pre-tool", hook_cmd("log_call.sh"))], rules=hook_rules)
    ctx = CallContext(step="dev-batches", role="b1/api", workspace=ws, batch="b1",
                      roots=("src/api/", "docs"))  # fmt: skip
    out = await h.call("file_write", write("tests/test_x.py"), ctx)
    assert out.result == "[refused: tests/test_x.py is outside this role's roots (src/api/, docs)]"
    assert out.refused_by == "roots" and h.log() == []
    out = await h.call("file_edit", {"file_path": "src/apix/a.py", "old_string": "a",
                                     "new_string": "b"}, ctx)  # fmt: skip
    assert out.refused_by == "roots"
    # Reading outside the roots is fine; writing inside them too.
    assert (await h.call("file_read", {"file_path": "README.md"}, ctx)).outcome == "ran"
    assert (await h.call("file_write", write("src/api/ok.py"), ctx)).outcome == "ran"


async def test_roots_are_checked_on_the_resolved_path(ws: Path) -> None:
    """The contract: "Roots are checked on the resolved path (a symlink inside the root
    pointing outside is outside)"."""
    (ws / "src/api/to_tests").symlink_to(ws / "tests")
    h = Harness(ws)
    out = await h.call("file_write", write("src/api/to_tests/sneaky.py"))
    assert out.result == (
        "[refused: src/api/to_tests/sneaky.py is outside this role's roots (src/api/)]"
    )
    assert not (ws / "tests/sneaky.py").exists()
    # `..` that comes back inside the root is inside.
    out = await h.call("file_write", write("src/api/../api/back.py"))
    assert out.outcome == "ran" and (ws / "src/api/back.py").exists()


# --- native hooks in the pipeline ---------------------------------------------------------


async def test_pre_tool_hooks_run_in_order_and_the_first_failure_refuses(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """The hooks contract (docs/hooks.md): "every pre-tool hook runs, in the order of /hooks
    list; the first that exits with a code other than 0 ... refuses the call: the model
    reads the hook's number, its command, its exit code and the first line it printed (its
    error output first), and the call does not run"."""
    deny = hook_cmd("deny.sh", "{tool}", "{path}")
    h = Harness(
        ws,
        hooks=[
            ("pre-tool", hook_cmd("log_call.sh", "first")),
            ("post-tool", hook_cmd("log_call.sh", "post")),
            ("pre-tool", deny),
            ("pre-tool", hook_cmd("log_call.sh", "fourth")),
        ],
        rules=hook_rules,
    )
    out = await h.call("file_write", write("src/api/generated.py"))
    cmd = deny.replace("{tool}", "file_write").replace("{path}", "src/api/generated.py")
    assert out.result == f"[pre-tool hook #3 ({cmd}) exited 2: generated/ is rebuilt, not edited]"
    assert (out.outcome, out.refused_by) == ("refused", "hook")
    assert not (ws / "src/api/generated.py").exists()
    assert h.log() == ["first"]  # #4 did not run, nor the post-tool hook
    assert [(r.n, r.exit_code) for r in out.hooks] == [(1, 0), (3, 2)]
    event = h.events()[-1]
    assert [set(r) for r in event["hooks"]] == [HOOK_KEYS, HOOK_KEYS]
    assert event["hooks"][1]["first_line"] == "generated/ is rebuilt, not edited"
    assert event["hook_seconds"] == pytest.approx(sum(r.seconds for r in out.hooks), abs=1e-5)


async def test_a_pre_tool_hook_past_its_limit_refuses(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """The hooks contract (docs/hooks.md): "the first that ... runs longer than 60 seconds
    ... refuses the call" — here the budget makes the limit 0.4 s (docs/inputs.md: "A hook's
    time limit is the smaller of its own and what is left"), so it is the budget that stops
    it, and the model reads that text."""
    sleep = hook_cmd("sleep.sh", "30")
    h = Harness(ws, hooks=[("pre-tool", sleep)], rules=hook_rules,
                limits=BudgetLimits(seconds=0.4))  # fmt: skip
    out = await h.call("file_write", write("src/api/y.py"))
    assert out.result == "[refused: the step's time budget is spent]"
    assert out.refused_by == "budget" and out.hooks[0].timed_out
    assert not (ws / "src/api/y.py").exists()
    # The budget is now spent: no new call starts.
    out = await h.call("file_read", {"file_path": "README.md"})
    assert (out.result, out.refused_by) == ("[refused: the step's time budget is spent]", "budget")


async def test_a_post_tool_hook_cut_by_the_budget_adds_the_budget_line(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """docs/inputs.md: "A hook's time limit is the smaller of its own and what is left"; the
    post-tool hook stopped by what was left adds the budget's line, and the budget counts
    as exhausted (it stopped work)."""
    sleep = hook_cmd("sleep.sh", "30")
    h = Harness(ws, hooks=[("post-tool", sleep)], rules=hook_rules,
                limits=BudgetLimits(seconds=0.4))  # fmt: skip
    out = await h.call("file_read", {"file_path": "README.md"})
    assert out.outcome == "ran" and out.hooks[0].timed_out
    assert out.result == (
        f"# readme\n[post-tool hook #1 ({sleep}) could not run: the step's time budget is spent]"
    )
    assert h.ledger.snapshot()["exhausted"] == "seconds"


async def test_a_hook_that_cannot_run_refuses_every_call_of_the_step(ws: Path) -> None:
    """The hooks contract (docs/hooks.md): "A hook that cannot run refuses every call of the
    step"."""
    h = Harness(ws, hooks=[("pre-tool", "node .orkeon/hooks/pre.mjs {tool} {path}")])
    for path in ("README.md", "src/api/x.py"):
        out = await h.call("file_read", {"file_path": path})
        assert out.refused_by == "hook"
        assert isinstance(out.result, str)
        assert out.result.startswith(
            f"[pre-tool hook #1 (node .orkeon/hooks/pre.mjs file_read {path}) could not run: "
        )


async def test_post_tool_hooks_all_run_in_order_and_add_their_lines(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """The hooks contract (docs/hooks.md): "every post-tool hook runs, in order. One that
    fails adds a line to the result the model reads" (the contract: `RESULT.rstrip("\\n") +
    "\\n" + LINE`)."""
    deny, lint = hook_cmd("deny.sh"), hook_cmd("stdout_only.sh", "{path}")
    h = Harness(
        ws,
        hooks=[
            ("post-tool", deny),
            ("post-tool", hook_cmd("log_call.sh", "second")),
            ("post-tool", lint),
            ("post-tool", "missing-program {path}"),
        ],
        rules=hook_rules,
    )
    out = await h.call("file_read", {"file_path": "README.md"})
    assert out.outcome == "ran" and out.refused_by is None
    assert out.result == (
        "# readme\n"
        f"[post-tool hook #1 ({deny}) exited 2: generated/ is rebuilt, not edited]\n"
        f"[post-tool hook #3 ({lint.replace('{path}', 'README.md')}) exited 1: "
        "lint: 3 problems in README.md]\n"
        "[post-tool hook #4 (missing-program README.md) could not run: program "
        "'missing-program' is not allowed (allowed: the base list; interpreters need "
        "allow_interpreters; others need extra_allowed_commands)]"
    )
    assert h.log() == ["second"]
    assert [r.n for r in out.hooks] == [1, 2, 3, 4]
    assert h.events()[-1]["result"] == out.result


async def test_when_every_post_tool_hook_exits_0_the_result_is_left_as_it_is(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """The hooks contract (docs/hooks.md): "when they all exit 0, the result is left as it
    is" — a list stays a list."""
    h = Harness(ws, hooks=[("post-tool", hook_cmd("allow.sh"))], rules=hook_rules)
    out = await h.call("list_files", {"path": "src"})
    assert out.result == ["src/api/x.py"]
    assert h.events()[-1]["result"] == ["src/api/x.py"]
    out = await h.call("file_read", {"file_path": "README.md"})
    assert out.result == "# readme\n"


async def test_a_result_that_is_not_text_becomes_compact_json_on_one_line(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """The hooks contract (docs/hooks.md): "A result that is not text reaches the model then
    as compact JSON, on one line"."""
    deny = hook_cmd("deny.sh")
    h = Harness(ws, hooks=[("post-tool", deny)], rules=hook_rules)
    out = await h.call("shell", {"command": "echo hi"})
    assert out.result == (
        '{"exit_code":0,"stdout":"hi\\n","stderr":""}\n'
        f"[post-tool hook #1 ({deny}) exited 2: generated/ is rebuilt, not edited]"
    )
    assert h.events()[-1]["result"] == out.result


async def test_stop_hooks_are_stored_not_run_and_keep_their_numbers(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """The hooks contract (docs/hooks.md): "nothing runs a stop hook: /hooks stores them for
    later"; numbering counts them."""
    h = Harness(
        ws,
        hooks=[("stop", hook_cmd("log_call.sh", "stop")), ("pre-tool", hook_cmd("deny.sh"))],
        rules=hook_rules,
    )
    out = await h.call("file_read", {"file_path": "README.md"})
    assert isinstance(out.result, str) and out.result.startswith("[pre-tool hook #2 (")
    assert h.log() == []


async def test_a_hook_cannot_change_the_input(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """The hooks contract (docs/hooks.md): "It cannot allow a call the gate or the rule sets
    refuse, nor change the call's input" — a native hook's stdout is not read as an answer."""
    h = Harness(ws, hooks=[("pre-tool", hook_cmd("print_json.sh"))], rules=hook_rules,
                gate=Gate(deny=["file_edit"]))  # fmt: skip
    out = await h.call("file_write", write("src/api/orig.py", "orig"))
    assert out.outcome == "ran"
    assert (ws / "src/api/orig.py").read_text() == "orig"
    assert not (ws / "src/api/rewritten.py").exists()
    out = await h.call("file_edit", {"file_path": "src/api/orig.py", "old_string": "o",
                                     "new_string": "x"})  # fmt: skip
    assert out.refused_by == "gate"


async def test_hooks_see_the_call_not_a_tools_inner_work(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """The hooks contract (docs/hooks.md): "It does not see the calls a command or a crew
    makes from its own code ..., nor the inner calls of a tool Orkeon Code defines" — one
    search over many files is one call; a shell command's own child processes are not calls
    either."""
    for i in range(20):
        (ws / "src" / f"m{i}.py").write_text("needle\n")
    log = hook_cmd("log_call.sh", "{event}", "{tool}", "{path}")
    h = Harness(ws, hooks=[("pre-tool", log), ("post-tool", log)], rules=hook_rules)
    out = await h.call("search_files", {"pattern": "needle", "path": "src"})
    assert isinstance(out.result, list) and len(out.result) == 20
    await h.call("shell", {"command": "git --version"})
    assert h.log() == [
        "pre-tool search_files src",
        "post-tool search_files src",
        "pre-tool shell -",
        "post-tool shell -",
    ]


# --- the budget ---------------------------------------------------------------------------


# Hang guard (quiet: 0.5 s): run one after another, the first hook would wait alone at the
# barrier until its 60 s limit.
@pytest.mark.timeout(30)
async def test_hook_time_is_charged_at_each_call(
    ws: Path, tmp_path: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """The hooks contract (docs/hooks.md): "The time a hook runs counts in the step's time
    budget, at each call" — ten calls at once, as a batch's roles make them, each with a hook
    that waits until all ten have started (a barrier, so they ran at the same time) and then
    sleeps 0.3 s: at least 3.0 s of hook time, whatever the wall clock says."""
    barrier = hook_cmd("barrier.sh", str(tmp_path / "marks"), "10", "0.3")
    h = Harness(ws, hooks=[("pre-tool", barrier)], rules=hook_rules)
    outs = await asyncio.gather(
        *(h.call("file_read", {"file_path": "README.md"}) for _ in range(10))
    )
    assert all(o.outcome == "ran" for o in outs)
    assert h.ledger.hook_seconds >= 3.0
    events = h.events()
    assert len(events) == 10
    assert sum(e["hook_seconds"] for e in events) == pytest.approx(h.ledger.hook_seconds, abs=1e-4)
    assert h.ledger.tool_seconds == pytest.approx(sum(e["tool_seconds"] for e in events), abs=1e-4)


async def test_a_spent_budget_starts_no_call(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """docs/inputs.md: "When the ledger reaches `budget.seconds`, no new turn or call starts"."""
    h = Harness(ws, hooks=[("pre-tool", hook_cmd("log_call.sh"))], rules=hook_rules,
                limits=BudgetLimits(seconds=1.0, turns=3))  # fmt: skip
    h.ledger.charge("model", 1.0)
    out = await h.call("file_write", write("src/api/y.py"))
    assert out.result == "[refused: the step's time budget is spent]"
    assert (out.outcome, out.refused_by) == ("refused", "budget")
    assert not (ws / "src/api/y.py").exists() and h.log() == []
    assert h.ledger.tool_seconds == 0 and h.ledger.hook_seconds == 0

    h2 = Harness(ws, limits=BudgetLimits(seconds=None, turns=1))
    h2.ledger.add_turn()
    out = await h2.call("file_read", {"file_path": "README.md"})
    assert out.result == "[refused: the step's turn budget is spent]"


async def test_a_post_tool_hook_after_the_budget_is_spent_does_not_run(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    log = hook_cmd("log_call.sh")
    h = Harness(ws, hooks=[("post-tool", log)], rules=hook_rules,
                limits=BudgetLimits(seconds=0.2))  # fmt: skip
    out = await h.call("shell", {"command": "sleep 0.3"})
    assert out.outcome == "ran"
    assert isinstance(out.result, str)
    assert out.result.endswith(
        f"\n[post-tool hook #1 ({log}) could not run: the step's time budget is spent]"
    )
    assert h.log() == []


# --- settings-shape hooks through the ToolHooks protocol -----------------------------------


class ScriptedToolHooks(Hooks):
    """A hook set that answers with given verdicts and records what it was asked."""

    def __init__(self, pre: PreToolVerdict | None = None, post: PostToolVerdict | None = None):
        self.pre = pre or PreToolVerdict()
        self.post = post or PostToolVerdict()
        self.seen: list[tuple[str, str, dict[str, Any], Any]] = []

    async def pre_tool(self, ctx: CallContext, call: CheckedCall, call_id: str,
                       ledger: Ledger) -> PreToolVerdict:  # fmt: skip
        self.seen.append(("pre", call.name, call.input, None))
        return self.pre

    async def post_tool(self, ctx: CallContext, call: CheckedCall, result: Any,
                        call_id: str, ledger: Ledger, pre: PreToolVerdict) -> PostToolVerdict:  # fmt: skip
        self.seen.append(("post", call.name, call.input, result))
        return PostToolVerdict(
            [*pre.context_lines, *self.post.lines], self.post.runs, self.post.stop,
            self.post.stop_reason,
        )  # fmt: skip


def _run(cmd: str, event: str) -> HookRun:
    return HookRun(None, event, cmd, 0, 0.01, False, "")


async def test_native_pre_tool_hooks_run_before_settings_ones(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    th = ScriptedToolHooks()
    h = Harness(ws, hooks=[("pre-tool", hook_cmd("deny.sh"))], rules=hook_rules, tool_hooks=th)
    out = await h.call("file_read", {"file_path": "README.md"})
    assert out.refused_by == "hook" and th.seen == []


async def test_settings_refusal_lines_refuse_the_call(ws: Path) -> None:
    lines = [
        "[PreToolUse hook (a) blocked the call: no]",
        "[PreToolUse hook (b) denied the call: x]",
    ]
    th = ScriptedToolHooks(
        PreToolVerdict(refusal=Refusal("hook", "\n".join(lines)), runs=[_run("a", "PreToolUse")])
    )
    h = Harness(ws, tool_hooks=th)
    out = await h.call("file_write", write("src/api/y.py"))
    assert (out.outcome, out.refused_by) == ("refused", "hook")
    assert out.result == "\n".join(lines)
    assert not (ws / "src/api/y.py").exists()
    assert h.events()[-1]["hooks"][0]["event"] == "PreToolUse"
    assert out.hook_seconds == pytest.approx(0.01)


async def test_updated_input_is_checked_again_before_the_tool_runs(ws: Path) -> None:
    """docs/hooks.md: "`updatedInput` replaces the input ... and is checked again by the
    gate, the rule sets and the roots before the tool runs"."""
    for updated, refused_by, text in [
        (write("secrets/k"), "gate", "[refused by the gate: Write(secrets/**)]"),
        (write("../k"), "workspace", "[refused: ../k is outside the workspace]"),
        (write("docs/k"), "rules", "[refused by rule set crew: file_write(docs/**)]"),
        (write("tests/k"), "roots", "[refused: tests/k is outside this role's roots (src/api/)]"),
        ({"file_path": "src/api/k"}, "hook",
         "error: a PreToolUse hook's updatedInput: error: file_write: the field 'content' is "
         "required"),
    ]:  # fmt: skip
        th = ScriptedToolHooks(PreToolVerdict(updated_input=updated))
        h = Harness(ws, gate=Gate(deny=["Write(secrets/**)"]), tool_hooks=th,
                    rule_sets=[RuleSet.parse("crew", deny=["file_write(docs/**)"])])  # fmt: skip
        out = await h.call("file_write", write("src/api/y.py"))
        assert (out.refused_by, out.result) == (refused_by, text)
        assert not (ws / "src/api/y.py").exists()


async def test_updated_input_runs_and_lines_come_in_order(
    ws: Path, hook_cmd: HookCmd, hook_rules: ShellRules
) -> None:
    """The rewritten input runs; after the result come native post-tool lines, PreToolUse
    contexts, then PostToolUse lines; the event keeps the model's input."""
    deny = hook_cmd("deny.sh", "{path}")
    th = ScriptedToolHooks(
        PreToolVerdict(updated_input=write("src/api/new.py", "rewritten"),
                       context_lines=["<hook_context>pre</hook_context>"]),
        PostToolVerdict(lines=["[PostToolUse hook (p) feedback: tidy]"], stop=True,
                        stop_reason="enough"),
    )  # fmt: skip
    h = Harness(ws, hooks=[("post-tool", deny)], rules=hook_rules, tool_hooks=th)
    out = await h.call("file_write", write("src/api/y.py"))
    assert (ws / "src/api/new.py").read_text() == "rewritten"
    assert not (ws / "src/api/y.py").exists()
    assert isinstance(out.result, str)
    assert out.result.split("\n")[1:] == [
        f"[post-tool hook #1 ({deny.replace('{path}', 'src/api/new.py')}) exited 2: "
        "generated/ is rebuilt, not edited]",
        "<hook_context>pre</hook_context>",
        "[PostToolUse hook (p) feedback: tidy]",
    ]
    assert out.stop_role and out.stop_reason == "enough"
    assert th.seen[1][:3] == ("post", "file_write", write("src/api/new.py", "rewritten"))
    assert h.events()[-1]["input"] == write("src/api/y.py")


async def test_continue_false_in_pre_tool_stops_the_role_without_running(ws: Path) -> None:
    text = "[refused: a PreToolUse hook stopped the role: freeze]"
    th = ScriptedToolHooks(PreToolVerdict(Refusal("hook", text), stop=True, stop_reason="freeze"))
    h = Harness(ws, tool_hooks=th)
    out = await h.call("file_write", write("src/api/y.py"))
    assert out.stop_role and out.refused_by == "hook"
    assert out.result == "[refused: a PreToolUse hook stopped the role: freeze]"
    assert not (ws / "src/api/y.py").exists()


def test_hook_scripts_are_executable_files() -> None:
    scripts = list((DATA / "hooks").iterdir())
    assert scripts
    for script in scripts:
        assert os.access(script, os.X_OK), script
        assert script.read_text().startswith("#!"), script
