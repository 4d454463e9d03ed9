"""Rules (`tool` or `tool(pattern)`) and the step's rule sets (docs/inputs.md, "Rule syntax",
"Rule sets").

A rule names one tool, by its orkeon name or its Claude Code alias (`Bash`, `Write`, `Edit`,
`Read`, `Glob`, `Grep`), or tools of an MCP server as Claude Code's permission rules do:
`mcp__git__git_commit` (that tool), `mcp__git__*` or `mcp__git` (every tool of the server
`git`); an MCP rule takes no pattern. Without a pattern a rule matches every call of its
tool. With one:

- file tools: a gitignore-style glob (`pathglob.PathGlob`: pathspec's gitwildmatch, git's
  semantics), matched against the workspace-relative resolved path of the call (`src/**`,
  `*.py`, `/README.md` anchored at the workspace root, `build/` a directory and all under it).
  A directory is matched as `DIR` and as `DIR/`. Negation (`!x`) is refused: write a deny
  rule.
- shell (a tool with a command field, catalog.Tool.command_field): a command pattern where
  `*` matches any run of characters and `\\*` a literal star; the rest is literal. As in
  Claude Code, a trailing ` *` also matches the bare command (`shell(git diff *)` matches
  `git diff`), and the legacy `git diff:*` means the same. The pattern is matched against
  the command as written (trimmed) and against its words (as the pipeline's check split
  them, once) joined by single spaces, so quoting (`"git" push`) or extra spaces cannot slip
  past a deny rule.

`RuleSet.refusal` answers with the RULE to name in the refusal text, or None. Deny wins
over allow; with allow rules, a call must also match one of them. When a call is refused
because no allow rule matched, RULE is the set's allow rules joined by ", ". A rule set
may also name program checks (policy/progchecks.py), which read a shell command's words
as its program does; a check that refuses is a deny rule whose RULE is `CHECK: WHY`.

Matching takes time linear in the path or command for a given pattern, with no time
limit: the model writes the subject, and the old regexes backtracked for seconds to minutes
on a long one (`shell(*a*a*b)` on a 3 kB command, `file_write(**/a/**/a/**/b)` on a deep
path). So a verdict depends only on the rule and the call, never on the machine's load.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..catalog import TOOLS, canonical
from .mcpnames import is_mcp_name, server_prefix, split_pattern
from .pathglob import STAR, PathGlob, star_glob_regex
from .progchecks import ProgramCheck, check_named

if TYPE_CHECKING:
    from ..calls import CheckedCall

_RULE_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\((.*)\))?$", re.DOTALL)


def _command_matcher(pattern: str) -> Callable[[str], object]:
    if pattern.endswith(":*") and not pattern.endswith("\\:*"):
        pattern = pattern[:-2] + " *"  # Claude Code's legacy prefix form
    # The characters, STAR for an unescaped `*`; `\*` is a literal star, `\\` a backslash.
    chars: list[str | None] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern) and pattern[i + 1] in "*\\":
            chars.append(pattern[i + 1])
            i += 2
            continue
        chars.append(STAR if ch == "*" else ch)
        i += 1
    if chars.count(STAR) == 1 and chars[-1] is STAR:
        head = "".join(c for c in chars if c is not STAR)
        if head.endswith(" ") and head.strip():
            # `git diff *`: any arguments, or none.
            return re.compile(re.escape(head[:-1]) + r"(?:\s.*)?\Z", re.DOTALL).match
    tokens = [STAR if c is STAR else re.escape(c) for c in chars]
    return re.compile(star_glob_regex(tokens, "."), re.DOTALL).match


@dataclass(frozen=True)
class Rule:
    """One parsed rule. `text` is the rule as written (named in refusal texts)."""

    text: str
    tool: str
    pattern: str | None = None
    # Whether a subject matches (truthy) or not; None for a rule with no pattern.
    matcher: Callable[[str], object] | None = field(default=None, compare=False, repr=False)
    # The rule names every tool whose name starts with `tool` (`mcp__git__`: `mcp__git__*`).
    prefix: bool = False

    def matches(self, tool: str, subjects: Sequence[str]) -> bool:
        """Whether this rule matches a call of `tool` whose subjects are `subjects` (see
        `call_subjects`). A pattern rule matches no call that has no subject."""
        if tool != self.tool and not (self.prefix and tool.startswith(self.tool)):
            return False
        if self.matcher is None:
            return True
        return any(self.matcher(s) for s in subjects)


def parse_rule(text: str) -> Rule:
    """Parse `tool` or `tool(pattern)`; raise ValueError with a message naming the problem."""
    if not isinstance(text, str):
        raise ValueError("a rule must be a string")
    text = text.strip()
    if is_mcp_name(text):
        return _mcp_rule(text)
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
        command = TOOLS[tool].command_field is not None
        matcher = _command_matcher(pattern) if command else PathGlob(pattern).match
    except ValueError as exc:
        raise ValueError(f"rule {text!r}: {exc}") from None
    return Rule(text=text, tool=tool, pattern=pattern, matcher=matcher)


def _mcp_rule(text: str) -> Rule:
    name, paren, _ = text.partition("(")
    if paren:
        raise ValueError(f"rule {text!r}: an MCP tool's rule takes no pattern: write {name}")
    parts = split_pattern(text)
    if parts is None:
        raise ValueError(
            f"{text!r} is not an MCP rule: write mcp__SERVER__TOOL, mcp__SERVER__* or "
            "mcp__SERVER (letters, digits, '_' and '-')"
        )
    server, tool = parts
    if tool is None:
        return Rule(text=text, tool=server_prefix(server), prefix=True)
    return Rule(text=text, tool=text)


def parse_rules(texts: Iterable[str]) -> tuple[Rule, ...]:
    return tuple(parse_rule(t) for t in texts)


def call_subjects(call: CheckedCall, rel_path: str | None, is_dir: bool = False) -> tuple[str, ...]:
    """What a pattern rule is matched against for one checked call.

    A tool with a command field (the catalog's `command_field`: the shell): the command as
    written (trimmed) and the words the check split (`call.words`, never split again here)
    joined by single spaces. File tools: the workspace-relative resolved path (`rel_path`;
    None when the call has no path or it resolved outside the workspace), plus `PATH/` for
    a directory of a tool whose path may name a folder (`is_dir`, the catalog's `folder`).
    """
    if call.tool.command_field is not None:
        command = call.command
        if command is None:
            return ()
        raw = command.strip()
        if call.words is None:
            return (raw,)
        words = " ".join(call.words)
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
    checks: tuple[ProgramCheck, ...] = ()

    @classmethod
    def parse(
        cls,
        name: str,
        allow: Iterable[str] = (),
        deny: Iterable[str] = (),
        checks: Iterable[str] = (),
    ) -> RuleSet:
        return cls(
            name=name,
            allow=parse_rules(allow),
            deny=parse_rules(deny),
            checks=tuple(check_named(c) for c in checks),
        )

    def refusal(
        self, tool: str, subjects: Sequence[str], argv: Sequence[str] | None = None
    ) -> str | None:
        """The RULE that refuses this call, or None when the set lets it through. `argv`:
        a command's words as the check split them (`CheckedCall.words`), for the program
        checks (None: another tool, or a command that cannot be split, which the shell tool
        refuses anyway)."""
        for rule in self.deny:
            if rule.matches(tool, subjects):
                return rule.text
        if argv is not None:
            for check in self.checks:
                why = check.refusal(argv)
                if why is not None:
                    return why
        if self.allow and not any(r.matches(tool, subjects) for r in self.allow):
            return ", ".join(r.text for r in self.allow)
        return None
