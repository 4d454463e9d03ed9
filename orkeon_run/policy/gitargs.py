"""git's arguments read the way git reads them, for the batch roles' allow-list of
read-only git commands (`git-read-only`, docs/inputs.md "Rule sets"). The OS sandbox is
the fence (a role's git cannot write `.git/` whatever it runs); this is the polite
refusal, with a text that says what is allowed.

How git reads a command line, and what follows from it here:

- global options come before the subcommand, each matched whole (git.c does not take
  abbreviations there): only those that change nothing but the output are allowed
  (`-P`/`--no-pager`, the pathspec switches, `--no-replace-objects`, ...); `-c`,
  `--config-env`, `-C`, `--git-dir`, `--work-tree`, `--exec-path`, `-p`/`--paginate`
  (a pager is a program) and every other one are refused;
- the subcommand must be one that only reads (an alias is not: it may be `!COMMAND`);
- after it, until `--`, every word that starts with `-` is an option, wherever it stands
  (git takes options after arguments too). A long option may be abbreviated to any
  unambiguous prefix (`--upload=` is `--upload-pack=`, `--open=` is
  `--open-files-in-pager=`), so a long option is refused when it is a prefix of one
  that runs a program or writes a file, whether git would read it as that option or
  find it ambiguous. Short options bundle (`-nO`): each letter is checked. A word taken
  as an option that is really the value of the one before it (`git grep -e -O`) is
  refused too: a polite refusal may be too polite, never too lax.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

# Global options that change nothing but what git prints, matched whole as git.c does.
GLOBAL_ALLOWED = frozenset(
    {"-P", "--no-pager", "--no-replace-objects", "--no-lazy-fetch", "--no-optional-locks",
     "--no-advice", "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs",
     "--icase-pathspecs", "--bare", "--version", "-v"}
)  # fmt: skip

_RUNS = "runs a program"
_WRITES = "writes a file"
_PAGER = "runs a pager or the manual"
# The diff machinery's options (diff, log, show, and their plumbing): `--output` writes the
# diff to a file, `--ext-diff` and `--textconv` run the programs the configuration names.
_DIFF = {"output": _WRITES, "ext-diff": _RUNS, "textconv": _RUNS, "help": _PAGER}
_LOG = {**_DIFF, "show-signature": _RUNS}  # gpg.program


@dataclass(frozen=True)
class Subcommand:
    """What refuses one subcommand's options: long ones (by full name, with why) that any
    prefix of refuses, and short letters."""

    long: dict[str, str] = field(default_factory=lambda: {"help": _PAGER})
    short: dict[str, str] = field(default_factory=dict)


READ_ONLY: dict[str, Subcommand] = {
    "status": Subcommand(),
    "diff": Subcommand(_DIFF),
    "diff-files": Subcommand(_DIFF),
    "diff-index": Subcommand(_DIFF),
    "diff-tree": Subcommand(_DIFF),
    "range-diff": Subcommand(_DIFF),
    "log": Subcommand(_LOG),
    "show": Subcommand(_LOG),
    "whatchanged": Subcommand(_LOG),
    "shortlog": Subcommand(_LOG),
    "rev-list": Subcommand(_LOG),
    "blame": Subcommand({"textconv": _RUNS, "help": _PAGER}),
    "annotate": Subcommand({"textconv": _RUNS, "help": _PAGER}),
    "grep": Subcommand(
        {"open-files-in-pager": _RUNS, "textconv": _RUNS, "ext-grep": _RUNS, "help": _PAGER},
        {"O": _RUNS},
    ),
    "cat-file": Subcommand({"textconv": _RUNS, "filters": _RUNS, "help": _PAGER}),
    "ls-files": Subcommand(),
    "ls-tree": Subcommand(),
    "rev-parse": Subcommand(),
    "describe": Subcommand(),
    "show-ref": Subcommand(),
    "for-each-ref": Subcommand(),
    "name-rev": Subcommand(),
    "merge-base": Subcommand(),
    "check-ignore": Subcommand(),
    "check-attr": Subcommand(),
    "count-objects": Subcommand(),
    "cherry": Subcommand(),
    "version": Subcommand(),
}


def refusal(args: Sequence[str]) -> str | None:
    """Why `git ARGS` is not a read-only git command (one line), or None when it is."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        word = args[i]
        if word == "--":
            i += 1
            break
        if word not in GLOBAL_ALLOWED:
            name = word.partition("=")[0]
            return (
                f"git's global option {name} is refused (before the command only "
                f"{', '.join(sorted(GLOBAL_ALLOWED))} are allowed)"
            )
        i += 1
    if i == len(args):
        return None  # `git`, `git --version`: git prints and changes nothing
    sub = args[i]
    spec = READ_ONLY.get(sub)
    if spec is None:
        return (
            f"git {sub} is not one of the read-only git commands a batch role may run "
            f"({', '.join(sorted(READ_ONLY))})"
        )
    for word in args[i + 1 :]:
        if word == "--":
            break
        why = _option_refusal(spec, word)
        if why is not None:
            return f"git {sub} {word}: {why}"
    return None


def _option_refusal(spec: Subcommand, word: str) -> str | None:
    if word.startswith("--"):
        return long_option_refusal(spec.long, word)
    if word.startswith("-") and len(word) > 1:
        for letter in word[1:]:
            why = spec.short.get(letter)
            if why is not None:
                return f"-{letter} {why}"
    return None


def long_option_refusal(refused: dict[str, str], word: str) -> str | None:
    """Why the long option `word` (`--name` or `--name=value`) is refused: its name is a
    prefix of a refused option's (git and getopt take unambiguous abbreviations)."""
    name = word[2:].partition("=")[0]
    if not name:
        return None
    for full, why in refused.items():
        if full.startswith(name):
            spelled = f"--{full}" if name == full else f"--{name} (--{full})"
            return f"{spelled} {why}"
    return None
