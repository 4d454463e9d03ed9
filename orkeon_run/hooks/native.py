"""Native hooks (docs/hooks.md, "Native hooks").

`{"event": "pre-tool" | "post-tool" | "stop", "command": "PROGRAM ARG…"}`, numbered from 1 in
the order given, across all events. Before a hook runs, `{tool}`, `{event}` and `{path}` are
replaced in its command; the command is split into one program and its arguments (the
shell operators are refused again here), the program must pass the shell tool's program
rules, and it runs with no shell, stdin /dev/null, in the workspace, through `spawn` (proc under the veil). The
gate does not check it. `stop` hooks are stored and listed, never run.

Only the pipeline runs these (and `orkeon hooks check`, by hand): orkeon's own commands
(the audit's git, build and tests) and a tool's inner work never reach a hook.

A hook also gets the call in its environment, so a guard can see a path `{path}` cannot
show: `ORKEON_HOOK_PATH` (the path argument exactly as the model wrote it, also where
`{path}` is `-`; empty for a call without one), `ORKEON_HOOK_TOOL`, `ORKEON_HOOK_EVENT`.

Where the native contract leaves a choice (docs/hooks.md says what was chosen):
- LINE is the first non-blank line, error output first, cut to 1000 characters (`…` marks
  a cut); a hook that printed nothing reads `exited CODE: (no output)`.
- The time-out text names the limit that applied: `ran longer than 60 s`, or less when the
  step's budget left less (`ran longer than 0.4 s`).
- In the `tool.call` event, a hook that could not run has `exit_code` null and its reason
  as `first_line`.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from ..calls import CallContext, CheckedCall, HookRun, Refusal, budget_refusal
from ..config.pins import NO_PINS, Pins
from ..errors import Idle
from ..ledger import Ledger
from ..policy.words import CommandRefused, split_command
from . import spawn
from .protocol import Hooks, PostToolVerdict, PreToolVerdict

HOOK_LIMIT = 60.0  # seconds; a hook's limit is the smaller of this and the budget left
LINE_CHARS = 1000  # of the first line a hook printed, in the text the model reads
EVENTS = ("pre-tool", "post-tool", "stop")
RUN_EVENTS = ("pre-tool", "post-tool")  # stop hooks are stored and listed, never run

_PATH_OK = frozenset("._/@+=,:-")
_WORDS = re.compile(r"\{(tool|event|path)\}")


class ProgramRules(Protocol):
    """The shell tool's program rules (`shellrules.ShellRules`)."""

    def refusal(self, argv: list[str]) -> str | None: ...


class HookSpec(Protocol):
    """A native hook as the inputs give it (`inputs.NativeHook`)."""

    @property
    def event(self) -> str: ...

    @property
    def command(self) -> str: ...


@dataclass(frozen=True)
class NativeHook:
    """A native hook with its number `n` (1-based, across all events)."""

    n: int
    event: str
    command: str


def number(hooks: Sequence[HookSpec]) -> tuple[NativeHook, ...]:
    """Number hooks from 1 in the order given, across all events."""
    return tuple(NativeHook(i, h.event, h.command) for i, h in enumerate(hooks, start=1))


def path_word(path: object) -> str:
    """`{path}`: the call's path as the model wrote it when it holds only letters, digits
    and `._/@+=,:-` and does not start with `-`; `-` otherwise, or without one."""
    if not isinstance(path, str) or not path or path.startswith("-"):
        return "-"
    for ch in path:
        if not (ch in _PATH_OK or ch.isalpha() or ch.isdecimal()):
            return "-"
    return path


def expand(command: str, *, tool: str, event: str, path: object) -> str:
    """The command with `{tool}`, `{event}` and `{path}` replaced (in one pass, so a
    replacement is never replaced again)."""
    words = {"tool": tool, "event": event, "path": path_word(path)}
    return _WORDS.sub(lambda m: words[m.group(1)], command)


def argv_for(command: str, *, tool: str, event: str, path: object) -> list[str]:
    """`split_command(expand(command, …))`, without splitting the command again at each
    call: the command is split once (cached) and the words are replaced in each argument.
    The two are the same because a replacement holds no whitespace, quote, backslash or
    shell-operator character (tool and event names, and `path_word`). Raises CommandRefused
    like `split_command`."""
    template = _split_template(command)
    words = {"tool": tool, "event": event, "path": path_word(path)}
    return [_WORDS.sub(lambda m: words[m.group(1)], w) if "{" in w else w for w in template]


