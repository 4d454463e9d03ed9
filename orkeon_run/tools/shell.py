"""The shell tool: one program and its arguments (docs/tools.md, "shell"), run in the workspace
through `proc`, with no shell and stdin from /dev/null; with a `SandboxPolicy`, inside the
OS sandbox it describes (tools/sandbox), or refused when no sandbox can be made here."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import environ as environ_mod
from .. import proc_loop
from ..calls import CheckedCall
from ..catalog import SHELL_CAP, ShellInput
from ..errors import Idle
from ..policy.programs import ShellRules
from . import sandbox as sandbox_mod
from .sandbox import probe

if TYPE_CHECKING:
    from . import ToolEnv

if TYPE_CHECKING:
    from .sandbox import SandboxPolicy

REFUSED_EXIT = 126  # what a shell answers for a command it will not run
NOT_FOUND_EXIT = 127


def refused(reason: str, code: int = REFUSED_EXIT) -> dict[str, Any]:
    return {"exit_code": code, "stdout": "", "stderr": f"shell: {reason}"}


def _dropped(text: str, dropped: int) -> str:
    if not dropped:
        return text
    sep = "" if text.endswith("\n") or not text else "\n"
    return f"{text}{sep}[shell: {dropped} more bytes of output were dropped]"


async def shell(
    words: Sequence[str],
    *,
    workspace: Path,
    rules: ShellRules,
    timeout: float,
    environ: Mapping[str, str] | None = None,
    sandbox: SandboxPolicy | None = None,
    unsplit: str | None = None,
    idle: float | None = None,
) -> dict[str, Any] | str:
    """Run `words` (one program and its arguments) after the program rules. They are the
    words a checked call carries (`CheckedCall.words`), run as they are: this tool never
    splits a command, so what the rules judged is what runs. `unsplit`: why the call's
    command could not be split, the answer instead of a run. With `sandbox`, they run confined
    (with `environ`, else orkeon's environment scrubbed) and, where no sandbox can be
    made, is not run: the answer is the text `[refused: the shell sandbox is not available
    here: REASON]`. Without, it runs with every right of orkeon's user. With `idle`, a
    command that prints nothing for that long and does not end has its process group
    killed and raises errors.Idle (the watchdog, docs/inputs.md, "The no-progress watchdog")."""
    if sandbox is not None:
        avail = probe(sandbox.bwrap)
        if not avail.ok:
            return avail.refusal()
    if unsplit is not None:
        return refused(unsplit)
    argv = list(words)
    why = rules.refusal(argv)
    if why is not None:
        return refused(why)
    if sandbox is None:
        res = await proc_loop.arun(
            argv, cwd=workspace, timeout=timeout, env=environ, cap=SHELL_CAP, idle=idle
        )
    else:
        env = environ if environ is not None else environ_mod.scrubbed()
        res = await sandbox_mod.arun(
            sandbox, argv, cwd=workspace, timeout=timeout, env=env, cap=SHELL_CAP, idle=idle
        )
    if res.idle and idle is not None:
        command = shlex.join(argv)
        raise Idle({"kind": "tool", "name": "shell", "command": command, "seconds": idle})
    if res.error is not None:
        code = NOT_FOUND_EXIT if res.error.startswith("no such program") else REFUSED_EXIT
        return refused(res.error, code)
    stderr = _dropped(res.stderr, res.stderr_dropped)
    if res.timed_out:
        sep = "" if stderr.endswith("\n") or not stderr else "\n"
        stderr += f"{sep}shell: the command ran longer than {timeout:.3g} s and was stopped"
    return {
        "exit_code": res.exit_code,
        "stdout": _dropped(res.stdout, res.stdout_dropped),
        "stderr": stderr,
    }


async def run_shell(call: CheckedCall, env: ToolEnv, timeout: float) -> dict[str, Any] | str:
    """The checked call's words, exactly those the rules and program checks judged; a
    command the check could not split is answered with why (`call.unsplit`)."""
    assert isinstance(call.args, ShellInput)
    return await shell(
        call.words if call.words is not None else (),
        unsplit=call.unsplit,
        workspace=env.workspace,
        rules=env.shell_rules,
        timeout=timeout,
        environ=env.environ,
        sandbox=env.sandbox.with_roots(env.roots) if env.sandbox is not None else None,
        idle=env.idle,
    )
