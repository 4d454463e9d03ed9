"""orkeon_run.tools: the six tools of docs/tools.md, on real files in tmp_path and
real processes."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit import DATA, ROOT

from orkeon_run.calls import CheckedCall, Refusal
from orkeon_run.catalog import LIST_CAP, SEARCH_CAP, TOOLS
from orkeon_run.pipeline import check_call
from orkeon_run.policy.programs import ShellRules
from orkeon_run.tools import ToolEnv, run_tool

PROCS = DATA / "procs"


def call(
    ws: Path,
    tool: str,
    rules: ShellRules | None = None,
    timeout: float = 10,
    **input: Any,
) -> Any:
    """The tool's result on a call checked as the pipeline checks it (a bad call: the
    text the model would read)."""
    env = ToolEnv(workspace=ws, shell_rules=rules or ShellRules())
    checked = check_call(ws, tool, input)
    if isinstance(checked, Refusal):
        return checked.text
    if checked.outside:
        return f"[refused: {checked.raw_path} is outside the workspace]"
    return anyio.run(run_tool, checked, env, timeout)


def check_input(tool: str, input: Any) -> str | None:
    """None for a call the tool accepts, else the problem line."""
    checked = check_call(Path("/"), tool, input)
    return checked.text.removeprefix("error: ") if isinstance(checked, Refusal) else None


def path_arg(tool: str, input: dict[str, Any]) -> str | None:
    checked = check_call(Path("/"), tool, input)
    assert isinstance(checked, CheckedCall)
    return checked.raw_path


# --- registry, input checks, path argument ---------------------------------------------


BUILTIN = ("file_read", "file_write", "file_edit", "list_files", "search_files", "shell")


def documented_tools() -> set[str]:
    r"""The tools docs/tools.md has a section for (`## \`NAME\``), before its MCP part."""
    text = (ROOT / "docs" / "tools.md").read_text().split("## Tools from MCP servers")[0]
    return set(re.findall(r"^## `([a-z_]+)`$", text, re.MULTILINE))


def test_every_catalog_tool_is_documented() -> None:
    """docs/tools.md documents every tool the model can call, and no other: a tool added
    to the catalog gets its section there (docs/architecture.md, "Adding things")."""
    assert sorted(set(TOOLS) - documented_tools()) == [], "add its section to docs/tools.md"
    assert sorted(documented_tools() - set(TOOLS)) == [], "docs/tools.md names no such tool"


def test_registry() -> None:
    """docs/tools.md: the six tools, with Claude Code's field names."""
    assert set(BUILTIN) <= set(TOOLS)
    six = {n: TOOLS[n] for n in BUILTIN}
    assert {n for n, t in six.items() if t.writes} == {"file_write", "file_edit"}
    assert {n: t.path_field for n, t in six.items()} == {
        "file_read": "file_path",
        "file_write": "file_path",
        "file_edit": "file_path",
        "list_files": "path",
        "search_files": "path",
        "shell": None,
    }
    assert {n for n, t in six.items() if t.folder} == {"list_files", "search_files"}
    assert {n: t.command_field for n, t in six.items() if t.command_field} == {"shell": "command"}
    required = {n: t.spec.input_schema["required"] for n, t in six.items()}
    assert required == {
        "file_read": ["file_path"],
        "file_write": ["file_path", "content"],
        "file_edit": ["file_path", "old_string", "new_string"],
        "list_files": [],
        "search_files": ["pattern"],
        "shell": ["command"],
    }
    for name, t in TOOLS.items():
        assert t.spec.name == name and t.spec.description
        json.dumps(t.spec.input_schema)


