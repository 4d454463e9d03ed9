"""What the shell sandbox checks before each command (docs/tools.md, the shell tool's
results: "allowed but missing", "in a folder the sandbox hides"; docs/security.md, "What
the sandbox shows"), and that those checks are made from the policy's layers built once
for a role's paths (docs/performance.md, "Issue 22, per-call costs": `with_roots` makes a
copy of the policy for every call). Pure functions: no bubblewrap needed."""

from __future__ import annotations

import os
from pathlib import Path

from orkeon_run.tools.sandbox import _unrunnable
from orkeon_run.tools.sandbox.bwrap import _layers, unseen
from orkeon_run.tools.sandbox.policy import SandboxPolicy


def _tool(folder: Path, name: str, mode: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\necho ran\n")
    path.chmod(mode)
    return path


def _policy(ws: Path, hidden: tuple[Path, ...]) -> SandboxPolicy:
    return SandboxPolicy(workspace=ws, writable=(ws / "src",), hidden=hidden)


def test_the_first_file_on_the_path_the_command_sees_and_may_run_is_taken(
    off_tmp: Path,
) -> None:
    ws, shut, plain, runs = (off_tmp / n for n in ("ws", "shut", "plain", "bin"))
    ws.mkdir()
    _tool(shut, "tool", 0o755)  # hidden by the policy: skipped
    _tool(plain, "tool", 0o644)  # seen, not executable: skipped
    _tool(runs, "tool", 0o755)
    env = {"PATH": os.pathsep.join(map(str, (shut, plain, runs)))}
    assert _unrunnable(_policy(ws, (shut,)), ["tool"], ws, env) is None


def test_a_program_only_in_hidden_folders_names_the_first_found(off_tmp: Path) -> None:
    ws, first, second = (off_tmp / n for n in ("ws", "one", "two"))
    ws.mkdir()
    _tool(first, "tool", 0o755)
    _tool(second, "tool", 0o755)
    env = {"PATH": f"{first}{os.pathsep}{second}"}
    why = _unrunnable(_policy(ws, (first, second)), ["tool"], ws, env)
    assert why is not None
    assert why.startswith(f"no such program in the sandbox: tool ({first / 'tool'} is in a folder")


def test_found_but_not_executable_is_permission_denied_and_missing_is_no_such_program(
    off_tmp: Path,
) -> None:
    ws, plain = off_tmp / "ws", off_tmp / "plain"
    ws.mkdir()
    _tool(plain, "tool", 0o644)
    env = {"PATH": str(plain)}
    assert _unrunnable(_policy(ws, ()), ["tool"], ws, env) == "permission denied: tool"
    assert _unrunnable(_policy(ws, ()), ["nothere"], ws, env) == "no such program: nothere"


def test_the_deepest_layer_over_a_path_decides(off_tmp: Path) -> None:
    ws = off_tmp / "ws"
    inner = ws / "secret"  # hidden inside the shown workspace
    shown = inner / "shown"  # shown again inside the hidden folder
    policy = SandboxPolicy(workspace=ws, hidden=(inner,), visible=(shown,))
    assert not unseen(policy, str(ws / "a.txt"))
    assert unseen(policy, str(inner / "key"))
    assert not unseen(policy, str(shown / "x"))
    assert unseen(policy, "/tmp/x")  # the host's /tmp: the command has its own
    assert not unseen(policy, str(off_tmp / "elsewhere"))


def test_a_roles_copies_share_the_layers_and_other_paths_get_their_own(off_tmp: Path) -> None:
    ws = off_tmp / "ws"
    base = _policy(ws, (ws / "shut",))
    copy = base.with_roots(["src/"])  # what the shell tool makes for each call
    assert _layers(copy) is _layers(base)
    other = SandboxPolicy(workspace=base.workspace, hidden=(ws / "other",))
    assert _layers(other) is not _layers(base)
    assert unseen(other, str(ws / "other" / "f")) and not unseen(other, str(ws / "shut" / "f"))
    assert unseen(base, str(ws / "shut" / "f")) and not unseen(base, str(ws / "other" / "f"))
