"""What the veil over orkeon's processes costs a hook (issue 21, item 7; docs/security.md,
"Hooks"): one native hook's run through `native.run_hook` (its process started by
hooks/spawn.py under the veil) against the same argv started bare by `proc_loop.arun` (how a
hook started before), alternating in each round so a passing load weighs on both alike.
Two hooks: `true` (the least a hook costs) and a Python script (a typical hook).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from orkeon_run import proc_loop
from orkeon_run.hooks.native import NativeHook, argv_for, run_hook
from orkeon_run.policy.programs import ShellRules
from orkeon_run.tools.sandbox.veil import veil_status

from .common import header, row

REPEAT = 30


async def measure(ws: Path, command: str) -> tuple[float, float]:
    hook = NativeHook(1, "pre-tool", command)
    rules = ShellRules(extra_allowed_commands=(sys.executable,))
    argv = argv_for(command, tool="file_read", event="pre-tool", path="x")

    async def veiled() -> None:
        run = await run_hook(hook, tool="file_read", path="x", workspace=ws, program_rules=rules)
        assert run.line is None, run.line

    async def bare() -> None:
        res = await proc_loop.arun(argv, cwd=ws, timeout=60)
        assert res.exit_code == 0, res

    samples: dict[str, list[float]] = {"veiled": [], "bare": []}
    await veiled()
    await bare()  # warm up: the veil's probe, the thread pool, the page cache
    for _ in range(REPEAT):
        for name, fn in (("veiled", veiled), ("bare", bare)):
            start = time.perf_counter()
            await fn()
            samples[name].append(time.perf_counter() - start)
    return statistics.median(samples["veiled"]), statistics.median(samples["bare"])


def main() -> None:
    bwrap, why = veil_status()
    header()
    if bwrap is None:
        print(f"(no veil here: {why}; hooks run bare)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp).resolve()
        for name, command in (("true", "true"), ("python3 -c pass", f"{sys.executable} -c pass")):
            veiled, bare = asyncio.run(measure(ws, command))
            row(f"native hook `{name}`: veiled vs bare spawn", f"{veiled * 1000:.1f} ms",
                f"{bare * 1000:.1f} ms", veiled / bare, "info", None)  # fmt: skip
    print(f"(medians of {REPEAT} runs each, alternating; the veil: bubblewrap with a PID "
          "namespace and /proc remounted, everything else as on the host)")  # fmt: skip


if __name__ == "__main__":
    main()
