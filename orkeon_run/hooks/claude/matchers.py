"""Matchers of settings-shape hooks (docs/hooks.md, "Matchers").

A matcher is a JavaScript-style regular expression tested against one field of the event
(the tool name for PreToolUse/PostToolUse, `source` for SessionStart, `trigger` for
PreCompact, `reason` for SessionEnd). It is anchored at both ends. Omitted, `""` or `"*"`
matches everything. A pattern that is not a valid JavaScript regex is compared as plain
text. Events with no match field (UserPromptSubmit, Notification, Stop, SubagentStop) only
run match-everything groups.

Tool names: a tool matches when the matcher matches its orkeon name or one of its aliases,
Claude Code's (`Write|Edit` matches file_write and file_edit) or OrbCode's
(`execute_command` matches shell). An MCP tool has one name, `mcp__SERVER__TOOL`, as in
Claude Code (`mcp__.*`, `mcp__git__.*`).

Matching runs on Python's `regex` module with a time limit, so a pattern that backtracks
without end cannot hang a run: a match that runs out of time counts as a match (the hook
runs; a guard is never skipped because its pattern is slow) and is logged once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ... import logs
from ...catalog import TOOLS
from ...config.inputs import SETTINGS_EVENTS, MatcherGroup, SettingsCommand

# Events whose matcher is tested against a field, and that field's name.
MATCH_FIELDS: dict[str, str] = {
    "PreToolUse": "tool_name",
    "PostToolUse": "tool_name",
    "SessionStart": "source",
    "PreCompact": "trigger",
    "SessionEnd": "reason",
}

MATCH_SECONDS = 0.05


def tool_names(tool: str) -> tuple[str, ...]:
    """The names a matcher is tested against: the catalog's (orkeon's first), or the
    tool's own name for a tool the catalog does not hold."""
    entry = TOOLS.get(tool)
    return entry.names if entry else (tool,)


def matches_all(pattern: str | None) -> bool:
    return pattern is None or pattern in ("", "*")


def _js_group_syntax_ok(pattern: str) -> bool:
    """False when the pattern uses a `(?` form JavaScript rejects: inline flags `(?i)`,
    Python's `(?P<name>…)`, atomic groups, comments. Python accepts them; JavaScript (and
    so Claude Code) does not, so they fall back to plain-text comparison here too."""
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "(" and pattern.startswith("(?", i):
            rest = pattern[i + 2 : i + 4]
            if not rest:
                return False
            if rest[0] in ":=!":
                pass
            elif rest[0] == "<":
                if len(rest) < 2 or not (rest[1] in "=!" or rest[1].isalpha() or rest[1] in "_$"):
                    return False
            else:
                return False
        i += 1
    return True


class Matcher:
    """One group's matcher, compiled once; results are remembered per value, since a run
    sees only a handful of tool names and sources."""

    __slots__ = ("_cache", "_re", "match_all", "pattern", "slow")

    def __init__(self, pattern: str | None) -> None:
        self.pattern = pattern
        self.match_all = matches_all(pattern)
        self._re: Any = None  # a compiled `regex` pattern
        self._cache: dict[str, bool] = {}
        self.slow = False  # a match ran out of time at least once
        if not self.match_all and pattern is not None and _js_group_syntax_ok(pattern):
            import regex  # ~30 ms to import: only runs that have a regex matcher pay it

            try:
                # ASCII: `\w`, `\d`, `\b` mean what they mean in JavaScript.
                self._re = regex.compile(pattern, flags=regex.ASCII | regex.V0)
            except (regex.error, ValueError, OverflowError):
                self._re = None

    @property
    def is_regex(self) -> bool:
        return self._re is not None

    def matches(self, value: str) -> bool:
        if self.match_all:
            return True
        hit = self._cache.get(value)
        if hit is None:
            hit = self._test(value)
            self._cache[value] = hit
        return hit

    def matches_tool(self, tool: str) -> bool:
        return self.match_all or any(self.matches(name) for name in tool_names(tool))

    def may_match_after(self, prefix: str) -> bool:
        """Whether a name starting with `prefix` could match: the tools of an MCP server
        (`mcp__git__`), whose names are known only once it runs. A match that runs out of
        time counts, as in `matches`."""
        if self.match_all:
            return True
        if self._re is None:
            return self.pattern is not None and self.pattern.startswith(prefix)
        try:
            found = self._re.fullmatch(prefix, partial=True, timeout=MATCH_SECONDS)
        except TimeoutError:
            return True
        return found is not None

    def _test(self, value: str) -> bool:
        if self._re is None:
            return value == self.pattern
        try:
            return self._re.fullmatch(value, timeout=MATCH_SECONDS) is not None
        except TimeoutError:
            if not self.slow:
                self.slow = True

                logs.get("orkeon.hooks").warning(
                    "hook matcher ran out of time; the hook runs",
                    matcher=self.pattern,
                    value=value,
                )
            return True


class Selection:
    """Which hooks of a settings-shape configuration run for one event: its matcher groups
    in configuration order (groups with no hooks, and events orkeon does not know, left
    out), each event-and-value answer kept once found."""

    def __init__(self, config: Mapping[str, Sequence[MatcherGroup]]) -> None:
        self._groups: dict[str, list[tuple[Matcher, Sequence[SettingsCommand]]]] = {}
        for event, groups in config.items():
            kept: list[tuple[Matcher, Sequence[SettingsCommand]]] = [
                (Matcher(g.matcher), g.hooks) for g in groups if g.hooks
            ]
            if event in SETTINGS_EVENTS and kept:
                self._groups[event] = kept
        self._selected: dict[tuple[str, str | None], list[SettingsCommand]] = {}

    def has(self, event: str) -> bool:
        return event in self._groups

    def commands(self, event: str, value: str | None = None) -> list[SettingsCommand]:
        """The hooks that run for `event` on `value` (the tool, source, trigger or reason),
        in configuration order, identical commands once (the first one's timeout)."""
        key = (event, value)
        found = self._selected.get(key)
        if found is not None:
            return found
        field = MATCH_FIELDS.get(event)
        found = []
        seen: set[str] = set()
        for matcher, hooks in self._groups.get(event, ()):
            if field is None or value is None:
                hit = matcher.match_all
            elif field == "tool_name":
                hit = matcher.matches_tool(value)
            else:
                hit = matcher.matches(value)
            if not hit:
                continue
            for h in hooks:
                if h.command not in seen:
                    seen.add(h.command)
                    found.append(h)
        self._selected[key] = found
        return found


__all__ = ["MATCH_FIELDS", "Matcher", "Selection", "matches_all", "tool_names"]
