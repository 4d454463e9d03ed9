"""What running Claude Code hook scripts as Claude Code runs them costs (issue 12):

- the Claude Code-shaped transcript (`transcript_path`): the cost of one message written to
  both transcripts, against orkeon's own transcript alone (the baseline, in the same
  rounds); a session's messages are a user prompt, then per turn an answer with a tool call
  and its result. Target: the mirror at most doubles the transcript's cost per message
  (ratio ≤ 2.2, both written the same way: one line, one `write()`).
- the note on a file a PostToolUse hook rewrote: keeping a just-written 10 KB file's bytes
  and comparing them afterwards (no change: the common case), against the `file_write` of
  that file itself. Target under 0.5×: a fraction of the write.
- `CLAUDE_ENV_FILE`: sourcing one hook's file (one shell, two short Python processes)
  at the end of SessionStart, against `subprocess.run(["true"])`; once per role, for
  information.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from orkeon_run.hooks.claude.envfile import EnvFiles
from orkeon_run.hooks.claude.rewrites import Watch
from orkeon_run.hooks.claude.run import CommandRunner, hook_environment, user_shell
from orkeon_run.ledger import Ledger
from orkeon_run.limits import BudgetLimits
from orkeon_run.models.base import Message, ToolCall
from orkeon_run.models.claude_transcript import ClaudeTranscript
from orkeon_run.models.transcript import TranscriptWriter
from orkeon_run.pipeline import check_call
from orkeon_run.tools.files import Target, write

from .common import header, row

TURNS = 4000  # messages: 1 + 2 per turn
BATCH = 40
WATCHES = 2000
SOURCES = 15
CONTENT = "".join(f"line {i}: some code here = {i * 7}\n" for i in range(330))  # ~10 KB


def interleaved(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(v) for name, v in samples.items()}


def conversation() -> list[tuple[str, Message, dict[str, object]]]:
    """A prompt, then per turn an answer with one call and the call's result."""
    out: list[tuple[str, Message, dict[str, object]]] = [
        ("sent", Message("user", "Add mul(a, b) to src/calc.py."), {})
    ]
    usage = {"input_tokens": 2100, "output_tokens": 40}
    for i in range(TURNS):
        call = ToolCall(
            f"call_{i}",
            "file_edit",
            {"file_path": "src/calc.py", "old_string": "a" * 40, "new_string": "b" * 60},
        )
        answer = Message("assistant", "Let me edit it.", (call,))
        out.append(("received", answer, {"usage": usage, "seconds": 0.8}))
        result = "edited src/calc.py: replaced 1 occurrence"
        out.append(("sent", Message("tool", result, tool_call_id=call.id, name="file_edit"), {}))
    return out


MESSAGES = conversation()


def transcripts(folder: Path) -> dict[str, float]:
    """Median seconds per message: orkeon's transcript alone, and with the mirror; the
    two writers take turns, a batch of messages each, so load weighs on both alike."""
    own = TranscriptWriter(folder / "own.jsonl", "b1/api")
    cc = ClaudeTranscript(folder / "cc.jsonl", session_id="s", cwd=str(folder), version="0")
    cc.start([])
    both = TranscriptWriter(folder / "both.jsonl", "b1/api", cc)
    samples: dict[str, list[float]] = {"own": [], "both": []}
    for start in range(0, len(MESSAGES), BATCH):
        batch = MESSAGES[start : start + BATCH]
        for name, writer in (("own", own), ("both", both)):
            t0 = time.perf_counter()
            for direction, message, extra in batch:
                writer.message(direction, message, **extra)  # type: ignore[arg-type]
            samples[name].append((time.perf_counter() - t0) / len(batch))
    own.close()
    both.close()
    return {name: statistics.median(v) for name, v in samples.items()}


def main() -> None:
    header()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t = transcripts(folder)
        own, both = t["own"], t["both"]
        ratio = both / own
        row(
            "transcript + Claude Code mirror, per message",
            f"{both * 1e6:.1f} µs",
            f"{own * 1e6:.1f} µs",
            ratio,
            "≤ 2.2×",
            ratio <= 2.2,
        )
        row(
            "  the mirror's own cost, per message",
            f"{(both - own) * 1e6:.1f} µs",
            "",
            None,
            "",
            None,
        )

        ws = folder / "ws"
        (ws / "src").mkdir(parents=True)
        ws = ws.resolve()
        call = check_call(ws, "file_write", {"file_path": "src/app.py", "content": CONTENT})
        assert not hasattr(call, "by")
        target = Target.of(ws, ws / "src" / "app.py", "src/app.py")

        def watch() -> None:
            w = Watch.before_hooks(ws, call, "created src/app.py")  # type: ignore[arg-type]
            assert w is not None and w.note() is None

        t = interleaved({"write": lambda: write(target, CONTENT), "watch": watch}, WATCHES)
        ratio = t["watch"] / t["write"]
        row(
            "rewrite watch, 10 KB file, unchanged",
            f"{t['watch'] * 1e6:.1f} µs",
            f"{t['write'] * 1e6:.1f} µs",
            ratio,
            "< 0.5×",
            ratio < 0.5,
        )

        env = hook_environment(__import__("os").environ, ws)
        runner = CommandRunner(ws, env, user_shell(__import__("os").environ))

        async def source() -> None:
            files = EnvFiles.make()
            try:
                Path(files.path(0)).write_text('export MODE=ci\nexport PATH="/opt/x:$PATH"\n')
                changes = await files.changes(runner, 10.0, Ledger(BudgetLimits(seconds=None)))
                assert changes["MODE"] == "ci"
            finally:
                files.close()

        t = interleaved(
            {
                "true": lambda: subprocess.run(["true"], check=True),
                "source": lambda: anyio.run(source),
            },
            SOURCES,
        )
        row(
            "CLAUDE_ENV_FILE sourced, once per role",
            f"{t['source'] * 1e3:.1f} ms",
            f"{t['true'] * 1e3:.2f} ms",
            t["source"] / t["true"],
            "",
            None,
        )
    print(
        f"(medians: {len(MESSAGES) // BATCH} batches of {BATCH} messages each way; {WATCHES} watches and writes; "
        f"{SOURCES} sourcings; baselines: orkeon's transcript alone, the file_write itself, subprocess.run(['true']); "
        f"Python {sys.version.split()[0]})"
    )


if __name__ == "__main__":
    main()
