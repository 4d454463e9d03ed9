"""Matchers of settings-shape hooks (Claude Code's hooks contract, docs/hooks.md,
"Matchers")."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kit.hooks import SETTINGS

from orkeon_run.catalog import TOOLS as CATALOG
from orkeon_run.catalog import claude_name
from orkeon_run.events import NullLog
from orkeon_run.hooks.claude.matchers import Matcher, tool_names
from orkeon_run.hooks.claude.settings import SettingsHooks

TOOLS = tuple(CATALOG)


def hits(pattern: str | None) -> set[str]:
    m = Matcher(pattern)
    return {t for t in TOOLS if m.matches_tool(t)}


def test_auto_anchored() -> None:
    """'The regex is auto-anchored (^…$), so "execute_command" matches exactly that tool
    name, not "execute_command_extra"'."""
    m = Matcher("file_write")
    assert m.matches("file_write")
    assert not m.matches("file_write_extra") and not m.matches("xfile_write")
    assert not Matcher("ite").matches("Write") and not Matcher("Writ").matches("Write")
    assert not Matcher("rit.").matches("Write")  # Claude Code matches substrings here


@pytest.mark.parametrize("pattern", [None, "", "*"])
def test_omitted_or_star_matches_everything(pattern: str | None) -> None:
    """'Omit it, or use "*", to match everything.' (An empty matcher too, as in Claude Code.)"""
    assert hits(pattern) == set(TOOLS)
    assert Matcher(pattern).matches("startup")


def test_alternation() -> None:
    """'use "a|b" for alternation'."""
    assert hits("file_write|file_edit") == {"file_write", "file_edit"}
    assert hits("(file_read|list_files)") == {"file_read", "list_files"}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("Write|Edit", {"file_write", "file_edit"}),
        ("Bash", {"shell"}),
        ("Read", {"file_read"}),
        ("Glob|Grep", {"list_files", "search_files"}),
        ("Wr.*", {"file_write"}),
        ("^Write$", {"file_write"}),
        ("[W]rite", {"file_write"}),
        (".*ite", {"file_write"}),
        ("execute_command", {"shell"}),  # OrbCode's names too
        ("read_file", {"file_read"}),
        ("file_.*", {"file_write", "file_edit", "file_read"}),
        ("write", set()),  # case-sensitive
        ("Bash(echo:*)", set()),
    ],
)
def test_claude_code_names_match_orkeon_tools(pattern: str, expected: set[str]) -> None:
    """Issue 4: 'Claude Code tool names match their orkeon tools (`Write|Edit` matches
    file_write and file_edit)'."""
    assert hits(pattern) == expected


def test_claude_names() -> None:
    claude = {
        "shell": "Bash", "file_write": "Write", "file_edit": "Edit", "file_read": "Read",
        "list_files": "Glob", "search_files": "Grep",
    }  # fmt: skip
    assert {t: claude_name(t) for t in claude} == claude
    assert claude_name("web_fetch") == "web_fetch"
    assert tool_names("shell") == ("shell", "Bash", "execute_command")


@pytest.mark.parametrize(
    "pattern", ["Write|Bash(", "[Write", "(?i)write", "(?P<x>Write)", "*Write"]
)
def test_invalid_regex_falls_back_to_exact_comparison(pattern: str) -> None:
    """'An invalid regex falls back to an exact-string comparison.' JavaScript's syntax
    decides: Python-only forms like `(?i)` and `(?P<x>…)` are invalid there."""
    m = Matcher(pattern)
    assert not m.is_regex
    assert m.matches(pattern)
    assert hits(pattern) == set()


def test_javascript_group_forms_are_regexes() -> None:
    for pattern in ("(?:Write|Edit)", "(?!Bash)\\w+", "(?<name>Write)", "(?<=W)rite|Write"):
        assert Matcher(pattern).is_regex, pattern
    # Every tool by its Claude Code name (capitalized), but the shell's.
    assert hits("(?!Bash$)[A-Z]\\w+") == set(TOOLS) - {"shell"}


def test_runaway_pattern_is_bounded() -> None:
    """Issue 4: 'a matcher regex that could run away is bounded ... so no matcher can hang a
    run.' A match that runs out of time counts as a match: the hook runs."""
    m = Matcher("(a|aa)+b")
    # `slow` says the match was cut at its time limit, and True that it counts as a match;
    # unbounded, 60 `a`s backtrack for hours (past the suite's 120 s hang guard).
    assert m.matches("a" * 60)
    assert m.slow


@given(st.sampled_from(TOOLS), st.data())
def test_each_name_of_a_tool_matches_it_alone(tool: str, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(tool_names(tool)))
    assert hits(name) == {tool}


# --- which groups run, per event ---------------------------------------------------------


def _hooks(tmp_path: Path, config: dict) -> SettingsHooks:
    return SettingsHooks(SETTINGS.validate_python(config), workspace=tmp_path, events=NullLog())


def _g(command: str, matcher: str | None = None) -> dict:
    g: dict = {"hooks": [{"type": "command", "command": command}]}
    if matcher is not None:
        g["matcher"] = matcher
    return g


def test_event_fields(tmp_path: Path) -> None:
    """'The Matcher column is the field the matcher regex is tested against': source for
    SessionStart, trigger for PreCompact, reason for SessionEnd."""
    h = _hooks(
        tmp_path,
        {
            "SessionStart": [_g("a", "startup"), _g("b", "resume"), _g("c")],
            "PreCompact": [_g("d", "manual"), _g("e", "auto")],
            "SessionEnd": [_g("f", "other|logout")],
        },
    )
    assert [c.command for c in h.commands("SessionStart", "startup")] == ["a", "c"]
    assert [c.command for c in h.commands("SessionStart", "resume")] == ["b", "c"]
    assert [c.command for c in h.commands("PreCompact", "auto")] == ["e"]
    assert [c.command for c in h.commands("SessionEnd", "other")] == ["f"]
    assert h.commands("SessionEnd", "prompt_input_exit") == []


def test_matcher_on_an_event_without_a_match_field_never_matches(tmp_path: Path) -> None:
    """'`matcher` on a no-match-field event (e.g. a matcher on Stop) — it will never match.'"""
    h = _hooks(
        tmp_path,
        {
            "Stop": [_g("a", "anything"), _g("b"), _g("c", "*")],
            "UserPromptSubmit": [_g("d", "Write")],
        },
    )
    assert [c.command for c in h.commands("Stop")] == ["b", "c"]
    assert h.commands("UserPromptSubmit") == []


def test_pre_tool_groups_in_configuration_order(tmp_path: Path) -> None:
    h = _hooks(
        tmp_path,
        {"PreToolUse": [_g("a", "Bash"), _g("b", "Write|Edit"), _g("c"), _g("b", "file_write")]},
    )
    assert [c.command for c in h.commands("PreToolUse", "file_write")] == ["b", "c"]
    assert [c.command for c in h.commands("PreToolUse", "shell")] == ["a", "c"]
    assert h.has("PreToolUse") and not h.has("PostToolUse")
