"""Hostile input, property-based: `--inputs` documents, native hook commands, model-written
paths through the real Pipeline, and matcher and rule patterns that backtrack.

No input may crash orkeon with a traceback; every refusal is one of the documented texts
(docs/output.md, docs/hooks.md); no write lands outside the workspace or the role's roots; no
pattern hangs a run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import kit.hooks
import kit.pipeline
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from orkeon_run.__main__ import main
from orkeon_run.calls import CallContext
from orkeon_run.events import EventLog
from orkeon_run.hooks import NO_HOOKS
from orkeon_run.hooks.claude.matchers import Matcher
from orkeon_run.hooks.native import NativeHook, argv_for, run_hook
from orkeon_run.pipeline import Pipeline
from orkeon_run.policy.gate import Gate
from orkeon_run.policy.programs import ShellRules
from orkeon_run.policy.rules import RuleSet
from orkeon_run.policy.words import OPERATORS, split_command
from orkeon_run.run.steps import crew_steps

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
# One problem per line: `orkeon: FIELD: message` (docs/output.md, exit 2 "the message
# names the bad field"); FIELD is a path into the document or the document itself.
PROBLEM = re.compile(r"orkeon: (?P<field>[^ ].*?): (?P<message>.+)")


@pytest.fixture(scope="module")
def cwd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder to run `orkeon validate` in, with no user settings and no key variables."""
    root = tmp_path_factory.mktemp("hostile")
    (root / "ws").mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ORKEON_CONFIG_DIR", str(root / "config"))
        for name in list(os.environ):
            if name.lower().startswith("orkeon__") or name.endswith("_API_KEY"):
                mp.delenv(name)
        mp.delenv("ORKEON_TRUST_PROJECT_HOOKS", raising=False)
        with contextlib.chdir(root / "ws"):
            yield root / "ws"


def validate(*args: str) -> tuple[int, list[str], str]:
    """`orkeon validate ARGS` in-process: (exit code, stderr lines, stdout)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["validate", *args])
    text = err.getvalue()
    assert "Traceback" not in text
    assert text == "" or text.endswith("\n")
    return rc, text.splitlines(), out.getvalue()


def assert_refused_well(rc: int, lines: list[str]) -> list[re.Match[str]]:
    """Exit 2 with every stderr line a problem naming its field."""
    assert rc == 2, lines
    assert lines
    found = []
    for line in lines:
        m = PROBLEM.fullmatch(line)
        assert m is not None, line
        assert "internal error" not in line
        assert line.isprintable(), line  # one line each: a newline in a key is escaped
        found.append(m)
    return found


# --- --inputs documents ------------------------------------------------------------------

NASTY = [
    "",
    ".",
    "..",
    "/",
    "../x",
    "~nosuchuser/x",
    "~",
    "a\nb",
    "\x00",
    "\ud800",
    "\udcff",
    "é",
    "🦀",
    " ",
    "-",
    "@x",
    "$(x)",
    "a;b",
    "`x`",
    "x" * 5000,
    "pre-tool",
    "PreToolUse",
    "scripted",
    "anthropic",
    "/dev/null",
    "/dev/zero",
    "@transcript:/dev/zero",
    "file_write(**)",
    "shell(*)",
    "b1/a",
    "(a+)+$",
]
text = st.text(max_size=20) | st.sampled_from(NASTY)
numbers = (
    st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0, -1, 0.0, 1e308, 2**63, 2**64 + 1])
)
json_values = st.recursive(
    st.none() | st.booleans() | numbers | text,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(text, kids, max_size=4),
    max_leaves=12,
)

VALID = {
    "workspace": ".",
    "model": {
        "provider": "scripted",
        "script": {"b1/a": [{"tool_calls": [{"tool": "file_read", "input": {"file_path": "x"}}]}]},
        "timeout_seconds": 10,
        "max_retries": 1,
        "price": {"input_per_mtok": 1, "output_per_mtok": 2},
    },
    "budget": {"seconds": 60, "turns": 10, "tokens": None, "usd": 1.5},
    "hooks": [{"event": "pre-tool", "command": "echo {tool} {path}"}],
    "settings": [],
    "gate": {"allow": ["file_read", "shell(git diff *)"], "deny": ["file_write(secrets/**)"]},
    "shell": {"allow_interpreters": False, "extra_allowed_commands": ["bash"]},
    "request": "add a flag",
    "spec": ".orkeon/spec.md",
    "plan": {"batches": [{"name": "b1", "roles": [{"name": "a", "roots": ["src/"], "task": "t"}]}]},
    "audit": {"build": ["true"], "test": None},
    "repair": {"run": ".orkeon/runs/x", "role": "b1/a"},
    "concurrency": 2,
}
VALID_SETTINGS_HOOKS = {
    "PreToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "true"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "echo ok", "timeout": 3}]}],
}


def paths_in(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside `doc` (dict keys and list indexes)."""
    found = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            found += paths_in(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            found += paths_in(v, (*prefix, i))
    return found


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    """A valid document with a few values replaced, removed or added."""
    doc = json.loads(json.dumps(VALID))
    if draw(st.booleans()):
        doc["hooks"] = json.loads(json.dumps(VALID_SETTINGS_HOOKS))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths_in(doc)))
        if not path:
            continue
        *parent_path, last = path
        parent = doc
        for p in parent_path:
            parent = parent[p]
        how = draw(st.sampled_from(["replace", "remove", "add"]))
        if how == "replace":
            parent[last] = draw(json_values)
        elif how == "remove":
            del parent[last]
        elif isinstance(parent, dict):
            parent[draw(text)] = draw(json_values)
        else:
            parent.append(draw(json_values))
    return doc


