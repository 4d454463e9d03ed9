"""The host gate: the session's allow/deny rules (docs/inputs.md).

That a call the gate refuses never reaches the rule sets or a hook is proved end to end in
test_pipeline.py; here, the gate's own answers.
"""

from __future__ import annotations

import pytest
from kit.pipeline import subjects

from orkeon_run.config.inputs import GateRules
from orkeon_run.policy.gate import Gate


def shell(command: str) -> tuple[str, ...]:
    return subjects("shell", {"command": command})


def test_an_empty_gate_allows_every_call() -> None:
    gate = Gate()
    assert gate.empty
    assert gate.refusal("shell", shell("git push")) is None
    assert gate.refusal("file_write", ("anything",)) is None


def test_session_deny_rule_refuses_and_names_the_rule() -> None:
    """The hooks contract (docs/hooks.md): "A call the gate refuses, a session deny rule
    among them, never reaches the hooks": the gate names the deny rule that refused."""
    gate = Gate.from_inputs(GateRules(deny=["Bash(git push *)", "Write(secrets/**)"]))
    assert gate.refusal("shell", shell("git push origin main")) == "Bash(git push *)"
    assert gate.refusal("file_write", ("secrets/key",)) == "Write(secrets/**)"
    assert gate.refusal("file_write", ("src/a.py",)) is None
    assert gate.refusal("file_read", ("secrets/key",)) is None


def test_allow_rules_confine_and_deny_wins() -> None:
    """docs/inputs.md: "with `allow` rules a call must also match one" and "Deny wins over
    allow"."""
    gate = Gate(allow=["file_read", "file_write(src/**)"], deny=["file_write(src/gen/**)"])
    assert gate.refusal("file_read", ("x",)) is None
    assert gate.refusal("file_write", ("src/a.py",)) is None
    assert gate.refusal("file_write", ("src/gen/a.py",)) == "file_write(src/gen/**)"
    assert gate.refusal("shell", shell("ls")) == "file_read, file_write(src/**)"


def test_an_invalid_rule_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match="unknown tool 'Shell'"):
        Gate(deny=["Shell(ls)"])