def test_check_input() -> None:
    assert check_input("file_read", {"file_path": "a"}) is None
    assert check_input("file_read", {"file_path": "a", "offset": 2, "limit": 3}) is None
    assert check_input("file_read", {}) == "file_read: the field 'file_path' is required"
    assert check_input("file_read", {"file_path": 3}) == (
        "file_read: the field 'file_path' must be a string"
    )
    for bad in (0, -1, True, 1.5, "2"):
        assert check_input("file_read", {"file_path": "a", "offset": bad}) == (
            "file_read: the field 'offset' must be an integer of at least 1"
        )
    assert check_input("file_edit", {"file_path": "a", "old_string": "x"}) == (
        "file_edit: the field 'new_string' is required"
    )
    edit = {"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": 1}
    assert check_input("file_edit", edit) == (
        "file_edit: the field 'replace_all' must be true or false"
    )
    assert check_input("list_files", {}) is None
    assert check_input("search_files", {"path": "src"}) == (
        "search_files: the field 'pattern' is required"
    )
    assert (
        check_input("shell", {"command": ["ls"]}) == "shell: the field 'command' must be a string"
    )
    assert check_input("nope", {}) == "there is no tool named 'nope'"
    assert check_input("file_write", {"file_path": "a", "content": "", "extra": 1}) is None


def test_path_arg() -> None:
    assert path_arg("file_write", {"file_path": "src/x.py", "content": ""}) == "src/x.py"
    assert path_arg("list_files", {"path": "src"}) == "src"
    assert path_arg("list_files", {}) is None
    assert path_arg("search_files", {"pattern": "x"}) is None
    assert path_arg("shell", {"command": "cat README.md"}) is None
    assert check_input("file_read", {"file_path": 3}) is not None


def test_bad_input_is_an_error_text(workspace: Path) -> None:
    assert call(workspace, "file_read") == "error: file_read: the field 'file_path' is required"


# --- file_read ---------------------------------------------------------------------------


def test_file_read_whole(workspace: Path) -> None:
    assert call(workspace, "file_read", file_path="README.md") == "# readme\n"


def test_file_read_keeps_bytes_exact(workspace: Path) -> None:
    (workspace / "crlf.txt").write_bytes(b"a\r\nb\r\n\xc3\xa9\n")
    assert call(workspace, "file_read", file_path="crlf.txt") == "a\r\nb\r\né\n"


def test_file_read_offset_and_limit(workspace: Path) -> None:
    (workspace / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    assert call(workspace, "file_read", file_path="n.txt", offset=3, limit=2) == "line 3\nline 4\n"
    assert call(workspace, "file_read", file_path="n.txt", limit=1) == "line 1\n"
    assert call(workspace, "file_read", file_path="n.txt", offset=10) == "line 10\n"
    assert call(workspace, "file_read", file_path="n.txt", offset=11) == (
        "error: n.txt has fewer than 11 lines"
    )


def test_file_read_large_file_comes_in_parts(workspace: Path) -> None:
    (workspace / "big.txt").write_text("".join(f"{i:0100d}\n" for i in range(1, 3001)))
    text = call(workspace, "file_read", file_path="big.txt")
    lines = text.splitlines()
    assert len(lines) == 2001
    assert lines[1999] == f"{2000:0100d}"
    assert lines[2000] == (
        "[file_read: showed lines 1-2000; the file goes on: read on with offset=2001]"
    )
    rest = call(workspace, "file_read", file_path="big.txt", offset=2001, limit=5000)
    assert rest.splitlines()[0] == f"{2001:0100d}" and len(rest.splitlines()) == 1000


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda ws: None, "error: f does not exist"),
        (lambda ws: (ws / "f").mkdir(), "error: f is a directory"),
        (lambda ws: (ws / "f").write_bytes(b"\xff\xfe\x00"), "error: f is not UTF-8 text"),
    ],
)
def test_file_read_errors(workspace: Path, make: Any, expected: str) -> None:
    make(workspace)
    assert call(workspace, "file_read", file_path="f") == expected
    assert call(workspace, "file_read", file_path="f", offset=1) == expected


@pytest.mark.timeout(10)
def test_file_read_fifo_does_not_block(workspace: Path) -> None:
    import os

    os.mkfifo(workspace / "pipe")
    assert call(workspace, "file_read", file_path="pipe") == "error: pipe is not a regular file"


def test_a_tool_acts_on_the_path_that_was_checked(workspace: Path) -> None:
    """The pipeline resolves a call's path once; the tool writes where that resolution
    points, not where the text would lead if read again (a symlink swapped in since)."""
    (workspace / "src").mkdir()
    checked = check_call(workspace, "file_write", {"file_path": "src/x.txt", "content": "new"})
    assert isinstance(checked, CheckedCall) and checked.path == workspace / "src" / "x.txt"
    (workspace / "src").rename(workspace / "old")
    (workspace / "src").symlink_to(workspace.parent)  # src now leads outside
    env = ToolEnv(workspace=workspace, shell_rules=ShellRules())
    anyio.run(run_tool, checked, env, 10)
    assert not (workspace.parent / "x.txt").exists()


