"""The Stop hooks' block cap (docs/hooks.md, "Events"): `budget.stop_blocks`, default 8,
and Claude Code's `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`, which wins over the inputs."""

from __future__ import annotations

import pytest

from orkeon_run.config.inputs import parse_inputs
from orkeon_run.errors import InputError
from orkeon_run.limits import BudgetLimits
from orkeon_run.run.prepare import budget_limits, stop_block_cap


def test_default_is_eight_and_the_inputs_set_it() -> None:
    assert BudgetLimits().stop_blocks == 8
    inputs = parse_inputs({"budget": {"stop_blocks": 3}})
    assert budget_limits(inputs, BudgetLimits()).stop_blocks == 3


def test_claude_codes_variable_wins() -> None:
    budget = BudgetLimits(stop_blocks=3)
    assert stop_block_cap(budget, {"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "12"}).stop_blocks == 12
    assert stop_block_cap(budget, {"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": ""}).stop_blocks == 3


@pytest.mark.parametrize("raw", ["0", "-1", "eight", "2.5"])
def test_a_bad_value_names_the_variable(raw: str) -> None:
    with pytest.raises(InputError) as err:
        stop_block_cap(BudgetLimits(), {"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": raw})
    assert err.value.problems[0].startswith("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP: must be")
    assert err.value.exit_code == 2


def test_zero_in_the_inputs_is_refused() -> None:
    with pytest.raises(InputError) as err:
        parse_inputs({"budget": {"stop_blocks": 0}})
    assert "budget.stop_blocks" in err.value.problems[0]
