"""The exception tree and the one place that maps exceptions to exit codes.

    OrkeonError                      exit 1 unless a subclass says otherwise
    ├── UsageError                   exit 2: bad command line or --inputs; nothing ran
    │   └── InputError               carries one line per problem, each naming the field
    ├── StepError                    exit 1: a step cannot do its work with what it was
    │                                given (a plan without the role to repair, a file
    │                                outside the workspace); the step catches it and
    │                                reports it as its result, status "error"
    ├── ProviderError                exit 4: the model provider failed (auth, unreachable,
    │                                rate limits or server errors past the retries, a reply
    │                                that is no answer): try again later
    ├── BudgetExhausted              exit 3: carries which budget ran out
    │   └── Idle                     the no-progress watchdog ended a role: carries what
    │                                was silent (`budget.idle_seconds`)
    ├── Interrupted                  exit 130: SIGINT/SIGTERM
    └── RecordsError                 exit 1: the run could not write its records (a full
                                     disk, a read-only folder); the run ends "error"

Control-flow exceptions carry their payload (`BudgetExhausted.which`) and are caught in
one place: the step runner turns them into a result document, `exit_code_for` into an int.
"""

from __future__ import annotations

from . import escape
from .vocabulary import spent_text

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_BUDGET = 3
EXIT_PROVIDER = 4
EXIT_INTERRUPTED = 130


class OrkeonError(Exception):
    exit_code = EXIT_FAILED
    status = "error"


class UsageError(OrkeonError):
    exit_code = EXIT_USAGE


class InputError(UsageError):
    """Invalid --inputs (or a file it names). `problems` holds one line per problem."""

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class StepError(OrkeonError):
    """What a step reports as its result (status "error", exit 1) instead of raising:
    caught by the step (run/steps/outcome.py `error_outcome`)."""


class ProviderError(OrkeonError):
    """Caught by the agent loop: the role ends "failed", and the step's exit is 4 when
    nothing else went wrong (`exit_code_of`)."""

    exit_code = EXIT_PROVIDER
    status = "failed"


class BudgetExhausted(OrkeonError):
    exit_code = EXIT_BUDGET
    status = "budget_exhausted"

    def __init__(self, which: str, whose: str = "step") -> None:
        self.which = which
        self.whose = whose  # "step", or "role": the role's own limit (budget.per_role)
        super().__init__(spent_text(which, whose))


class Idle(BudgetExhausted):
    """The no-progress watchdog (`budget.idle_seconds`; docs/inputs.md, "The no-progress
    watchdog"): the role's model sent no bytes, or its tool, hook or MCP call printed
    nothing and did not end, for that long. `silent` names it: `{"kind":
    "provider"|"tool"|"hook"|"mcp", "name", "command", "seconds"}` (the result's role
    `idle`, the `role.idle` event)."""

    def __init__(self, silent: dict[str, object]) -> None:
        self.silent = silent
        self.which = "idle"
        self.whose = "role"
        OrkeonError.__init__(self, idle_text(silent))


def idle_text(silent: dict[str, object]) -> str:
    """`no progress for 5 s: the shell tool (sleep 99) printed nothing and did not end`."""
    kind, name, command = silent.get("kind"), silent.get("name"), silent.get("command")
    what = {
        "provider": f"the model provider {name} sent no bytes",
        "tool": f"the {name} tool"
        + (f" ({command})" if command else "")
        + " printed nothing and did not end",
        "hook": f"the hook {name}"
        + (f" ({command})" if command else "")
        + " printed nothing and did not end",
        "mcp": f"the MCP server {name}"
        + (f"'s tool {command}" if command else "")
        + " did not answer",
    }.get(str(kind), f"{name} was silent")
    return f"no progress for {float(str(silent.get('seconds') or 0)):g} s: {what}"


class Interrupted(OrkeonError):
    exit_code = EXIT_INTERRUPTED
    status = "interrupted"


class RecordsError(OrkeonError):
    """A record of the run (events.jsonl, a transcript, state.json, result.json, the
    run's seal) could not be written: the run cannot go on keeping its records, so it
    stops with status "error" and this message (`no space left on device while writing
    PATH`)."""

    @classmethod
    def writing(cls, path: object, exc: OSError) -> RecordsError:
        return cls(f"{os_reason(exc)} while writing {path}")


def os_reason(exc: OSError) -> str:
    """`No space left on device` -> `no space left on device`: the OS's words, as a
    clause."""
    text = exc.strerror or str(exc) or type(exc).__name__
    return text[:1].lower() + text[1:]


def exit_code_for(exc: BaseException) -> int:
    """The exit-code contract (docs/output.md, "Exit codes"), in one place."""
    if isinstance(exc, OrkeonError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    return EXIT_FAILED


# A step's status (result document) and its exit code.
STATUS_EXIT = {
    "succeeded": EXIT_OK,
    "failed": EXIT_FAILED,
    "error": EXIT_FAILED,
    "budget_exhausted": EXIT_BUDGET,
    "interrupted": EXIT_INTERRUPTED,
}


def exit_code_of(status: str, kind: str | None) -> int:
    """The exit code of a result: its status's, except a step that failed because its
    model provider did (`error.kind` "provider"), which exits 4: the work did not fail."""
    if status == "failed" and kind == "provider":
        return EXIT_PROVIDER
    return STATUS_EXIT[status]


def one_line(text: str) -> str:
    """`text` with its control characters escaped (`\\n`, `\\x00`, a lone `\\ud800`) by
    escape.py's rule: a problem names fields and values from the document, and a key
    holding a newline split its `orkeon: FIELD: message` line in two."""
    return escape.text(text)
