"""Rule patterns (issue 10, deterministic rules): one rule matched against one call's
subjects, with the matchers of rules.py (pathglob for paths, an atomic regex for commands).

- typical rules and subjects: against pathspec's regex (what decided path verdicts before),
  and a plain `re` regex for a command pattern; target under 10 µs each, so the rules of
  a gate and a crew stay far inside the pipeline's 100 µs per call.
- hostile patterns on long subjects the model can write (a 3 kB command, a path of 2000
  folders): the time of one verdict, target under 50 ms; the baseline is the old regex (the
  `regex` module, with no time limit) where it ends within seconds.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Callable

from orkeon_run.policy.rules import parse_rule
from tests.kit.pipeline import subjects

from .common import header, median_seconds, row

TYPICAL = [
    ("Write(src/**)", "src/api/x.py"),
    ("Read(*.py)", "src/api/x.py"),
    ("Read(**/.env)", "src/api/x.py"),
    ("Write(/docs/*.md)", "docs/a.md"),
    ("Write(a/**/b*c)", "a/b/x/bc"),
    ("shell(git diff *)", "git diff --stat"),
    ("shell(*pytest*)", "python3 -m pytest -q tests"),
]
DEEP = "a/" * 2000
HOSTILE = [
    ("Write(**/a/**/a/**/a/**/b)", DEEP + "c", True),
    ("Write(**/a/**/a/**/a/**/b)", "a/" * 1000 + "bc", True),
    ("Write(*a*a*a*a*a*b)", "a" * 4000 + "bc", True),
    ("Write(a/**/b*b*b*c)", "a/" + "b/" * 2000 + "b" * 200, True),
    ("shell(*a*a*b)", "echo " + "a" * 3000, True),
    ("shell(*a*a*a*a*a*a*b)", "echo " + "a" * 3000, False),  # the old regex: hours
]


def old_matcher(rule_text: str) -> Callable[[str], object]:
    """The regex that decided `rule_text` before: pathspec's for a path (searched; `$` as
    `\\Z`), `*` as `.*` for a command; compiled by the `regex` module, which has no
    catastrophic cases of its own to hide but backtracks just the same."""
    import regex
    from pathspec.patterns.gitignore.basic import GitIgnoreBasicPattern

    rule = parse_rule(rule_text)
    assert rule.pattern is not None
    if rule.tool == "shell":
        body = ".*".join(re.escape(p) for p in rule.pattern.split("*")) + r"\Z"
        if rule.pattern.endswith(" *") and rule.pattern.count("*") == 1:
            body = re.escape(rule.pattern[:-2]) + r"(?:\s.*)?\Z"
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            body = GitIgnoreBasicPattern(rule.pattern).regex.pattern  # type: ignore[union-attr]
        for end in ("(?:/|$)", "/?$"):  # its only anchors, at the end
            if body.endswith(end):
                body = body[: -len(end)] + end.replace("$", r"\Z")
    return regex.compile(body, regex.DOTALL | regex.V0).search


def subjects_of(rule_text: str, subject: str) -> tuple[str, ...]:
    tool = parse_rule(rule_text).tool
    if tool == "shell":
        return subjects(tool, {"command": subject})
    return subjects(tool, {}, subject)


def verdicts(text: str, subject: str) -> tuple[Callable[[], bool], Callable[[], bool]]:
    """One verdict of the rule on the subject's call: by rules.py now, by the old regex."""
    rule = parse_rule(text)
    subjects = subjects_of(text, subject)

    def new() -> bool:
        return rule.matches(rule.tool, subjects)

    def old() -> bool:
        return any(search(s) for s in subjects)

    search = old_matcher(text)
    return new, old


def main() -> None:
    us = 1e6
    header()
    for text, subject in TYPICAL:
        new, old = verdicts(text, subject)
        assert new() == old(), text
        new_t = median_seconds(new, 20000)
        old_t = median_seconds(old, 20000)
        row(f"{text} on {subject}"[:48], f"{new_t * us:.2f} µs", f"{old_t * us:.2f} µs",
            new_t / old_t, "< 10 µs", new_t < 10e-6)  # fmt: skip
    for text, subject, time_old in HOSTILE:
        new, old = verdicts(text, subject)
        hit = new()
        new_t = median_seconds(new, 5)
        base, ratio = "not run", None
        if time_old:
            start = time.perf_counter()
            assert old() == hit, text
            old_t = time.perf_counter() - start
            base, ratio = f"{old_t * 1000:.1f} ms", new_t / old_t
        name = f"{text} on {len(subject)} chars"
        row(name[:48], f"{new_t * 1000:.3f} ms", base, ratio, "< 50 ms", new_t < 0.05)
    print("(typical: medians of 20000 verdicts; hostile: medians of 5, the old regex once)")


if __name__ == "__main__":
    main()
