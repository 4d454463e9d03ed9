"""The host gate: the session's allow/deny rules (`--inputs` `gate`, docs/inputs.md).

The first stage a call passes after its input is checked. It uses the rules of `rules.py`:
with no allow rules every call no deny rule matches passes; with allow rules a call must
also match one; deny wins. A call the gate refuses never reaches the rule sets or a hook.
Hook commands are not checked here: they run from orkeon's own code.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .rules import RuleSet


class Gate:
    def __init__(self, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> None:
        """Raises ValueError (naming the rule) when a rule does not parse."""
        self.rules = RuleSet.parse("gate", allow, deny)

    @classmethod
    def from_inputs(cls, rules: object) -> Gate:
        """From `inputs.GateRules` (anything with `allow` and `deny` lists)."""
        return cls(getattr(rules, "allow", ()), getattr(rules, "deny", ()))

    @property
    def empty(self) -> bool:
        return not self.rules.allow and not self.rules.deny

    def refusal(self, tool: str, subjects: Sequence[str]) -> str | None:
        """The rule that refuses the call (see `RuleSet.refusal`), or None."""
        return self.rules.refusal(tool, subjects)
