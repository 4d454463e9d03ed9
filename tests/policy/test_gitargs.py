"""The batch roles' git is an allow-list (issue 11 item 5): policy/gitargs.py reads git's
arguments as git does (global options, subcommand, long options and their unambiguous
abbreviations, bundled short options), policy/progchecks.py puts it and sort's check into
a crew's rule set. Hypothesis over spellings; real git shows the abbreviations are real;
a scripted role reads the refusal."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kit import GIT_ENV
from kit.steps import calls, make_workspace, run_step, scripted, shell

from orkeon_run.config.crews import load_crew
from orkeon_run.policy import gitargs
from orkeon_run.policy.progchecks import CHECKS

READ = sorted(gitargs.READ_ONLY)
GLOBALS = sorted(gitargs.GLOBAL_ALLOWED - {"--version", "-v"})
# Subcommands that change the repository or run a program (the spellings among them).
CHANGING = ["add", "commit", "push", "fetch", "clone", "archive", "difftool", "bisect", "reset",
            "checkout", "config", "update-index", "replace", "gc", "am", "apply", "merge",
            "rebase", "stash", "submodule", "worktree", "filter-branch", "help", "st"]  # fmt: skip
REFUSED_GLOBALS = ["-c", "-C", "--config-env=x=Y", "--exec-path=/tmp", "--git-dir=.git",
                   "--work-tree=.", "-p", "--paginate", "--namespace=x", "--help", "-h"]  # fmt: skip
# Option words that change nothing but the output, per subcommand family.
SAFE = ["--stat", "-p", "--name-only", "-n", "--oneline", "-z", "--no-ext-diff",
        "--no-textconv", "--cached", "-i", "--porcelain", "-1", "--format=%H", "-w"]  # fmt: skip


def refused(argv: list[str]) -> str | None:
    return gitargs.refusal(argv)


def abbreviations(name: str) -> st.SearchStrategy[str]:
    """Every prefix of `name`, the whole of it included."""
    return st.integers(1, len(name)).map(lambda n: name[:n])


@st.composite
def dangerous(draw: st.DrawFn) -> tuple[list[str], str]:
    """A read-only subcommand with one option that runs a program or writes a file,
    spelled any way git takes it, among harmless words; the option's full name."""
    sub = draw(st.sampled_from([s for s in READ if gitargs.READ_ONLY[s].long.keys() - {"help"}]))
    spec = gitargs.READ_ONLY[sub]
    full = draw(st.sampled_from(sorted(spec.long.keys() - {"help"})))
    prefix = draw(abbreviations(full))
    value = draw(st.sampled_from(["", "=sh", "=x.txt", "=", "=--"]))
    word = f"--{prefix}{value}"
    before = draw(st.lists(st.sampled_from([*SAFE, "HEAD", "src/a.py"]), max_size=3))
    after = draw(st.lists(st.sampled_from([*SAFE, "HEAD", "src/a.py"]), max_size=3))
    globals_ = draw(st.lists(st.sampled_from(GLOBALS), max_size=3))
    return [*globals_, sub, *before, word, *after], full


@given(dangerous())
def test_an_option_that_runs_a_program_is_refused_however_abbreviated(
    case: tuple[list[str], str],
) -> None:
    argv, full = case
    why = refused(argv)
    assert why is not None and f"--{full}" in why, argv


@given(
    st.lists(st.sampled_from(GLOBALS), max_size=3),
    st.sampled_from(CHANGING),
    st.lists(st.sampled_from([*SAFE, "origin", "-u", "--upload=sh", "-x", "run"]), max_size=4),
)
def test_a_subcommand_that_is_not_read_only_is_refused(
    globals_: list[str], sub: str, rest: list[str]
) -> None:
    why = refused([*globals_, sub, *rest])
    assert why is not None and why.startswith(f"git {sub} is not one of the read-only")


@given(
    st.lists(st.sampled_from(GLOBALS), max_size=2),
    st.sampled_from(REFUSED_GLOBALS),
    st.sampled_from(READ),
)
def test_a_global_option_outside_the_list_is_refused(before: list[str], bad: str, sub: str) -> None:
    why = refused([*before, bad, sub])
    assert why is not None and why.startswith(f"git's global option {bad.partition('=')[0]} ")


@given(
    st.lists(st.sampled_from(GLOBALS), max_size=3),
    st.sampled_from(READ),
    st.lists(st.sampled_from([*SAFE, "HEAD~1", "src/a.py", "-e", "pattern"]), max_size=5),
    st.lists(st.sampled_from(["--output=x", "-O", "--textconv", "--open=sh"]), max_size=2),
)
def test_read_only_commands_pass_and_words_after_dashdash_are_paths(
    globals_: list[str], sub: str, words: list[str], paths: list[str]
) -> None:
    assert refused([*globals_, sub, *words, "--", *paths]) is None


