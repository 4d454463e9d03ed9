"""`budget.per_role` (docs/inputs.md, "budget"): each role of a step may spend at most
that much; a role that reaches its own limit ends `budget_exhausted` while its siblings
go on, and the step's own limits still hold over all of them (ledger.RoleLedger)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kit.process import orkeon
from kit.steps import calls, make_workspace, run_step, write

from orkeon_run.errors import BudgetExhausted
from orkeon_run.ledger import Ledger, RoleLedger
from orkeon_run.limits import BudgetLimits, RoleLimits

FILES = {"README.md": "# demo\n", "src/__init__.py": ""}
PLAN = {
    "batches": [
        {
            "name": "b1",
            "roles": [
                {"name": "api", "roots": ["src/"], "task": "write src/"},
                {"name": "docs", "roots": ["docs/"], "task": "write docs/"},
            ],
        }
    ]
}
# b1/api would go on writing for 8 turns; b1/docs needs 2.
SCRIPT = {
    "b1/api": [{"tool_calls": [write(f"src/m{i}.py", f"x = {i}\n")]} for i in range(8)],
    "b1/docs": [{"tool_calls": [write("docs/x.md", "# x\n")]}, {"text": "done"}],
}


def batches(tmp_path: Path, budget: dict[str, Any]) -> dict[str, Any]:
    """dev-batches of PLAN, one role at a time (api first), with `budget`."""
    ws = make_workspace(tmp_path, FILES)
    doc = {
        "model": {"provider": "scripted", "script": SCRIPT},
        "plan": PLAN,
        "concurrency": 1,
        "budget": budget,
    }
    return run_step("dev-batches", doc, ws, run_dir=tmp_path / "run")


def test_without_per_role_one_role_spends_the_step_and_its_sibling_never_runs(
    tmp_path: Path,
) -> None:
    result = batches(tmp_path, {"turns": 6})
    assert [(r["name"], r["status"], r["turns"]) for r in result["roles"]] == [
        ("b1/api", "budget_exhausted", 6),
        ("b1/docs", "budget_exhausted", 0),
    ]
    assert result["budget"]["exhausted"] == "turns"


def test_a_role_stops_at_its_own_limit_while_its_sibling_finishes(tmp_path: Path) -> None:
    result = batches(tmp_path, {"turns": 6, "per_role": {"turns": 2}})
    api, docs = result["roles"]
    assert (api["name"], api["status"], api["turns"]) == ("b1/api", "budget_exhausted", 2)
    assert api["error"] == "the role's turn budget is spent"
    assert api["budget"]["turns"] == 2 and api["budget"]["exhausted"] == "turns"
    assert (docs["name"], docs["status"], docs["turns"]) == ("b1/docs", "succeeded", 2)
    assert docs["budget"] == {
        "used_seconds": docs["budget"]["used_seconds"],
        "turns": 2,
        "tokens": 0,
        "usd": 0.0,
        "exhausted": None,
    }
    assert (tmp_path / "ws" / "docs" / "x.md").read_text() == "# x\n"
    # The step's ledger holds both roles' turns, and its own limit was not reached.
    assert result["budget"]["turns"] == 4 and result["budget"]["exhausted"] is None
    # A role's own limit is a budget that ran out: exit 3, kind "budget".
    assert (result["status"], result["exit_code"], result["error"]["kind"]) == (
        "budget_exhausted",
        3,
        "budget",
    )
    assert result["error"]["message"] == (
        "role b1/api budget_exhausted: the role's turn budget is spent"
    )
    # The call of api's last turn is refused, in the role's words.
    second = calls(tmp_path / "run", "b1/api")[1]
    assert (second["refused_by"], second["result"]) == (
        "budget",
        "[refused: the role's turn budget is spent]",
    )
    # The audit still ran: the batch's paths are checked as always.
    (audit,) = result["audits"]
    assert audit["passed"] is True and audit["changed"] == 2


def test_the_steps_limit_still_holds_over_the_roles(tmp_path: Path) -> None:
    """Each role may use 4 turns, the step 5: api uses 4, docs gets 1 and is stopped by the
    step's budget, which says so."""
    result = batches(tmp_path, {"turns": 5, "per_role": {"turns": 4}})
    assert [(r["name"], r["status"], r["turns"]) for r in result["roles"]] == [
        ("b1/api", "budget_exhausted", 4),
        ("b1/docs", "budget_exhausted", 1),
    ]
    assert result["budget"]["exhausted"] == "turns" and result["budget"]["turns"] == 5
    assert result["error"]["message"].startswith("the step's turn budget is spent")