@SETTINGS
@given(
    doc=json_values | mutated() | st.just(VALID),
    step=st.sampled_from([None, *crew_steps()]),
)
def test_validate_exits_0_or_names_the_field(cwd: Path, doc: Any, step: str | None) -> None:
    """docs/output.md: exit 2 for "usage error or invalid inputs; nothing ran; the
    message names the bad field". Never exit 1, never a traceback, one line per problem."""
    args = ["--inputs", json.dumps(doc)]  # NaN and Infinity as Python writes them
    if step:
        args += ["--step", step]
    rc, lines, out = validate(*args)
    event(f"exit {rc}")
    if rc == 0:
        assert out == "inputs are valid\n"
        assert not any(line.startswith("orkeon:") for line in lines)
    else:
        assert_refused_well(rc, lines)


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"foo\nbar": 1}, "foo\\nbar"),
        ({"budget": {"seconds": float("nan")}}, "inputs"),
        ({"budget": {"seconds": float("inf")}}, "inputs"),
        ({"workspace": "~nosuchuser/ws"}, "workspace"),
        ({"settings": ["~nosuchuser/settings.json"]}, "settings[0]"),
        ({"model": {"provider": "scripted", "script": "~nosuchuser/s.json"}}, "model.script"),
        ({"model": {"provider": "scripted", "script": "/dev/zero"}}, "model.script"),
        ({"model": {"provider": "scripted", "script": "@transcript:/dev/zero"}}, "model.script"),
        ({"repair": {"run": "~nosuchuser/run", "role": "b1/a"}}, "repair.run"),
        ({"model": {"provider": "scripted", "script": {"a\nb": 1}}}, "model.script.a\\nb"),
    ],
)
def test_inputs_found_to_crash_or_hang(cwd: Path, doc: Any, field: str) -> None:
    """Each of these crashed `orkeon validate` (exit 1, internal error), hung it (reading
    /dev/zero), let NaN through to result.json, or split a problem over two lines."""
    step = "tasks-repair" if "repair" in doc else "dev-batches"
    # A hang (reading /dev/zero) never returns: the suite's 120 s time-out is its guard.
    rc, lines, _ = validate("--inputs", json.dumps(doc), "--step", step)
    found = assert_refused_well(rc, lines)
    assert field in [m["field"] for m in found], lines


def test_inputs_file_under_an_unknown_home(cwd: Path) -> None:
    rc, lines, _ = validate("--inputs", "@~nosuchuser/inputs.json")
    assert assert_refused_well(rc, lines)[0]["field"] == "inputs"


