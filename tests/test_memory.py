"""Memory flat in the number of calls (bench/bench_scale.py, item 5): what a long scripted
session keeps per call is its conversation, not the script or orkeon's bookkeeping."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import anyio
import pytest
from kit.agent import Rig

from orkeon_run.config.inputs import ScriptedModel, ScriptEntry
from orkeon_run.models import build_provider, check_model
from orkeon_run.models.base import Message

PER_TURN = 10
READ = {"tool": "file_read", "input": {"file_path": "src/a.py"}}
# Retained bytes per call, measured with tracemalloc at 475 (the conversation: a ToolCall,
# its input and id, the tool message and its text, a share of the assistant message); the
# script held as validated entries made it about 1,450. A bound between, with room.
PER_CALL_BOUND = 750


def write_script(path: Path, calls: int) -> Path:
    turns = [{"tool_calls": [READ] * PER_TURN} for _ in range(calls // PER_TURN)]
    path.write_text(json.dumps({"b1/api": turns}))
    return path


def entries_alive() -> int:
    gc.collect()
    return sum(isinstance(o, ScriptEntry) for o in gc.get_objects())


def held_by_a_session(tmp_path: Path, calls: int, context_tokens: int | None = None) -> int:
    """Bytes still allocated at the end of a role of `calls` file_read calls (script file,
    provider, agent and its conversation alive), as tracemalloc counts them."""
    script = write_script(tmp_path / f"script{calls}.json", calls)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        config = ScriptedModel(
            provider="scripted", script=str(script), context_tokens=context_tokens
        )
        provider = build_provider(config)
        rig = Rig(tmp_path / f"run{calls}", provider, tools=("file_read",))
        (rig.workspace / "src" / "a.py").write_text("x = 1\n")
        agent = rig.agent()
        result = anyio.run(agent.run, "Read src/a.py.")
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert (result.status, result.calls) == ("succeeded", calls)
    if context_tokens is None:
        assert len(agent.messages) > calls  # the whole conversation is still there
    else:
        assert len(agent.messages) < 400  # its oldest exchanges were removed
    anyio.run(agent.close)
    return held


def test_memory_per_call_is_the_conversation_only(tmp_path: Path) -> None:
    held_by_a_session(tmp_path, 20)  # first-use costs (imports, caches) out of the way
    n = 200
    small = held_by_a_session(tmp_path, n)
    large = held_by_a_session(tmp_path, 4 * n)
    per_call = (large - small) / (3 * n)
    # The conversation itself is counted: a measure that missed it would prove nothing.
    assert 250 < per_call < PER_CALL_BOUND, f"{per_call:.0f} bytes retained per call"


@pytest.mark.slow
def test_memory_stops_growing_once_the_window_is_full(tmp_path: Path) -> None:
    """With a small context window, compaction removes the oldest exchanges: past the
    point where the window fills, a call leaves (next to) nothing behind."""
    held_by_a_session(tmp_path, 20, context_tokens=4000)
    n = 400  # the window (4000 tokens) holds some 200 of these calls
    small = held_by_a_session(tmp_path, n, context_tokens=4000)
    large = held_by_a_session(tmp_path, 4 * n, context_tokens=4000)
    per_call = (large - small) / (3 * n)
    assert per_call < 50, f"{per_call:.0f} bytes retained per call"


def test_a_script_files_turns_are_decoded_only_when_asked_for(tmp_path: Path) -> None:
    """A loaded script file holds no validated entry: each turn's is built when the turn is
    asked for, and not kept. Validating it (`check_model`) keeps nothing either."""
    path = write_script(tmp_path / "s.json", 50 * PER_TURN)
    config = ScriptedModel(provider="scripted", script=str(path))
    alive = entries_alive()
    check_model(config, {})
    assert entries_alive() == alive
    provider = build_provider(config)
    assert entries_alive() == alive  # before the change: 50 more
    model = provider.for_role("b1/api")
    convo = [Message("system", "s"), Message("user", "task")]
    for turn_no in (1, 2):
        turn = anyio.run(model.complete, convo, [])
        assert [c.id for c in turn.tool_calls] == [f"call_{turn_no}_{k}" for k in range(1, 11)]
        assert {(c.name, c.input["file_path"]) for c in turn.tool_calls} == {
            ("file_read", "src/a.py")
        }
        convo.append(Message("assistant", turn.text, turn.tool_calls))
        assert entries_alive() == alive