def test_paths_outside_the_workspace_are_marked_for_refusal(workspace: Path) -> None:
    (workspace.parent / "secret.txt").write_text("secret\n")
    (workspace / "out").symlink_to(workspace.parent / "secret.txt")
    for raw in ["../secret.txt", str(workspace.parent / "secret.txt"), "out"]:
        for tool, input in (("file_read", {}), ("file_write", {"content": "x"})):
            checked = check_call(workspace, tool, {"file_path": raw, **input})
            assert isinstance(checked, CheckedCall) and checked.outside and checked.path is None
    for tool, input in (("list_files", {}), ("search_files", {"pattern": "s"})):
        checked = check_call(workspace, tool, {"path": "..", **input})
        assert isinstance(checked, CheckedCall) and checked.outside


def test_absolute_path_inside_is_fine(workspace: Path) -> None:
    assert call(workspace, "file_read", file_path=str(workspace / "README.md")) == "# readme\n"


# --- file_write --------------------------------------------------------------------------


def test_file_write_creates_parents(workspace: Path) -> None:
    got = call(workspace, "file_write", file_path="src/api/x.py", content="print(1)\n")
    assert got == "created src/api/x.py (9 bytes)"
    assert (workspace / "src" / "api" / "x.py").read_text() == "print(1)\n"


def test_file_write_replaces(workspace: Path) -> None:
    got = call(workspace, "file_write", file_path="README.md", content="new\r\n")
    assert got == "updated README.md (5 bytes)"
    assert (workspace / "README.md").read_bytes() == b"new\r\n"


def test_file_write_errors(workspace: Path) -> None:
    (workspace / "d").mkdir()
    assert call(workspace, "file_write", file_path="d", content="x") == "error: d is a directory"
    got = call(workspace, "file_write", file_path="README.md/x", content="x")
    assert got == "error: a parent of README.md/x is a file, not a directory"


# --- file_edit ---------------------------------------------------------------------------