def make_pipeline(
    ws: Path,
    *,
    gate: Gate | None = None,
    rule_sets: tuple[RuleSet, ...] = (),
    log: EventLog | None = None,
    tool_hooks: Any = None,
) -> Pipeline:
    """The real Pipeline over `ws`: no budget limit, the base program list, no native hooks."""
    return kit.pipeline.make_pipeline(
        ws, gate=gate, rule_sets=rule_sets, events=log, hooks=tool_hooks or NO_HOOKS
    )


def call(pipeline: Pipeline, ctx: CallContext, tool: str, input: dict[str, Any]) -> Any:
    async def go() -> Any:
        return await pipeline.call(ctx, tool, input, "c1")

    return anyio.run(go)


# --- native hook commands ----------------------------------------------------------------

SPLIT_ALPHABET = [*" \t\r\n'\"\\ab#é\x0b\u00a0$*", "\\\n", "''", '""', '\\"', "\\\\"]


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(SPLIT_ALPHABET), max_size=14).map("".join) | st.text(max_size=12))
def test_split_is_shlex_split(command: str) -> None:
    """docs/hooks.md: "split like a POSIX shell splits words (quotes honoured,
    `shlex`)". commands.split_words gives shlex.split's words, and refuses with its message."""
    from orkeon_run.policy.words import CommandRefused, split_words

    try:
        want: Any = shlex.split(command)
    except ValueError as exc:
        want = f"cannot split the command: {exc}"
    try:
        got: Any = split_words(command)
    except CommandRefused as exc:
        got = str(exc)
    assert got == want


@pytest.mark.timeout(20)
def test_a_huge_shell_command_is_split_in_linear_time(tmp_path: Path) -> None:
    """shlex.split is quadratic in a word's length: a 1.6 MB word took 41 s on the event
    loop. The model writes shell commands, and the gate's rules split them too."""
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    pipeline = make_pipeline(ws, gate=Gate(deny=["shell(git push *)"]))
    ctx = CallContext(step="dev-batches", role="b1/a", workspace=ws, batch="b1", roots=("src/",))
    commands = [
        "echo " + "x" * 1_600_000,
        'echo "' + 'y \\" ' * 300_000 + '"',
        'echo "' + "z" * 1_600_000,  # never closed
    ]
    # This process's CPU time, which other processes' load does not inflate: linear
    # splitting takes a fraction of a second of it, the quadratic one took 41 s.
    t0 = time.process_time()
    outs = [call(pipeline, ctx, "shell", {"command": c}) for c in commands]
    assert time.process_time() - t0 < 5
    assert outs[0].outcome == "ran" and outs[0].result["exit_code"] == 126  # E2BIG: one arg
    why = "shell: cannot split the command: No closing quotation"
    assert outs[2].result == {"exit_code": 126, "stdout": "", "stderr": why}


META = [*OPERATORS, "'", '"', "\\", "{", "}", "*", "?", "~", "$", "#", "(", ")", "\n", "\t", "\x00"]
WORDS = ["echo", "true", "false", "{tool}", "{path}", "{event}", "{x}", "--", "-n", "a b", "é"]
piece = st.sampled_from(META) | st.sampled_from(WORDS) | st.text(max_size=6)


def expanded(command: str, tool: str, path: str) -> str:
    """The command with its three words replaced (docs/hooks.md)."""
    return command.replace("{tool}", tool).replace("{path}", path).replace("{event}", "pre-tool")


@st.composite
def hook_commands(draw: st.DrawFn) -> str:
    """Metacharacters and words in every position; sometimes very long."""
    parts = draw(st.lists(piece, min_size=1, max_size=8))
    sep = draw(st.sampled_from([" ", "", "  "]))
    command = sep.join(parts)
    if draw(st.integers(0, 9)) == 0:
        command = command + " " + "x" * draw(st.sampled_from([10_000, 200_000]))
    if draw(st.booleans()):
        command = draw(st.sampled_from(["echo ", "true ", "false "])) + command
    return command


