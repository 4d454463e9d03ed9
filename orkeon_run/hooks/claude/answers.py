"""What one settings-shape hook answered (docs/hooks.md, "Output: exit code and JSON").

Read from its exit code and its stdout:

- exit 2: a blocking error. Its reason is that of a blocking JSON answer on stdout
  (`decision: "block"` with `reason`, `permissionDecision: "deny"` or `"ask"` with
  `permissionDecisionReason`), as Claude Code reads it, even when stderr has text; else
  its stderr. Nothing else of a JSON answer counts on exit 2 (an `allow` does not unblock).
- any other exit: stdout that starts with `{` (after blank space) is parsed as the JSON
  control object, even on a non-zero exit, so a guard that prints a deny and exits 1
  still denies. A non-zero exit is also a non-blocking error (a warning).
- exit 0 with plain stdout: context for UserPromptSubmit and SessionStart, else ignored.
- a hook that could not start, ran out of time or had no budget left: a non-blocking
  problem; nothing it printed is used.

A JSON object whose `hookSpecificOutput.hookEventName` names another event is rejected
whole ("must match the event"); its fields are not used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from .run import Ran

PLAIN_CONTEXT_EVENTS = ("UserPromptSubmit", "SessionStart")

Decision = Literal["block", "deny", "ask", "allow", "unpinned"]


@dataclass
class Answer:
    ran: Ran
    blocking: bool = False  # exit 2
    exit2_reason: str = ""  # exit 2: a blocking JSON answer's reason, else its stderr
    decision: str | None = None  # "approve" | "block"
    reason: str = ""
    permission: str | None = None  # "allow" | "deny" | "ask"
    permission_reason: str = ""
    context: list[str] = field(default_factory=list)
    updated_input: dict[str, Any] | None = None
    stop: bool = False
    stop_reason: str | None = None
    system_message: str | None = None
    suppress_output: bool = False
    problems: list[str] = field(default_factory=list)
    # Not run: a file it names changed since the run started (the reason); a PreToolUse
    # hook then refuses the call, a PostToolUse hook adds a line.
    not_run: str | None = None

    @property
    def command(self) -> str:
        return self.ran.command

    def block_reason(self) -> str | None:
        """The reason of an exit 2 or a `decision: "block"`, else None (PostToolUse,
        UserPromptSubmit and Stop read only these)."""
        if self.blocking:
            return self.exit2_reason
        if self.decision == "block":
            return self.reason
        return None

    def refusal(self) -> tuple[Decision, str] | None:
        """The hook's say on a tool call or a prompt: (kind, reason), or None.

        exit 2 -> block; permissionDecision deny / ask; decision "block" -> block;
        permissionDecision allow or decision "approve" -> allow. The most restrictive one a
        hook gives counts."""
        if self.not_run is not None:
            return "unpinned", self.not_run
        if self.blocking:
            return "block", self.exit2_reason
        if self.permission == "deny":
            return "deny", self.permission_reason or self.reason
        if self.permission == "ask":
            return "ask", self.permission_reason or self.reason
        if self.decision == "block":
            return "block", self.reason
        if self.permission == "allow" or self.decision == "approve":
            return "allow", self.permission_reason or self.reason
        return None


def _str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, ensure_ascii=False)


def read_answer(event: str, ran: Ran) -> Answer:
    a = Answer(ran=ran)
    if ran.error:
        a.problems.append(f"could not run: {ran.error}")
        if ran.unpinned:
            a.not_run = ran.error
        return a
    if ran.timed_out:
        a.problems.append(f"ran longer than {ran.timeout:.3g} s and was stopped")
        return a
    code = ran.exit_code
    if code == 2:
        a.blocking = True
        a.exit2_reason = _json_reason(event, ran.stdout) or ran.stderr.strip()
        return a
    if code != 0:
        a.problems.append(f"exited {code} (a non-blocking error)")
    out = ran.stdout.strip()
    if out.startswith("{"):
        try:
            obj = json.loads(out)
        except json.JSONDecodeError as exc:
            a.problems.append(f"stdout starts with '{{' but is not JSON ({exc}); read as text")
            obj = None
        if isinstance(obj, dict):
            _apply_json(a, event, obj)
            return a
        if obj is not None:
            a.problems.append("stdout is JSON but not an object; read as text")
    if out and code == 0 and event in PLAIN_CONTEXT_EVENTS:
        a.context.append(out)
    return a


def _json_reason(event: str, stdout: str) -> str:
    """The reason of a blocking JSON answer on an exit 2's stdout, or "" (none there, or not
    a blocking one: the stderr is the reason then)."""
    out = stdout.strip()
    if not out.startswith("{"):
        return ""
    try:
        obj = json.loads(out)
    except json.JSONDecodeError:
        return ""
    if not isinstance(obj, dict):
        return ""
    hso = obj.get("hookSpecificOutput")
    if isinstance(hso, dict):
        if hso.get("hookEventName") not in (None, event):
            return ""  # an answer for another event is ignored whole, as on any exit
        if hso.get("permissionDecision") in ("deny", "ask"):
            return _str(hso.get("permissionDecisionReason")) or _str(obj.get("reason"))
    if obj.get("decision") == "block":
        return _str(obj.get("reason"))
    return ""


def _apply_json(a: Answer, event: str, obj: dict[str, Any]) -> None:
    hso = obj.get("hookSpecificOutput")
    if hso is not None and not isinstance(hso, dict):
        a.problems.append("hookSpecificOutput is not an object; ignored")
        hso = None
    if hso is not None:
        named = hso.get("hookEventName")
        if named is not None and named != event:
            a.problems.append(
                f"hookSpecificOutput.hookEventName is {named!r}, not {event!r}: "
                "the whole answer is ignored"
            )
            return

    if obj.get("continue") is False:
        a.stop = True
        a.stop_reason = _str(obj.get("stopReason")) or None
    a.suppress_output = obj.get("suppressOutput") is True
    if obj.get("systemMessage") is not None:
        a.system_message = _str(obj.get("systemMessage"))

    decision = obj.get("decision")
    if decision in ("approve", "block"):
        a.decision = decision
    elif decision is not None:
        a.problems.append(f"decision {decision!r} is not approve or block; ignored")
    a.reason = _str(obj.get("reason"))

    if hso is None:
        return
    permission = hso.get("permissionDecision")
    if permission in ("allow", "deny", "ask"):
        a.permission = permission
    elif permission is not None:
        a.problems.append(f"permissionDecision {permission!r} is not allow, deny or ask; ignored")
    a.permission_reason = _str(hso.get("permissionDecisionReason"))
    if "updatedInput" in hso:
        updated = hso["updatedInput"]
        if isinstance(updated, dict):
            a.updated_input = updated
        else:
            a.problems.append("updatedInput is not an object; ignored")
    ctx = hso.get("additionalContext")
    if ctx is not None:
        text = _str(ctx)
        if text:
            a.context.append(text)


__all__ = ["Answer", "read_answer"]
