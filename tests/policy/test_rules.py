"""Rules and rule sets (docs/inputs.md): `tool` / `tool(pattern)`, aliases, deny wins."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kit.pipeline import subjects

from orkeon_run.policy.rules import RuleSet, parse_rule


def shell(command: str) -> tuple[str, ...]:
    return subjects("shell", {"command": command})


@pytest.mark.parametrize(
    ("alias", "tool"),
    [
        ("Bash", "shell"),
        ("Write", "file_write"),
        ("Edit", "file_edit"),
        ("Read", "file_read"),
        ("Glob", "list_files"),
        ("Grep", "search_files"),
        ("file_write", "file_write"),
    ],
)
def test_claude_code_aliases(alias: str, tool: str) -> None:
    """docs/inputs.md: "Claude Code's tool names are accepted as aliases in rules and matchers"."""
    assert parse_rule(alias).tool == tool
    assert parse_rule(f"{alias}(x)").tool == tool


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("Foo", "unknown tool 'Foo'"),
        ("bash", "unknown tool 'bash'"),
        ("Write()", "empty pattern"),
        ("Write(!src/**)", "negated"),
        ("Write(src", "is not a rule"),
        ("", "is not a rule"),
        ("shell git", "is not a rule"),
        ("Write([z-a])", "rule 'Write([z-a])': bad character range z-a"),  # was exit 1
        ("Write(#x)", "'#x' is not a path pattern"),
    ],
)
def test_invalid_rules_raise_value_error_naming_the_rule(text: str, needle: str) -> None:
    with pytest.raises(ValueError) as exc:
        parse_rule(text)
    assert needle in str(exc.value)


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("src/**", "src/a.py", True),
        ("src/**", "src/deep/b/c.ts", True),
        ("src/**", "srcx/a.py", False),
        ("src/**", "lib/src/a.py", False),
        ("*.py", "a.py", True),
        ("*.py", "deep/in/a.py", True),  # no slash: any depth, as in .gitignore
        ("*.py", "a.pyc", False),
        ("/README.md", "README.md", True),
        ("/README.md", "docs/README.md", False),
        ("generated/", "generated/x.ts", True),
        ("generated/", "src/generated/x.ts", True),
        ("docs/*.md", "docs/a.md", True),
        ("docs/*.md", "docs/sub/a.md", False),
        ("a/**/b.txt", "a/b.txt", True),
        ("a/**/b.txt", "a/x/y/b.txt", True),
        ("*/", "src/a.py", True),  # every path inside a folder (before: none at all)
        ("*/", "a.py", False),
    ],
)
def test_file_patterns_are_gitignore_globs(pattern: str, path: str, hit: bool) -> None:
    """docs/inputs.md: "a gitignore-style path glob for file tools (`file_write(src/**)`)"."""
    rule = parse_rule(f"file_write({pattern})")
    assert rule.matches("file_write", subjects("file_write", {}, path)) is hit


def test_a_directory_matches_a_directory_pattern() -> None:
    rule = parse_rule("list_files(build/)")
    assert rule.matches("list_files", subjects("list_files", {}, "build", is_dir=True))
    assert not rule.matches("list_files", subjects("list_files", {}, "build"))


def test_a_rule_names_one_tool() -> None:
    rule = parse_rule("Write(src/**)")
    assert not rule.matches("file_edit", ("src/a.py",))
    assert parse_rule("file_read").matches("file_read", ())


def test_a_pattern_rule_matches_no_call_without_a_subject() -> None:
    # e.g. a path that resolved outside the workspace: only bare rules can match it.
    assert not parse_rule("file_write(**)").matches("file_write", ())


@pytest.mark.parametrize(
    ("pattern", "command", "hit"),
    [
        ("git diff *", "git diff --stat", True),
        ("git diff *", "git diff", True),  # a trailing ` *` also matches no arguments
        ("git diff *", "git difftool", False),
        ("git diff *", "git  diff   x", True),  # words, however spaced
        ("git diff *", '"git" diff x', True),  # quoting cannot slip past
        ("git diff *", "git log", False),
        ("git * main", "git push origin main", True),
        ("npm run test:*", "npm run test", True),  # Claude Code's legacy prefix form
        ("npm run test:*", "npm run test --watch", True),
        ("npm run test:*", "npm run testx", False),
        ("ls", "ls", True),
        ("ls", "ls -la", False),
        ("echo \\*", "echo *", True),
        ("echo \\*", "echo x", False),
        ("*", "anything at all", True),
    ],
)
def test_shell_patterns_star_matches_any_run(pattern: str, command: str, hit: bool) -> None:
    """docs/inputs.md: "a command pattern for the shell tool (`shell(git diff *)`)"."""
    rule = parse_rule(f"shell({pattern})")
    assert rule.matches("shell", shell(command)) is hit


def test_deny_wins_over_allow() -> None:
    """docs/inputs.md: "Deny wins over allow"."""
    rs = RuleSet.parse("rs", allow=["file_write(src/**)"], deny=["Write(src/secret/**)"])
    assert rs.refusal("file_write", ("src/a.py",)) is None
    assert rs.refusal("file_write", ("src/secret/k",)) == "Write(src/secret/**)"


def test_no_allow_rules_allows_all_that_no_deny_matches() -> None:
    """docs/inputs.md: "With no `allow` rules the gate allows every call that no `deny` rule
    matches"."""
    rs = RuleSet.parse("rs", deny=["shell(git push *)"])
    assert rs.refusal("shell", shell("git status")) is None
    assert rs.refusal("file_write", ("x",)) is None
    assert rs.refusal("shell", shell("git push origin main")) == "shell(git push *)"