@SETTINGS
@given(commands=st.lists(hook_commands(), min_size=1, max_size=3))
def test_hook_commands_are_one_program_or_refused_naming_the_hook(
    cwd: Path, commands: list[str]
) -> None:
    """docs/hooks.md: "split like a POSIX shell splits words ... into one program and
    its arguments"; `;`, `&&`, `||`, `|`, `&`, `<`, `>`, `>>`, `$(` and backticks "are refused
    when the inputs are read (exit 2)"."""
    hooks = [{"event": "pre-tool", "command": c} for c in commands]
    rc, lines, _ = validate("--inputs", json.dumps({"hooks": hooks}))
    event(f"exit {rc}")
    bad = set()
    for i, c in enumerate(commands):
        if "\n" in c or "\r" in c:  # a hook command is one line
            bad.add(i)
            continue
        try:
            split_command(c)
        except ValueError:
            bad.add(i)
    if rc == 0:
        assert not bad
        for c in commands:
            assert not any(op in c for op in OPERATORS) and "\x00" not in c
            argv = argv_for(c, tool="file_write", event="pre-tool", path="src/x.py")
            assert argv and argv[0]
            # shlex itself is quadratic in a word's length (see test_split_is_shlex_split)
            split = shlex.split if len(c) < 5000 else split_command
            assert argv == split(expanded(c, "file_write", "src/x.py"))
    else:
        found = assert_refused_well(rc, lines)
        # validate also names a hook whose program or script is missing (a random word
        # is rarely a program on PATH): docs/inputs.md, "Hooks and settings".
        missing = ("no such program", "no such file: ", "is not executable")
        found = [m for m in found if not m["message"].startswith(missing)]
        assert {m["field"] for m in found} == {f"hooks[{i}].command" for i in bad}


@SETTINGS
@given(command=hook_commands())
def test_accepted_hook_commands_run_or_could_not_run(cwd: Path, command: str) -> None:
    """What validation accepts runs as that program with those arguments, or reads
    `[pre-tool hook #N (CMD) could not run: REASON]`; it never raises."""
    try:
        split_command(command)
    except ValueError:
        assume(False)
    hook = NativeHook(1, "pre-tool", command)

    async def go() -> Any:
        return await run_hook(
            hook,
            tool="file_read",
            path="README.md",
            workspace=cwd,
            program_rules=ShellRules(),
            limit=5,
        )

    nr = anyio.run(go)
    cmd = re.escape(expanded(command, "file_read", "README.md"))
    if nr.line is not None:
        assert re.fullmatch(
            rf"\[pre-tool hook #1 \({cmd}\) (exited \d+: .*|could not run: .+)\]", nr.line, re.S
        ), nr.line
    else:
        assert nr.run.exit_code == 0


# --- model-written paths through the real Pipeline -----------------------------------------

ROLES = [("src/a",), ("src/a/",), ("src/ab",), ("src/a", "docs")]
PATH_TOOLS = ["file_write", "file_edit", "file_read", "list_files", "search_files"]
GATE_DENY = "file_write(**/secret*)"
RULE_DENY = "file_edit(**/locked/**)"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tmp/ws: src/a, src/ab, Src/a, docs, symlinks (a root to its sibling, out of the
    workspace, dangling), a file named like its root; tmp/outside beside it."""
    root = tmp_path_factory.mktemp("paths").resolve()
    ws = root / "ws"
    for d in ("src/a/locked", "src/ab", "Src/a", "docs", ".git"):
        (ws / d).mkdir(parents=True)
    (ws / "README.md").write_text("# readme\n")
    (ws / "src/a/x.py").write_text("x = 1\n")
    (ws / "src/ab/y.py").write_text("y = 1\n")
    (ws / "src/a/locked/z.py").write_text("z = 1\n")
    (root / "outside").mkdir()
    (root / "outside/secret.txt").write_text("secret\n")
    os.symlink("../ab", ws / "src/a/to_ab")  # inside the root, pointing out of it
    os.symlink(str(root / "outside"), ws / "src/a/out")  # out of the workspace
    os.symlink("/nonexistent/target", ws / "src/a/dangling")
    os.symlink("../../outside/new.txt", ws / "src/a/dangling_out")
    os.symlink("a", ws / "src/a_alias")  # a sibling name that points into the root
    return root


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file of the workspace and of the folder beside it (symlinks not followed):
    its size and mtime."""
    found = {}
    for top in (root / "ws", root / "outside"):
        for dirpath, dirnames, filenames in os.walk(top):
            for name in filenames + dirnames:
                p = os.path.join(dirpath, name)
                st_ = os.lstat(p)
                found[p] = (st_.st_size, st_.st_mtime_ns)
    return found