def test_file_edit_replaces_the_one_occurrence(workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\ny = 2\n")
    got = call(workspace, "file_edit", file_path="a.py", old_string="y = 2", new_string="y = 3")
    assert got == "edited a.py: replaced 1 occurrence"
    assert (workspace / "a.py").read_text() == "x = 1\ny = 3\n"


def test_file_edit_needs_a_unique_match(workspace: Path) -> None:
    (workspace / "a.py").write_text("v = 1\nv = 1\n")
    got = call(workspace, "file_edit", file_path="a.py", old_string="v = 1", new_string="v = 2")
    assert got.startswith("error: old_string occurs 2 times in a.py")
    assert (workspace / "a.py").read_text() == "v = 1\nv = 1\n"
    got = call(
        workspace,
        "file_edit",
        file_path="a.py",
        old_string="v = 1",
        new_string="v = 2",
        replace_all=True,
    )
    assert got == "edited a.py: replaced 2 occurrences"
    assert (workspace / "a.py").read_text() == "v = 2\nv = 2\n"


def test_file_edit_errors(workspace: Path) -> None:
    edit: dict[str, Any] = {"old_string": "zzz", "new_string": "y"}
    assert call(workspace, "file_edit", file_path="README.md", **edit) == (
        "error: old_string was not found in README.md"
    )
    assert call(workspace, "file_edit", file_path="nope.md", **edit) == (
        "error: nope.md does not exist"
    )
    same: dict[str, Any] = {"old_string": "a", "new_string": "a"}
    assert call(workspace, "file_edit", file_path="README.md", **same) == (
        "error: old_string and new_string are the same"
    )
    empty: dict[str, Any] = {"old_string": "", "new_string": "a"}
    assert call(workspace, "file_edit", file_path="README.md", **empty).startswith("error: ")
    (workspace / "bin").write_bytes(b"\xff\xff")
    assert call(workspace, "file_edit", file_path="bin", **edit) == "error: bin is not UTF-8 text"


# --- list_files --------------------------------------------------------------------------


@pytest.fixture
def tree(workspace: Path) -> Path:
    for rel in ["src/a.py", "src/b.txt", "src/sub/c.py", "docs/d.md", "a.b", ".git/config"]:
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(f"{rel}\nneedle in {rel}\n")
    return workspace


def test_list_files_everything_sorted_without_git(tree: Path) -> None:
    got = call(tree, "list_files")
    assert got == sorted(got)
    assert got == ["README.md", "a.b", "docs/d.md", "src/a.py", "src/b.txt", "src/sub/c.py"]


def test_list_files_pattern(tree: Path) -> None:
    assert call(tree, "list_files", pattern="**/*.py") == ["src/a.py", "src/sub/c.py"]
    assert call(tree, "list_files", pattern="*.md") == ["README.md"]
    assert call(tree, "list_files", pattern="src/*.{py,txt}") == ["src/a.py", "src/b.txt"]


def test_list_files_under_a_folder(tree: Path) -> None:
    assert call(tree, "list_files", path="src") == ["src/a.py", "src/b.txt", "src/sub/c.py"]
    assert call(tree, "list_files", path="src/", pattern="*.py") == ["src/a.py"]


def test_list_files_errors(tree: Path) -> None:
    assert call(tree, "list_files", path="nope") == "error: nope does not exist"
    assert call(tree, "list_files", path="README.md") == ["README.md"]


def test_list_files_does_not_walk_a_symlink_out(tree: Path) -> None:
    outside = tree.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (tree / "link").symlink_to(outside)
    assert not any(p.startswith("link/") for p in call(tree, "list_files"))


def test_list_files_is_capped(workspace: Path) -> None:
    many = workspace / "many"
    many.mkdir()
    for i in range(LIST_CAP + 50):
        (many / f"f{i:05d}").touch()
    got = call(workspace, "list_files", path="many")
    assert len(got) == LIST_CAP
    assert got[0] == "many/f00000"


# --- search_files ------------------------------------------------------------------------


def test_search_files(tree: Path) -> None:
    got = call(tree, "search_files", pattern=r"needle in src/\w+\.py")
    assert got == [
        {"file": "src/a.py", "line": 2, "text": "needle in src/a.py"},
    ]
    got = call(tree, "search_files", pattern="needle")
    assert [m["file"] for m in got] == ["a.b", "docs/d.md", "src/a.py", "src/b.txt", "src/sub/c.py"]


def test_search_files_glob_and_path(tree: Path) -> None:
    got = call(tree, "search_files", pattern="needle", glob="*.py")
    assert [m["file"] for m in got] == ["src/a.py", "src/sub/c.py"]
    got = call(tree, "search_files", pattern="needle", glob="sub/**")
    assert [m["file"] for m in got] == []  # a glob with `/` is relative to the folder
    got = call(tree, "search_files", pattern="needle", path="src", glob="sub/**")
    assert [m["file"] for m in got] == ["src/sub/c.py"]
    got = call(tree, "search_files", pattern="^src", path="src/a.py")
    assert got == [{"file": "src/a.py", "line": 1, "text": "src/a.py"}]


def test_search_files_skips_binary_and_git(tree: Path) -> None:
    (tree / "blob.bin").write_bytes(b"needle\x00\x01")
    got = call(tree, "search_files", pattern="needle|config")
    files = {m["file"] for m in got}
    assert "blob.bin" not in files and not any(f.startswith(".git") for f in files)


def test_search_files_does_not_read_through_a_symlink_out(tree: Path) -> None:
    (tree.parent / "secret.txt").write_text("needle outside\n")
    (tree / "leak.txt").symlink_to(tree.parent / "secret.txt")
    assert all(m["file"] != "leak.txt" for m in call(tree, "search_files", pattern="needle"))


def test_search_files_errors(tree: Path) -> None:
    assert call(tree, "search_files", pattern="(").startswith("error: bad pattern '(': ")
    assert call(tree, "search_files", pattern="x", path="nope") == "error: nope does not exist"


def test_search_files_is_capped(workspace: Path) -> None:
    (workspace / "lots.txt").write_text("hit\n" * (SEARCH_CAP + 100))
    got = call(workspace, "search_files", pattern="hit")
    assert len(got) == SEARCH_CAP
    assert got[-1] == {"file": "lots.txt", "line": SEARCH_CAP, "text": "hit"}


@pytest.mark.timeout(20)
def test_search_files_catastrophic_pattern_stops_at_the_deadline(workspace: Path) -> None:
    (workspace / "a.txt").write_text("a" * 5000 + "!\n")
    # The error names the deadline; unbounded, the pattern would backtrack past the 20 s
    # hang guard (quiet: 0.5 s).
    got = call(workspace, "search_files", timeout=0.5, pattern=r"(\w+\s?)+$")
    assert got.startswith("error: searching . took too long")


# --- shell -------------------------------------------------------------------------------


def test_shell_runs_in_the_workspace(workspace: Path) -> None:
    assert call(workspace, "shell", command="cat README.md") == {
        "exit_code": 0,
        "stdout": "# readme\n",
        "stderr": "",
    }
    assert call(workspace, "shell", command="pwd")["stdout"] == f"{workspace}\n"


def test_shell_nonzero_exit(workspace: Path) -> None:
    got = call(workspace, "shell", command="cat nope.txt")
    assert got["exit_code"] == 1 and "nope.txt" in got["stderr"]


def test_shell_refuses_operators_without_running(workspace: Path) -> None:
    got = call(workspace, "shell", command="touch made && echo hi")
    assert got["exit_code"] == 126 and got["stdout"] == ""
    assert got["stderr"].startswith("shell: '&&' is refused")
    assert not (workspace / "made").exists()


def test_shell_refuses_programs_off_the_lists(workspace: Path) -> None:
    got = call(workspace, "shell", command="rm README.md")
    assert got == {
        "exit_code": 126,
        "stdout": "",
        "stderr": "shell: program 'rm' is not allowed (allowed: the base list; interpreters "
        "need allow_interpreters; others need extra_allowed_commands)",
    }
    assert (workspace / "README.md").exists()


def test_shell_script_by_listed_path(workspace: Path) -> None:
    script = str(PROCS / "exit_code.sh")
    rules = ShellRules(extra_allowed_commands=(script,))
    got = call(workspace, "shell", rules, command=f"{shlex.quote(script)} 4")
    assert got == {"exit_code": 4, "stdout": "to stdout\n", "stderr": "to stderr\n"}


def test_shell_listed_program_that_is_missing(workspace: Path) -> None:
    rules = ShellRules(extra_allowed_commands=("./missing.sh",))
    got = call(workspace, "shell", rules, command="./missing.sh")
    assert got == {"exit_code": 127, "stdout": "", "stderr": "shell: no such program: ./missing.sh"}


@pytest.mark.timeout(20)
def test_shell_time_out(workspace: Path) -> None:
    # The message says it was stopped; `sleep 30` outlives the 20 s hang guard (quiet: 0.3 s).
    got = call(workspace, "shell", timeout=0.3, command="sleep 30")
    assert got["exit_code"] is None
    assert got["stderr"] == "shell: the command ran longer than 0.3 s and was stopped"


def test_shell_output_is_capped(workspace: Path) -> None:
    script = str(PROCS / "big_output.sh")
    rules = ShellRules(extra_allowed_commands=(script,))
    got = call(workspace, "shell", rules, command=f"{shlex.quote(script)} out 100000")
    assert got["exit_code"] == 0
    assert got["stdout"].endswith("\n[shell: 70000 more bytes of output were dropped]")


def test_search_files_crlf_lines(workspace: Path) -> None:
    (workspace / "win.txt").write_bytes(b"first\r\nend here\r\n")
    got = call(workspace, "search_files", pattern="here$")
    assert got == [{"file": "win.txt", "line": 2, "text": "end here"}]


@pytest.mark.parametrize("tool", ["file_write", "file_edit"])
def test_a_hard_link_to_a_file_outside_is_not_written_through(tmp_path, tool):
    """A role that made a hard link (`cp -l`) to a file outside the workspace must not
    change that file by writing the link: the write replaces the link with a new file."""
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    os.link(outside, ws / "src" / "x.txt")
    (ws / "src" / "x.txt").chmod(0o640)
    if tool == "file_write":
        inp = {"file_path": "src/x.txt", "content": "changed\n"}
    else:
        inp = {"file_path": "src/x.txt", "old_string": "keep", "new_string": "changed"}
    result = call(ws.resolve(), tool, **inp)
    assert not result.startswith("error"), result
    assert outside.read_text() == "keep me\n"
    assert "changed" in (ws / "src" / "x.txt").read_text()
    assert (ws / "src" / "x.txt").stat().st_mode & 0o777 == 0o640  # the mode is kept
    assert [p.name for p in (ws / "src").iterdir()] == ["x.txt"]  # no temp file left


def test_file_read_of_one_huge_line_is_cut(tmp_path):
    """A minified file is one line: a read returns at most READ_RESULT_CHARS and says so."""
    from orkeon_run.catalog import READ_RESULT_CHARS

    (tmp_path / "min.js").write_text("x" * (3 * READ_RESULT_CHARS) + "\nsecond\n")
    text = call(tmp_path, "file_read", file_path="min.js")
    assert text.startswith("x" * 100)
    assert len(text) < READ_RESULT_CHARS + 200
    assert text.endswith("[file_read: cut at 262144 characters, in line 1; read a smaller range]")
    assert call(tmp_path, "file_read", file_path="min.js", offset=2) == "second\n"


def test_file_read_stops_at_a_line_boundary_when_the_cap_is_reached(tmp_path):
    from orkeon_run.catalog import READ_RESULT_CHARS

    line = "y" * 999 + "\n"
    n = READ_RESULT_CHARS // len(line)
    (tmp_path / "wide.txt").write_text(line * (n + 10))
    text = call(tmp_path, "file_read", file_path="wide.txt", limit=5000)
    body, note = text.rsplit("\n", 1)[0], text.rsplit("\n", 1)[1]
    assert body.splitlines() == [line.rstrip("\n")] * n
    assert note == f"[file_read: showed lines 1-{n}; the file goes on: read on with offset={n + 1}]"


# --- found in an adversarial review ------------------------------------------------------

CATASTROPHIC = "*a" * 14 + "*b"  # `[^/]*a` fourteen times: backtracks for minutes


@pytest.mark.timeout(30)
@pytest.mark.parametrize("tool", ["list_files", "search_files"])
def test_a_glob_that_backtracks_is_stopped_by_the_calls_time(workspace: Path, tool: str) -> None:
    """A `*a*a*…*b` glob against a long name of `a`s ran for minutes in Python's `re`,
    past the budget and SIGTERM; now each match is bounded by the call's time."""
    (workspace / ("a" * 120)).write_text("a\n")
    args = (
        {"pattern": CATASTROPHIC}
        if tool == "list_files"
        else {"pattern": "a", "glob": CATASTROPHIC}
    )
    # Unbounded, the match runs for minutes: past the 30 s hang guard (quiet: under 1 s).
    out = call(workspace, tool, timeout=1.0, **args)
    # The regex module's matcher finds no match at once; were it to backtrack, the call's
    # time would stop it with the documented error.
    assert out == [] or (isinstance(out, str) and "took too long" in out), out


def test_braces_nested_past_any_use_are_a_bad_glob(workspace: Path) -> None:
    out = call(workspace, "list_files", pattern="{" * 2000 + "a" + "}" * 2000)
    assert isinstance(out, str) and out.startswith("error: bad glob"), str(out)[:200]


def test_search_files_over_a_symlink_to_a_folder_inside(workspace: Path) -> None:
    """A symlink to a folder inside the workspace made every search fail with
    IsADirectoryError, and leaked a file descriptor each time."""
    (workspace / "lib").mkdir()
    (workspace / "lib" / "x.py").write_text("secret = 1\n")
    (workspace / "lk").symlink_to("lib")
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(5):
        out = call(workspace, "search_files", pattern="secret")
        assert out == [{"file": "lib/x.py", "line": 1, "text": "secret = 1"}], out
    assert len(os.listdir("/proc/self/fd")) <= fds + 1
