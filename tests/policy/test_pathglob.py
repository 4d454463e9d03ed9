"""Path patterns of file-tool rules (docs/inputs.md): pathglob.PathGlob gives the answers of
pathspec's gitignore regexes, in time linear in the path."""

from __future__ import annotations

import re
import time
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pathspec.patterns.gitignore.basic import GitIgnoreBasicPattern

from orkeon_run.policy.pathglob import PathGlob


def pathspec_regex(pattern: str) -> re.Pattern[str] | None:
    """pathspec's regex for `pattern` as rules read it (`.` matches a newline, `$` only at
    the very end; it is searched, as pathspec does), or None when pathspec refuses it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            compiled = GitIgnoreBasicPattern(pattern)
    except (ValueError, re.error):
        return None
    if compiled.include is not True or compiled.regex is None:
        return None
    body = compiled.regex.pattern
    for end in ("(?:/|$)", "/?$"):  # the only anchors pathspec writes, at the end
        if body.endswith(end):
            body = body[: -len(end)] + end.replace("$", r"\Z")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return re.compile(body, re.DOTALL)


# Pattern pieces, each with what a path may hold in its place (most paths generated from a
# pattern this way match it; random paths mostly do not).
PIECES: dict[str, list[str]] = {
    **{c: [c] for c in "ab/.!# $\n[]"},
    "\\": ["\\"],
    "*": ["", "a", "ab", "/"],
    "?": ["a", "/"],
    "**": ["", "a", "a/b", "b/"],
    "/**/": ["/", "/a/", "/a/b/", "//"],
    "**/": ["", "a/", "b/a/"],
    "/**": ["/", "/a", "/a/b"],
    "ab": ["ab"],
    "[ab]": ["a", "b"],
    "[!a]": ["b", "/"],
    "[^b]": ["a", "/"],
    "[.-0]": [".", "/", "0"],  # a range across `/`
    "[]a]": ["]", "a"],
    "[a-b]": ["b"],
    "[*]": ["*"],
    "\\*": ["*"],
    "\\ ": [" "],
    "\\[": ["["],
}
# Fewer kinds, so more patterns mix `**` with `*` and brackets.
STRUCTURE = ["a", "b", "/", "*", "**", "/**/", "[!a]"]
PATH_PIECES = [*"ab/.* \n$!]\\", "ab", "ba", "a/b", "//"]
random_paths = st.lists(st.sampled_from(PATH_PIECES), max_size=8).map("".join)


@st.composite
def pattern_and_paths(draw: st.DrawFn) -> tuple[str, list[str]]:
    kinds = draw(st.sampled_from([sorted(PIECES), STRUCTURE]))
    pieces = draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=7))
    paths = draw(st.lists(random_paths, min_size=1, max_size=6))
    for _ in range(draw(st.integers(1, 6))):
        body = "".join(draw(st.sampled_from(PIECES[p])) for p in pieces)
        paths.append(
            draw(st.sampled_from(["", "x/", "a/"])) + body + draw(st.sampled_from(["", "/", "/y"]))
        )
    return "".join(pieces), paths


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, derandomize=True)
@given(pattern_and_paths())
def test_the_same_answers_as_pathspecs_regex(case: tuple[str, list[str]]) -> None:
    """On every pattern pathspec reads, and every string as a path (folders `a/`, empty
    components, newlines): the same verdict. A pattern pathspec refuses is refused."""
    pattern, subjects = case
    oracle = pathspec_regex(pattern)
    if pattern.startswith("!"):
        with pytest.raises(ValueError, match="negated"):
            PathGlob(pattern)
        return
    if oracle is None:
        with pytest.raises(ValueError):
            PathGlob(pattern)
        return
    glob = PathGlob(pattern)
    for path in subjects:
        assert glob.match(path) is (oracle.search(path) is not None), (pattern, path)


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        # `**` must skip past an earlier `b`: an atomic regex alone gets this wrong.
        ("a/**/b*c", "a/b/x/bc", True),
        ("a/**/b*c", "a/b/x/bd", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "ab", False),
        ("**/a/*", "x/a/b", True),
        ("**/a/*", "x/a/b/c", False),
        ("**/a/*", "x/a/b/", True),  # a folder `x/a/b`
        # pathspec's shortcuts: `**/` and `*/` are every path below the top folder.
        ("**/", "src/a.py", True),
        ("*/", "src/", True),
        ("*/", "a.py", False),
        ("**", "a.py", True),
        # A bracket expression that can match `/` does, as in pathspec's regexes.
        ("a[!b]c", "a/c", True),
        ("a[!b]c", "abc", False),
        ("*.[!o]", "x.c", True),
        ("*.[!o]", "x.o", False),
        ("*.[!o]", "x./", True),  # a folder `x.`
        ("x[+-0]y", "x/y", True),
    ],
)
def test_examples(pattern: str, path: str, hit: bool) -> None:
    assert PathGlob(pattern).match(path) is hit
    oracle = pathspec_regex(pattern)
    assert oracle is not None and (oracle.search(path) is not None) is hit


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("!a", "a negated pattern"),
        ("#a", "'#a' is not a path pattern"),
        ("a\\", "Invalid git pattern: 'a\\\\'"),
        ("[z-a]", "bad character range z-a in '[z-a]'"),
    ],
)
def test_patterns_refused(pattern: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        PathGlob(pattern)


def test_an_odd_bracket_is_read_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        glob = PathGlob("[[:alpha:]]")  # a class of `[:alph` then a `]`
    assert glob.match("x/:]") and not glob.match("x/[")


DEEP = "a/" * 2000  # 2000 folders, 4 kB


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("**/a/**/a/**/a/**/b", DEEP + "c", False),
        ("**/a/**/a/**/a/**/b", DEEP + "b", True),
        ("*a*a*a*a*a*b", "a" * 4000 + "c", False),
        ("*a*a*a*a*a*b", "a" * 4000 + "b", True),
        ("a/**/b*b*b*c", "a/" + "b/" * 1000 + "b" * 1000, False),
        ("a/**/b*b*b*c", "a/" + "b/" * 1000 + "b" * 1000 + "c", True),
        ("**/[!x][!x][!x]/**/b", DEEP + "c", False),
        ("**/[!x][!x][!x]/**/b", DEEP + "b", True),
    ],
)
def test_hostile_paths_are_matched_in_linear_time(pattern: str, path: str, hit: bool) -> None:
    """Patterns that backtracked for minutes as regexes (pathspec's own regex for the first
    takes longer than this test's time-out), on paths the model could write: the right
    answer, in a CPU time orders of magnitude below the bound (a few ms here). CPU time of
    this thread, so another process's load does not count."""
    glob = PathGlob(pattern)
    start = time.thread_time()
    assert glob.match(path) is hit
    assert time.thread_time() - start < 1.0