SEGMENTS = [
    "src",
    "a",
    "ab",
    "Src",
    "SRC",
    "docs",
    "locked",
    "..",
    ".",
    "",
    "to_ab",
    "out",
    "dangling",
    "dangling_out",
    "a_alias",
    "x.py",
    "y.py",
    "z.py",
    "new.py",
    "secret.py",
    "README.md",
    ".git",
    "\x00",
    "\ud800",
    "\udcff",
    "é",
    " ",
    "-",
    "~",
    "*",
    "a\nb",
    "x" * 300,
]


@st.composite
def model_paths(draw: st.DrawFn, ws: str, root: str) -> str:
    start = draw(st.sampled_from(["", "src/a/", "src/a/", "src/ab/", "src/a/locked/", "docs/"]))
    parts = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4))
    path = start + "/".join(parts)
    lead = draw(st.sampled_from(["", "", "", "/", "./", ws + "/", root + "/", "//"]))
    trail = draw(st.sampled_from(["", "", "", "/", "//", "/."]))
    return lead + path + trail


def call_input(tool: str, path: str) -> dict[str, Any]:
    if tool == "file_write":
        return {"file_path": path, "content": "written\n"}
    if tool == "file_edit":
        return {"file_path": path, "old_string": "= 1", "new_string": "= 2"}
    if tool == "file_read":
        return {"file_path": path}
    if tool == "list_files":
        return {"path": path}
    return {"pattern": "1", "path": path}


@pytest.mark.slow
@settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data())
def test_model_paths_through_the_pipeline(tree: Path, data: st.DataObject) -> None:
    """DESIGN: "every model-written path is resolved (symlinks included) and must stay inside
    the workspace, and for a batch role inside its roots". Every refusal is a documented
    text, exactly; the file system shows no write outside the role's roots."""
    ws = tree / "ws"
    roots = data.draw(st.sampled_from(ROLES))
    tool = data.draw(st.sampled_from(PATH_TOOLS))
    raw = data.draw(model_paths(str(ws), str(tree)))
    input = call_input(tool, raw)
    events = tree / "events.jsonl"
    log = EventLog(events)
    rules = (RuleSet.parse("batch", deny=[RULE_DENY]),)
    pipeline = make_pipeline(ws, gate=Gate(deny=[GATE_DENY]), rule_sets=rules, log=log)
    ctx = CallContext(step="dev-batches", role="b1/a", workspace=ws, batch="b1", roots=roots)
    before = snapshot(tree)
    try:
        out = call(pipeline, ctx, tool, input)
    finally:
        log.close()
    after = snapshot(tree)

    # What changed on disk lies inside a root, and only a writing call that ran changed it.
    allowed = [os.path.realpath(ws / r) for r in roots]
    changed = [p for p in after if after[p] != before.get(p)]
    changed += [p for p in before if p not in after]
    for p in changed:
        real = os.path.realpath(p)
        assert any(real == a or real.startswith(a + "/") for a in allowed), (raw, p)
    if changed:
        assert tool in ("file_write", "file_edit") and out.outcome == "ran", (raw, changed)

    text = out.result if isinstance(out.result, str) else None
    event(f"{tool} {out.outcome} {out.refused_by}")
    if out.outcome == "refused":
        expected = {
            "gate": f"[refused by the gate: {GATE_DENY}]",
            "rules": f"[refused by rule set batch: {RULE_DENY}]",
            "workspace": f"[refused: {raw} is outside the workspace]",
            "roots": f"[refused: {raw} is outside this role's roots ({', '.join(roots)})]",
        }
        if out.refused_by is None:  # not a call it could run: an empty path
            assert raw == "" and text is not None and text.startswith("error: ")
        else:
            assert text == expected[out.refused_by]
        if out.refused_by == "roots":
            assert tool in ("file_write", "file_edit")
    # The independent view: a writing call to a path that resolves outside the roots (or
    # the workspace) never runs.
    if tool in ("file_write", "file_edit") and "\x00" not in raw and raw:
        try:
            real = os.path.realpath(raw if raw.startswith("/") else os.path.join(ws, raw))
            inside = any(real == a or real.startswith(a + "/") for a in allowed)
        except (ValueError, UnicodeError):
            inside = False
        if not inside:
            assert out.outcome == "refused", (raw, out.result)
    # The call's event is whole strict JSON.
    last = events.read_bytes().splitlines()[-1]
    line = json.loads(last, parse_constant=lambda c: pytest.fail(f"{c} in an event"))
    assert line["type"] == "tool.call" and line["input"] == input