@pytest.mark.parametrize(
    "command",
    ["git grep -nOless x", "git grep -iO x", "git -P grep -O x", "git grep --open-files x",
     "git grep --op=sh x", "git log --outp=x", "git show --show-sig", "git diff --ext",
     "git cat-file --filt HEAD:a", "git blame --textc a", "git log x --output=o",
     "git status --help"],
)  # fmt: skip
def test_the_spellings_that_slipped_past_the_deny_list_are_refused(command: str) -> None:
    assert refused(shlex.split(command)[1:]) is not None


# --- real git takes these spellings ---------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    ws = make_workspace(tmp_path, {"a.txt": "hello\n"})
    return ws


def real_git(ws: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(shlex.split(command), cwd=ws, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV})  # fmt: skip


@pytest.mark.parametrize(
    "spelling",
    ["git grep --open=PROG hello", "git grep -OPROG hello", "git grep -nOPROG hello",
     "git --no-pager grep --open-files-in-pager=PROG hello",
     "git fetch --upload=PROG .", "git clone -u PROG . OUT", "git archive --exec=PROG --remote=. HEAD"],
)  # fmt: skip
def test_git_runs_the_program_these_spellings_name_and_the_check_refuses_them(
    repo: Path, tmp_path: Path, spelling: str
) -> None:
    """Each spelling makes git start PROG (it leaves a marker): the abbreviations are
    git's own, not a guess. The check refuses every one."""
    marker = tmp_path / "ran"
    prog = tmp_path / "prog.sh"
    prog.write_text(f"#!/bin/sh\ntouch {marker}\n")
    prog.chmod(0o755)
    command = spelling.replace("PROG", str(prog)).replace("OUT", str(tmp_path / "out"))
    real_git(repo, command)
    assert marker.exists(), command
    assert refused(shlex.split(command)[1:]) is not None


def test_sort_compress_program_abbreviations(repo: Path, tmp_path: Path) -> None:
    check = CHECKS["sort-no-compress-program"]
    for word in ["--compress-program=sh", "--compress=sh", "--co=sh", "--c=sh"]:
        assert check.refusal(["sort", "-S", "1", word, "a.txt"]) is not None, word
    assert check.refusal(["sort", "--check", "a.txt"]) is None
    assert check.refusal(["sort", "--", "--compress-program=sh"]) is None
    # GNU sort takes the abbreviation (it runs the program when it spills to disk).
    got = real_git(repo, "sort --co=true --version")
    assert got.returncode == 0


# --- the crews --------------------------------------------------------------------------------


def test_the_batch_crews_use_the_checks() -> None:
    for step, role in (("dev-batches", "worker"), ("tasks-repair", "repairer")):
        (rs,) = load_crew(step).rule_sets_for(role)
        assert [c.name for c in rs.checks] == ["git-read-only", "sort-no-compress-program"]
        assert rs.deny == () and rs.allow == ()


def test_an_unknown_check_in_a_crew_is_refused(tmp_path: Path) -> None:
    from orkeon_run.config.crews import Crew

    with pytest.raises(ValueError, match="unknown program check 'git-anything'"):
        Crew.model_validate({
            "step": "dev-batches",
            "roles": [{"name": "worker", "prompt": "p.md", "tools": ["shell"]}],
            "rule_sets": [{"name": "b", "program_checks": ["git-anything"]}],
        })  # fmt: skip


def test_a_role_reads_the_refusal_and_its_read_only_git_runs(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"README.md": "# r\n", "src/a/x.py": ""})
    commands = ["git --no-pager commit -qam x", "git status --porcelain", "git log --outp=x",
                "git fetch --upload=sh ."]  # fmt: skip
    plan = {"batches": [{"name": "b1", "roles": [{"name": "a", "roots": ["."], "task": "t"}]}]}
    doc = scripted({"b1/a": [{"tool_calls": [shell(c) for c in commands]}]}, plan=plan)
    rd = tmp_path / "run"
    run_step("dev-batches", doc, ws, run_dir=rd)
    commit, status, log, fetch = calls(rd, "b1/a")
    assert commit["refused_by"] == "rules"
    assert commit["result"] == (
        "[refused by rule set batch: git-read-only: git commit is not one of the read-only "
        f"git commands a batch role may run ({', '.join(READ)})]"
    )
    assert status["outcome"] == "ran" and status["result"]["exit_code"] == 0
    assert log["result"] == (
        "[refused by rule set batch: git-read-only: git log --outp=x: --outp (--output) "
        "writes a file]"
    )
    assert fetch["refused_by"] == "rules"
