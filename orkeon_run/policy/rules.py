"""Rules (`tool` or `tool(pattern)`) and the step's rule sets (INTERFACE section 2).

A rule names one tool, by its orkeon name or its Claude Code alias (`Bash`, `Write`, `Edit`,
`Read`, `Glob`, `Grep`). Without a pattern it matches every call of that tool. With one:

- file tools: a gitignore-style glob (pathspec's gitwildmatch, git's own semantics),
  matched against the workspace-relative resolved path of the call (`src/**`, `*.py`,
  `/README.md` anchored at the workspace root, `build/` a directory and all under it).
  A directory is matched as `DIR` and as `DIR/`. Negation (`!x`) is refused: write a deny
  rule.
- shell: a command pattern where `*` matches any run of characters and `\\*` a literal
  star; the rest is literal. As in Claude Code, a trailing ` *` also matches the bare
  command (`shell(git diff *)` matches `git diff`), and the legacy `git diff:*` means the
  same. The pattern is matched against the command as written (trimmed) and against its
  words joined by single spaces, so quoting (`"git" push`) or extra spaces cannot slip
  past a deny rule.

`RuleSet.refusal` answers with the RULE to name in the refusal text, or None. Deny wins
over allow; with allow rules, a call must also match one of them. When a call is refused
because no allow rule matched, RULE is the set's allow rules joined by ", ".

Matching time is bounded: the model writes the path or command, and a pattern with several
stars backtracks polynomially on a long one (`shell(*a*a*b)` on a 3 kB command took 5 s,
`file_write(**/a/**/a/**/b)` on a deep path minutes, all on the event loop). Such
patterns are matched with the `regex` module under a time limit, and a match that runs
out of time fails closed: a deny rule counts as matching, an allow rule as not.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..catalog import TOOLS, canonical
from .words import CommandRefused, split_command

_RULE_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\((.*)\))?$", re.DOTALL)
MATCH_SECONDS = 0.05  # per subject, for a pattern that can backtrack (see the docstring)


class MatchTimeout(Exception):
    """A pattern ran out of time on a subject (`RuleSet.refusal` fails closed)."""


class _Bounded:
    """A regex that can backtrack without end on a hostile subject, matched with the
    `regex` module (imported and compiled on first use) under MATCH_SECONDS."""

    __slots__ = ("_rx", "flags", "pattern")

    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern = pattern
        self.flags = flags
        self._rx: Any = None

    def match(self, subject: str) -> bool:
        if self._rx is None:
            import regex

            self._rx = regex.compile(self.pattern, flags=self.flags | regex.V0)
        try:
            return self._rx.match(subject, timeout=MATCH_SECONDS) is not None
        except TimeoutError:
            raise MatchTimeout(self.pattern) from None


@functools.cache
def _git_pattern() -> type:
    """Imported on first use: validating a gate with no path patterns need not load it."""
    # pathspec 1.x renamed gitwildmatch to gitignore's "basic" pattern (same regexes) and
    # warns on the old name; 0.12 only has the old one.
    try:
        from pathspec.patterns.gitignore.basic import GitIgnoreBasicPattern

        return GitIgnoreBasicPattern
    except ImportError:  # pragma: no cover - pathspec < 1.0
        from pathspec.patterns.gitwildmatch import GitWildMatchPattern

        return GitWildMatchPattern


def _path_regex(pattern: str) -> re.Pattern[str] | _Bounded:
    if pattern.startswith("!"):
        raise ValueError("a negated pattern ('!…') is not supported; write a deny rule")
    compiled = _git_pattern()(pattern)
    if compiled.include is None or compiled.regex is None:
        raise ValueError(f"{pattern!r} is not a path pattern")
    # DOTALL: a newline is an ordinary character in a file name; without it `.+` stopped at
    # one, and `file_write(**/secret.py)` did not match `x\ny/secret.py`.
    body = compiled.regex.pattern
    # `$` also matches before a final newline: `file_write(*.py)` must not allow `x.py\n`.
    # In pathspec's regexes an unescaped `$` is always an anchor (a literal one is `\$`).
    body = re.sub(r"(?<!\\)\$", lambda _: r"\Z", body)
    if "*" in body or "+" in body:
        return _Bounded(body, re.DOTALL)
    return re.compile(body, re.DOTALL)


def _command_regex(pattern: str) -> re.Pattern[str] | _Bounded:
    if pattern.endswith(":*") and not pattern.endswith("\\:*"):
        pattern = pattern[:-2] + " *"  # Claude Code's legacy prefix form
    # Split on unescaped stars; `\*` is a literal star, `\\` a literal backslash.
    parts: list[str] = []
    literal = ""
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern) and pattern[i + 1] in "*\\":
            literal += pattern[i + 1]
            i += 2
            continue
        if ch == "*":
            parts.append(literal)
            literal = ""
        else:
            literal += ch
        i += 1
    parts.append(literal)
    stars = len(parts) - 1
    if stars == 1 and parts[1] == "" and parts[0].endswith(" ") and parts[0].strip():
        # `git diff *`: any arguments, or none.
        body = re.escape(parts[0][:-1]) + r"(?:\s.*)?"
    else:
        body = ".*".join(re.escape(p) for p in parts)
        if stars > 1:
            return _Bounded(body + r"\Z", re.DOTALL)
    return re.compile(body + r"\Z", re.DOTALL)


@dataclass(frozen=True)
class Rule:
    """One parsed rule. `text` is the rule as written (named in refusal texts)."""

    text: str
    tool: str
    pattern: str | None = None
    regex: re.Pattern[str] | _Bounded | None = field(default=None, compare=False, repr=False)

    def matches(self, tool: str, subjects: Sequence[str], *, slow: bool = True) -> bool:
        """Whether this rule matches a call of `tool` whose subjects are `subjects` (see
        `call_subjects`). A pattern rule matches no call that has no subject. `slow` is
        the answer when the pattern runs out of time on a subject."""
        if tool != self.tool:
            return False
        if self.regex is None:
            return True
        try:
            return any(self.regex.match(s) for s in subjects)
        except MatchTimeout:
            return slow


def parse_rule(text: str) -> Rule:
    """Parse `tool` or `tool(pattern)`; raise ValueError with a message naming the problem."""
    if not isinstance(text, str):
        raise ValueError("a rule must be a string")
    text = text.strip()
    m = _RULE_RE.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not a rule: write TOOL or TOOL(PATTERN)")
    name, pattern = m.group(1), m.group(2)
    tool = canonical(name)
    if tool is None:
        names = ", ".join(TOOLS)
        aliases = ", ".join(t.claude_name for t in TOOLS.values())
        raise ValueError(f"unknown tool {name!r} in rule {text!r} (tools: {names}; {aliases})")
    if pattern is None:
        return Rule(text=text, tool=tool)
    if not pattern.strip():
        raise ValueError(f"empty pattern in rule {text!r}: write {name} to match every call")
    try:
        regex = _command_regex(pattern) if tool == "shell" else _path_regex(pattern)
    except ValueError as exc:
        raise ValueError(f"rule {text!r}: {exc}") from None
    return Rule(text=text, tool=tool, pattern=pattern, regex=regex)


def parse_rules(texts: Iterable[str]) -> tuple[Rule, ...]:
    return tuple(parse_rule(t) for t in texts)


def call_subjects(
    tool: str, input: dict[str, object], rel_path: str | None, is_dir: bool = False
) -> tuple[str, ...]:
    """What a pattern rule is matched against for one call.

    File tools: the workspace-relative resolved path (`rel_path`; None when the call has no
    path or it resolved outside the workspace), plus `PATH/` for a directory. Shell: the
    command as written (trimmed) and its words joined by single spaces.
    """
    if tool == "shell":
        command = input.get("command")
        if not isinstance(command, str):
            return ()
        raw = command.strip()
        try:
            words = " ".join(split_command(command))
        except CommandRefused:
            return (raw,)
        return (raw,) if words == raw else (raw, words)
    if rel_path is None:
        return ()
    if is_dir and rel_path not in ("", "."):
        return (rel_path, rel_path.rstrip("/") + "/")
    return (rel_path,)


@dataclass(frozen=True)
class RuleSet:
    """A named set of allow and deny rules (a step's rule set, or the gate's session rules)."""

    name: str
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()

    @classmethod
    def parse(cls, name: str, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> RuleSet:
        return cls(name=name, allow=parse_rules(allow), deny=parse_rules(deny))

    def refusal(self, tool: str, subjects: Sequence[str]) -> str | None:
        """The RULE that refuses this call, or None when the set lets it through."""
        for rule in self.deny:
            if rule.matches(tool, subjects, slow=True):  # fail closed: refuse
                return rule.text
        if self.allow and not any(r.matches(tool, subjects, slow=False) for r in self.allow):
            return ", ".join(r.text for r in self.allow)
        return None