def test_newline_in_a_folder_name_does_not_slip_past_a_deny_rule(tree: Path) -> None:
    """A gate rule `file_write(**/secret.py)` matched `a/secret.py` but not `x\\ny/secret.py`:
    the path regex's `.` did not cross the newline."""
    from orkeon_run.policy.rules import parse_rule

    rule = parse_rule("file_write(**/secret.py)")
    for path in ("secret.py", "a/secret.py", "x\ny/secret.py", "x\n/secret.py", "\n/\n/secret.py"):
        assert rule.matches("file_write", (path,)), path
    assert RuleSet.parse("g", deny=["file_write(*.env)"]).refusal("file_write", ("a\nb/x.env",))


# --- patterns that backtrack ---------------------------------------------------------------

CATASTROPHIC = [
    r"(a+)+$",
    r"(a|aa)+$",
    r"(a|a?)+$",
    r"(\w+\w+)+x",
    r"^(([a-z])+.)+[A-Z]([a-z])+$",
    r"(.*a){12}",
]


@pytest.mark.timeout(20)
@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_matchers_are_bounded(pattern: str) -> None:
    """The hooks contract (docs/hooks.md): matchers are regexes "tested against one field of
    the event"; a pattern that backtracks without end must not hang the run. A match that
    runs out of time counts as a match (matchers.py: "a guard is never skipped because its
    pattern is slow")."""
    m = Matcher(pattern)
    t0 = time.monotonic()
    for value in ("a" * 40 + "!", "a" * 5000 + "!", "file_write", "x" * 100_000):
        m._cache.clear()
        m.matches(value)
    # A bound that must stay: the contract is itself a time bound (each match gives up after
    # matchers.MATCH_SECONDS, 0.05 s, of wall time, so four take 0.2 s, quiet). 2 s is 10x
    # that; an unbounded pattern on 5000 `a`s runs for hours.
    assert time.monotonic() - t0 < 2


regex_piece = st.sampled_from(
    [
        "a",
        "a+",
        "(a+)+",
        "(a|aa)",
        "*",
        "+",
        "?",
        ".*",
        "(",
        ")",
        "|",
        "$",
        "^",
        "\\",
        "[a-z]+",
        "{2,}",
        "\\w+",
        "(?:",
        "(?=",
        "(?i)",
    ]
)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    parts=st.lists(regex_piece, min_size=1, max_size=10),
    value=st.sampled_from(["a" * 3000 + "!", "file_write", "Bash", "a" * 30 + "b"]),
)
def test_any_matcher_answers_in_bounded_time(parts: list[str], value: str) -> None:
    m = Matcher("".join(parts))
    t0 = time.monotonic()
    m.matches(value)
    m.matches_tool("file_write")
    # A bound that must stay, as above: two matches of at most 0.05 s each, quiet; 2 s is
    # 20x that, and a pattern that backtracks unbounded on 3000 `a`s runs for hours.
    assert time.monotonic() - t0 < 2.0