def test_with_allow_rules_a_call_must_match_one_and_rule_names_them_all() -> None:
    """docs/inputs.md: "with `allow` rules a call must also match one" — the refusal names the
    set's allow rules, joined by ", "."""
    rs = RuleSet.parse("rs", allow=["file_read", "file_write(docs/**)"])
    assert rs.refusal("file_read", ("x",)) is None
    assert rs.refusal("file_write", ("docs/a.md",)) is None
    assert rs.refusal("file_write", ("src/a.py",)) == "file_read, file_write(docs/**)"
    assert rs.refusal("shell", shell("ls")) == "file_read, file_write(docs/**)"


def test_empty_rule_set_allows_everything() -> None:
    assert RuleSet.parse("rs").refusal("shell", shell("rm -rf /")) is None


def test_a_path_pattern_does_not_match_a_name_with_a_trailing_newline():
    """`$` matches before a final newline; a file named `x.py\\n` is not a `*.py` file."""
    rs = RuleSet.parse("py-only", allow=["file_write(*.py)"], deny=[])
    assert rs.refusal("file_write", ["src/x.py"]) is None
    assert rs.refusal("file_write", ["src/x.py\n"]) == "file_write(*.py)"


def command_spec(pattern: str, command: str) -> bool:
    """docs/inputs.md's shell patterns, read the slow and obvious way: `*` any run, `\\*` a
    star, `\\\\` a backslash, a trailing ` *` also the bare command, `:*` the same."""
    if pattern.endswith(":*") and not pattern.endswith("\\:*"):
        pattern = pattern[:-2] + " *"
    parts, literal, i = [], "", 0
    while i < len(pattern):
        if pattern[i] == "\\" and pattern[i + 1 : i + 2] in ("*", "\\"):
            literal += pattern[i + 1]
            i += 2
            continue
        if pattern[i] == "*":
            parts.append(literal)
            literal = ""
        else:
            literal += pattern[i]
        i += 1
    parts.append(literal)
    if len(parts) == 2 and not parts[1] and parts[0].endswith(" ") and parts[0].strip():
        head = parts[0][:-1]
        return command == head or (command.startswith(head) and command[len(head) :][:1].isspace())

    def rest(k: int, s: str) -> bool:
        if k == len(parts) - 1:
            return s == parts[k]
        return s.startswith(parts[k]) and any(
            rest(k + 1, s[j:]) for j in range(len(parts[k]), len(s) + 1)
        )

    return rest(0, command)


# Command pattern pieces, each with what a command may hold in its place.
COMMAND_PIECES = {
    **{c: [c] for c in ["a", "b", " ", "\t", "\n", ":", "\\"]},
    "*": ["", "a", "ab", "b a", "*"],
    "\\*": ["*"],
    "\\\\": ["\\"],
    ":*": ["", ":", ":a", " ", " a", "\ta"],
}
RANDOM_COMMANDS = st.lists(st.sampled_from(["a", "b", " ", "*", "\\", ":", "\n", "ab"]), max_size=8)


@st.composite
def command_cases(draw: st.DrawFn) -> tuple[str, list[str]]:
    # Half the time from fewer kinds, so that more patterns have several stars.
    kinds = draw(st.sampled_from([sorted(COMMAND_PIECES), ["a", "b", "*"]]))
    pieces = draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=8))
    commands = draw(st.lists(RANDOM_COMMANDS.map("".join), max_size=4))
    for _ in range(draw(st.integers(1, 6))):
        commands.append("".join(draw(st.sampled_from(COMMAND_PIECES[p])) for p in pieces))
    return "".join(pieces), commands


@pytest.mark.slow
@settings(max_examples=500, deadline=None, derandomize=True)
@given(command_cases())
def test_shell_patterns_match_as_documented(case: tuple[str, list[str]]) -> None:
    """The atomic regex a command pattern becomes answers as the plain reading does."""
    pattern, commands = case
    if not pattern.strip():
        return
    rule = parse_rule(f"shell({pattern})")
    for command in commands:
        assert rule.matches("shell", (command,)) is command_spec(pattern, command), command
