"""The kept-up sandbox's exec server and its inits (tools/sandbox/server.py, server_init.py):
what an init costs, and the messages it speaks (docs/performance.md, "A kept-up command's
CPU, whole tree"; docs/security.md, "The kept-up sandbox")."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from kit.sandbox import ENV, LINUX_ONLY, PY, make_ws, require_sandbox

from orkeon_run.tools import sandbox as sb
from orkeon_run.tools.sandbox import server_init, session

pytestmark = LINUX_ONLY

# What json, socket, signal and the rest import: none of it in the server's heap, which
# each init (a fork) copies page by page as it writes.
HEAVY = ("re", "json", "enum", "socket", "signal", "contextlib", "warnings", "functools",
         "collections", "array")  # fmt: skip


def test_the_server_imports_only_what_each_init_needs() -> None:
    """performance.md: "each init is a fork of the server, and what it costs grows with the
    server's heap": the server's source, run as the server runs it (`python -I -S`), loads
    none of json's, socket's or signal's Python halves, nor re, enum, contextlib, warnings,
    array (and the collections it imports)."""
    probe = (
        "import sys; src = sys.stdin.read(); "
        "exec(compile(src, 'server', 'exec'), {'__name__': 'not-main'}); "
        "print(' '.join(sorted(sys.modules)))"
    )
    got = subprocess.run(
        [PY, "-I", "-S", "-c", probe], input=session._source(), capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    loaded = set(got.stdout.split())
    assert "_json" in loaded and "_socket" in loaded  # the source did run
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


@pytest.mark.parametrize(
    "request_",
    [
        {"argv": ["true"], "cwd": "/", "env": {"PATH": "/usr/bin:/bin"}},
        {
            "argv": ["printf", "%s\n", 'é ü 日本 "quoted" \\back\\ \t tab'],
            "cwd": "/tmp/a b",
            "env": {"A": "", "B": "line\nbreak", "C": "\u2028\x00"},
        },
        {"signal": 15},
        {"n": -1.5e3, "t": True, "f": False, "z": None, "list": [1, [2, {}]]},
    ],
)
def test_a_message_reads_as_json_loads_reads_it(request_: dict[str, object]) -> None:
    """security.md: orkeon sends the command to the init as "a JSON object {argv, cwd,
    env}": what the init reads is what json.loads reads, whatever the text holds."""
    assert server_init.parse(json.dumps(request_).encode()) == request_


@pytest.mark.parametrize("bad", [b"", b"{", b'{"a": 1} x', b"nonsense"])
def test_a_message_that_is_not_one_json_value_is_refused(bad: bytes) -> None:
    with pytest.raises((ValueError, StopIteration)):
        server_init.parse(bad)


@pytest.mark.parametrize(
    ("key", "value"),
    [("exit", 0), ("exit", 137), ("spare", 2), ("error", 'no such program: é\n"x" \\ y')],
)
def test_an_answer_is_written_as_json_dumps_writes_it(key: str, value: object) -> None:
    """security.md: the init answers `{"exit": CODE}` or `{"error": TEXT}`."""
    said = server_init.message(key, value)
    assert said == json.dumps({key: value}).encode()
    assert json.loads(said) == {key: value}


def test_mountinfo_paths_are_unescaped() -> None:
    """The kernel writes a space, a tab, a newline and a backslash in a mount point as
    \\ooo; the server finds the mounts under /tmp by their paths."""
    assert server_init.unescape("/tmp/plain") == "/tmp/plain"
    assert server_init.unescape("/tmp/a\\040b\\011c\\012d\\134e") == "/tmp/a b\tc\nd\\e"


def test_a_workspace_whose_path_the_kernel_escapes(in_tmp: Path) -> None:
    """security.md: each command gets a fresh /tmp holding again what the sandbox mounted
    under its own (the workspace, the policy's paths): with a space and a backslash in the
    workspace's path (escaped in the mount table) and a file among the roots, a command
    of the kept-up sandbox sees and writes them, and what it left in /tmp is gone for the
    next."""
    require_sandbox()
    base = in_tmp / "a b\\c"
    base.mkdir()
    ws = make_ws(base)
    (ws / "notes.txt").write_text("n\n")
    policy = sb.SandboxPolicy.for_role(ws, ["src/", "notes.txt"], run_dir=None)
    box = session.kept_up(policy, sb.probe().bwrap or Path("/usr/bin/bwrap"))
    try:
        assert box is not None, session.refused()
        first = box.run(
            ["sh", "-c", "cat README.md && echo w >> notes.txt && echo x > src/s && echo t > /tmp/left"],
            cwd=ws, timeout=30, env=ENV,
        )  # fmt: skip
        assert first is not None and (first.exit_code, first.stdout) == (0, "# readme\n"), first
        assert (ws / "notes.txt").read_text() == "n\nw\n" and (ws / "src/s").read_text() == "x\n"
        second = box.run(
            ["sh", "-c", "cat notes.txt && test ! -e /tmp/left"], cwd=ws, timeout=30, env=ENV
        )  # fmt: skip
        assert second is not None and (second.exit_code, second.stdout) == (0, "n\nw\n"), second
    finally:
        session.close_all()