@pytest.mark.timeout(20)
def test_a_catastrophic_matcher_in_a_real_pipeline(tmp_path: Path) -> None:
    """The model cannot bring a long tool name to a matcher: an unknown tool is not a call
    the pipeline can run, and no hook runs for it. Known tools pass the bounded matcher."""
    from orkeon_run.hooks.claude.settings import SettingsHooks

    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    marker = tmp_path / "ran"
    hook = {"type": "command", "command": f"touch {marker}"}
    config = kit.hooks.SETTINGS.validate_python(
        {"PreToolUse": [{"matcher": r"(a+)+$", "hooks": [hook]}]}
    )
    log = EventLog(tmp_path / "events.jsonl")
    hooks = SettingsHooks(config, workspace=ws, events=log)
    pipeline = make_pipeline(ws, log=log, tool_hooks=hooks)
    ctx = CallContext(step="dev-batches", role="b1/a", workspace=ws)
    long_name = "a" * 100_000 + "!"
    # No matcher ever sees the long name (`hooks == []` below); one that did would
    # backtrack past the 20 s hang guard.
    unknown = call(pipeline, ctx, long_name, {})
    known = call(pipeline, ctx, "list_files", {})
    assert unknown.outcome == "refused" and unknown.hooks == []
    assert unknown.result == f"error: there is no tool named {long_name!r}"
    assert known.outcome == "ran" and not marker.exists()


# A rule whose pattern backtracked as a regex; a subject it does not match; one it does.
# Path rules are file_read's: a call that runs must not make a thousand folders (pytest's
# clean-up of its old temporary folders recurses once per folder).
HOSTILE_RULES = [
    ("shell(*a*a*b)", "shell", "echo " + "a" * 3000, "echo " + "a" * 3000 + "b"),
    ("shell(*a*a*a*a*a*a*b)", "shell", "echo " + "a" * 3000, "echo " + "a" * 3000 + " b"),
    ("file_read(**/a/**/a/**/a/**/b)", "file_read", "a/" * 1000 + "bc", "a/" * 1000 + "b"),
    ("file_read(**/a/**/a/**/a/**/b)", "file_read", "a/" * 200 + "bc", "a/" * 200 + "b"),
    (
        "file_read(*a*a*a*a*a*b)",
        "file_read",
        ("a" * 250 + "/") * 8 + "bc",
        "a/" * 8 + "a" * 250 + "b",
    ),
    # `**` must skip past the earlier folders that start with `b`.
    (
        "file_read(a/**/b*b*b*c)",
        "file_read",
        "a/" + "b/" * 200 + "bbb",
        "a/" + "b/" * 200 + "bbbc",
    ),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("rule", "tool", "miss", "hit"), HOSTILE_RULES)
def test_rules_that_backtracked_give_the_right_verdict_in_linear_time(
    tmp_path: Path, rule: str, tool: str, miss: str, hit: str
) -> None:
    """A gate rule's verdict depends on the rule and the call only: a deny rule refuses the
    calls it matches and no other, an allow rule lets through the calls it matches and no
    other. Before, such patterns were matched under a 50 ms time limit that failed closed,
    so on a busy machine a deny rule refused a call it does not match (and `shell(*a*a*b)`
    on a 3 kB command held the event loop for 5 s; four `**` on a deep path, for minutes).
    The match itself takes milliseconds of this thread's CPU time; the bound is 1 s."""
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    ctx = CallContext(step="dev-batches", role="b1/a", workspace=ws)
    for kind in ("deny", "allow"):
        gate = Gate(deny=[rule]) if kind == "deny" else Gate(allow=[rule])
        pipeline = make_pipeline(ws, gate=gate)
        for subject, matches in ((miss, False), (hit, True)):
            if tool == "shell":
                input: dict[str, Any] = {"command": subject}
                subjects = kit.pipeline.subjects(tool, input)
            else:
                input = {"file_path": subject}
                subjects = kit.pipeline.subjects(tool, input, subject)
            start = time.thread_time()
            verdict = gate.refusal(tool, subjects)
            assert time.thread_time() - start < 1.0, (kind, matches)
            refused = matches == (kind == "deny")
            assert verdict == (rule if refused else None), (kind, matches)
            out = call(pipeline, ctx, tool, input)
            if refused:
                assert (out.outcome, out.refused_by) == ("refused", "gate"), (kind, out.result)
                assert out.result == f"[refused by the gate: {rule}]"
            else:
                assert (out.outcome, out.refused_by) == ("ran", None), (kind, out.result)