@lru_cache(maxsize=256)
def _split_template(command: str) -> tuple[str, ...]:
    return tuple(split_command(command))


def hook_environ(
    env: Mapping[str, str] | None, tool: str, event: str, path: object
) -> dict[str, str]:
    """`env` (None: orkeon's own) with the call: ORKEON_HOOK_PATH (the path as written;
    "" without one), ORKEON_HOOK_TOOL, ORKEON_HOOK_EVENT."""
    out = dict(os.environ if env is None else env)
    out["ORKEON_HOOK_PATH"] = path if isinstance(path, str) else ""
    out["ORKEON_HOOK_TOOL"] = tool
    out["ORKEON_HOOK_EVENT"] = event
    return out


@dataclass
class NativeRun:
    """One run of a native hook: its event record and, when it failed, the line the model
    reads (`[pre-tool hook #N (CMD) exited CODE: LINE]` and the other forms)."""

    run: HookRun
    line: str | None
    idle: dict[str, object] | None = None  # the watchdog stopped it: what was silent

    @property
    def ok(self) -> bool:
        return self.line is None


def _limit_text(limit: float) -> str:
    return f"{limit:.3g}"


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


async def run_hook(
    hook: NativeHook,
    *,
    tool: str,
    path: object,
    workspace: Path,
    program_rules: ProgramRules,
    limit: float = HOOK_LIMIT,
    env: Mapping[str, str] | None = None,
    pins: Pins = NO_PINS,
    idle: float | None = None,
) -> NativeRun:
    """Run one pre-tool or post-tool hook for a call of `tool` whose path argument (as the
    model wrote it) is `path`. Never raises for a hook that fails or cannot run.

    `limit` is the hook's time limit (the pipeline passes `ledger.cap(60)`); the time-out
    text names it, so it reads `ran longer than 60 s` unless the budget cut it shorter.
    `env` is the shell tool's environment (None: orkeon's own), since a hook runs "with the
    shell tool". A hook whose files (`pins`: the run's pinned files, config/pins.py) changed
    since the run started is not run: `could not run: FILE changed since the run started`.
    With `idle` (the watchdog, docs/inputs.md, "The no-progress watchdog"), a hook that
    prints nothing for that long and does not end is killed with its process group:
    `NativeRun.idle`.
    """
    if hook.event not in RUN_EVENTS:
        raise ValueError(f"hook #{hook.n}: {hook.event} hooks are stored, not run")
    cmd = expand(hook.command, tool=tool, event=hook.event, path=path)
    head = f"[{hook.event} hook #{hook.n} ({cmd})"
    started = time.monotonic()

    def cannot_run(reason: str, seconds: float = 0.0) -> NativeRun:
        run = HookRun(hook.n, hook.event, cmd, None, seconds, False, reason)
        return NativeRun(run, f"{head} could not run: {reason}]")

    try:
        argv = argv_for(hook.command, tool=tool, event=hook.event, path=path)
    except CommandRefused as exc:
        return cannot_run(str(exc), time.monotonic() - started)
    refused = program_rules.refusal(argv)
    if refused is not None:
        return cannot_run(refused, time.monotonic() - started)
    if pins.digests:  # the command as configured: `{path}` is the model's, not a file of it
        changed = pins.changed(_split_template(hook.command))
        if changed:
            why = f"{', '.join(changed)} changed since the run started"
            return cannot_run(why, time.monotonic() - started)

    res = await spawn.arun(
        argv,
        cwd=workspace,
        timeout=limit,
        env=hook_environ(env, tool, hook.event, path),
        idle=idle if idle is not None and idle < limit else None,
    )
    if res.error is not None:
        return cannot_run(res.error, res.seconds)
    first = _cut(res.first_line())
    run = HookRun(hook.n, hook.event, cmd, res.exit_code, res.seconds, res.timed_out, first)
    if res.idle and idle is not None:
        silent = {"kind": "hook", "name": f"#{hook.n} ({hook.event})", "command": cmd}
        return NativeRun(
            run, f"{head} printed nothing for {idle:g} s]", {**silent, "seconds": idle}
        )
    if res.timed_out:
        return NativeRun(run, f"{head} ran longer than {_limit_text(limit)} s]")
    if res.exit_code != 0:
        return NativeRun(run, f"{head} exited {res.exit_code}: {first or '(no output)'}]")
    return NativeRun(run, None)