@pytest.mark.parametrize(
    ("per_role", "line"),
    [
        ({"turns": 0}, "budget.per_role.turns: Input should be greater than or equal to 1"),
        ({"usd": -1}, "budget.per_role.usd: Input should be greater than 0"),
        ({"calls": 3}, "budget.per_role.calls: unknown key"),
        ({"per_role": {}}, "budget.per_role.per_role: unknown key"),
        (5, "budget.per_role: Input should be an object"),
    ],
)
def test_a_bad_per_role_limit_exits_2_naming_it(tmp_path: Path, per_role: Any, line: str) -> None:
    doc = {"model": {"provider": "scripted"}, "plan": PLAN, "budget": {"per_role": per_role}}
    proc = orkeon("run", "dev-batches", "--workspace", str(tmp_path),
                  "--inputs", json.dumps(doc), cwd=tmp_path)  # fmt: skip
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", f"orkeon: {line}\n")


def test_a_per_role_limit_not_below_the_steps_is_a_warning(tmp_path: Path) -> None:
    doc = {"model": {"provider": "scripted"}, "plan": PLAN,
           "budget": {"turns": 40, "per_role": {"turns": 40, "tokens": 1000}}}  # fmt: skip
    proc = orkeon("validate", "--step", "dev-batches", "--workspace", str(tmp_path),
                  "--inputs", json.dumps(doc), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (
        "warning: budget.per_role.turns: 40 is not below the step's 40: the step's limit is "
        "reached first\n"
    )


def test_a_role_ledger_charges_both_and_stops_its_role_alone() -> None:
    step = Ledger(BudgetLimits(seconds=10, per_role=RoleLimits(seconds=2, tokens=100)))
    role = step.role()
    other = step.role()
    assert isinstance(role, RoleLedger) and role is not other
    role.charge("tool", 1.5)
    assert role.remaining_seconds() == pytest.approx(0.5)
    role.add_turn(60, 50, 0.01)
    assert (step.tokens_in, step.tokens_out, step.turns) == (60, 50, 1)
    assert role.spent() == "tokens" and step.spent() is None and other.spent() is None
    with pytest.raises(BudgetExhausted) as caught:
        role.check()
    assert (caught.value.which, caught.value.whose) == ("tokens", "role")
    assert role.use()["exhausted"] == "tokens" and step.exhausted is None
    other.check()  # the sibling goes on
    # A model turn cut at the time limit: the role's, while the step has time left.
    with pytest.raises(BudgetExhausted) as caught:
        other.exhaust("seconds")
    assert caught.value.whose == "role" and step.exhausted is None
    # The step's own limit, once reached, stops every role and is said as the step's.
    other.charge("model", 9.0)
    assert step.spent() == "seconds"
    with pytest.raises(BudgetExhausted) as caught:
        role.check()
    assert (caught.value.which, caught.value.whose) == ("seconds", "step")
    assert step.exhausted == "seconds"


def test_no_per_role_limits_leave_the_steps_ledger_as_it_is() -> None:
    step = Ledger(BudgetLimits(per_role=RoleLimits()))
    assert step.role() is step
    left = Ledger(BudgetLimits(turns=10, per_role=RoleLimits(turns=3)))
    left.add_turn()
    # A pipeline's next step runs on what is left, each of its roles with the same limit.
    assert left.left().per_role == RoleLimits(turns=3) and left.left().turns == 9


def test_a_hook_the_time_left_no_room_for_says_whose_time_is_spent(workspace: Path) -> None:
    """A role whose own time is spent: its post-tool hooks cannot run, and the line the
    model reads names the role's budget, not the step's (which has time left); once the
    step's is spent too, the step's."""
    import anyio
    from kit.pipeline import sample_call

    from orkeon_run.calls import CallContext
    from orkeon_run.config.inputs import NativeHook
    from orkeon_run.hooks.claude.run import CommandRunner
    from orkeon_run.hooks.native import NativeHooks
    from orkeon_run.hooks.protocol import PreToolVerdict
    from orkeon_run.policy.programs import ShellRules

    step = Ledger(BudgetLimits(seconds=10, per_role=RoleLimits(seconds=2)))
    role = step.role()
    role.charge("tool", 2.0)
    hooks = NativeHooks(
        [NativeHook(event="post-tool", command="true")],
        workspace=workspace,
        program_rules=ShellRules(),
    )
    call = sample_call(workspace, "file_read", {"file_path": "README.md"})
    ctx = CallContext(step="dev-batches", role="b1/api", workspace=workspace, batch="b1")

    def post_line(ledger: Ledger) -> str:
        v = anyio.run(hooks.post_tool, ctx, call, "x", "id", ledger, PreToolVerdict())
        return v.lines[-1]

    assert post_line(role) == (
        "[post-tool hook #1 (true) could not run: the role's time budget is spent]"
    )
    runner = CommandRunner(workspace, {}, "/bin/sh")
    ran = anyio.run(runner.run_one, "true", 10.0, b"", role)
    assert ran.error == "the role's time budget is spent"
    step.charge("model", 8.0)  # the step's ten seconds are gone as well
    assert post_line(role).endswith("could not run: the step's time budget is spent]")
    assert anyio.run(runner.run_one, "true", 10.0, b"", role).error == (
        "the step's time budget is spent"
    )