def budget_spent(hook: NativeHook, *, tool: str, path: object, reason: str) -> NativeRun:
    """A hook that cannot run because the time budget is spent (`reason`: whose,
    Ledger.time_spent_text)."""
    cmd = expand(hook.command, tool=tool, event=hook.event, path=path)
    run = HookRun(hook.n, hook.event, cmd, None, 0.0, False, reason)
    return NativeRun(run, f"[{hook.event} hook #{hook.n} ({cmd}) could not run: {reason}]")


class NativeHooks(Hooks):
    """The native hooks of a step as one hook set: pre-tool hooks in order, the first that
    fails refuses the call and later ones do not run; post-tool hooks all run, in order,
    each failing one adding its line. Both see `{path}` as the model wrote it."""

    def __init__(
        self,
        hooks: Sequence[HookSpec],
        *,
        workspace: Path,
        program_rules: ProgramRules,
        env: Mapping[str, str] | None = None,
        pins: Pins = NO_PINS,
    ) -> None:
        """`hooks` in input order (`inputs.NativeHook`); numbered here from 1, across all
        events. `env` is the shell tool's environment: a hook runs "with the shell tool".
        `pins`: the run's pinned files; a hook whose files changed is not run."""
        self.hooks = number(hooks)
        self.pre = tuple(h for h in self.hooks if h.event == "pre-tool")
        self.post = tuple(h for h in self.hooks if h.event == "post-tool")
        self.workspace = workspace
        self.program_rules = program_rules
        self.env = env
        self.pins = pins

    async def _run(
        self, hook: NativeHook, call: CheckedCall, limit: float, ledger: Ledger
    ) -> NativeRun:
        nr = await run_hook(
            hook,
            tool=call.name,
            path=call.raw_path,
            workspace=self.workspace,
            program_rules=self.program_rules,
            limit=limit,
            env=self.env,
            pins=self.pins,
            idle=ledger.idle_seconds,
        )
        ledger.charge("hook", nr.run.seconds)
        if nr.idle is not None:  # the role ends (agent/loop.py); its call does not go on
            raise Idle(nr.idle)
        return nr

    async def pre_tool(
        self, ctx: CallContext, call: CheckedCall, call_id: str, ledger: Ledger
    ) -> PreToolVerdict:
        out = PreToolVerdict()
        for hook in self.pre:
            limit = ledger.cap(HOOK_LIMIT)
            if limit <= 0:
                out.refusal = budget_refusal(ledger)
                return out
            nr = await self._run(hook, call, limit, ledger)
            out.runs.append(nr.run)
            if nr.line is not None:
                if nr.run.timed_out and limit < HOOK_LIMIT:
                    # The budget, not the hook's own 60 s, stopped it: the model reads the
                    # documented budget text, not a time-out the contract does not name.
                    out.refusal = budget_refusal(ledger)
                else:
                    out.refusal = Refusal("hook", nr.line)
                return out
        return out

    async def post_tool(
        self,
        ctx: CallContext,
        call: CheckedCall,
        result: Any,
        call_id: str,
        ledger: Ledger,
        pre: PreToolVerdict,
    ) -> PostToolVerdict:
        out = PostToolVerdict(lines=list(pre.context_lines))
        for hook in self.post:
            limit = ledger.cap(HOOK_LIMIT)
            if limit <= 0:
                nr = budget_spent(
                    hook, tool=call.name, path=call.raw_path, reason=ledger.time_spent_text()
                )
            else:
                nr = await self._run(hook, call, limit, ledger)
                if nr.run.timed_out and limit < HOOK_LIMIT:  # cut short by the budget
                    ledger.refuse()
                    nr = NativeRun(
                        nr.run,
                        budget_spent(
                            hook,
                            tool=call.name,
                            path=call.raw_path,
                            reason=ledger.time_spent_text(),
                        ).line,
                    )
            out.runs.append(nr.run)
            if nr.line is not None:
                out.lines.append(nr.line)
        return out
