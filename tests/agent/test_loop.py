"""The agent loop over real parts: the scripted provider (or an HTTP provider against a
loopback fake), the real Pipeline, real settings-shape hooks (answer.py commands)."""

from __future__ import annotations

import itertools
import json
import shlex
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit import DATA
from kit.agent import Rig
from kit.fakes.anthropic_api import conversation_problem as anthropic_problem
from kit.fakes.openai_api import OpenAIFake, completion
from kit.fakes.openai_api import conversation_problem as openai_problem
from kit.fakes.protocols import OPENAI, PROTOCOLS
from kit.fakes.server import Reply
from kit.hooks import ans, group

from orkeon_run.agent.compaction import NOTE, stub
from orkeon_run.agent.loop import UNFINISHED, Agent, RoleResult
from orkeon_run.agent.meter import CHARS_PER_TOKEN, TARGET, TRIGGER
from orkeon_run.config.inputs import ScriptedModel
from orkeon_run.limits import BudgetLimits
from orkeon_run.models.scripted import FINAL_TEXT, ScriptedProvider

WRITE_A = {"tool": "file_write", "input": {"file_path": "src/a.py", "content": "a = 1\n"}}
READ_A = {"tool": "file_read", "input": {"file_path": "src/a.py"}}
LIST = {"tool": "list_files", "input": {}}


def scripted(entries: list[dict[str, Any]], role: str = "b1/api") -> ScriptedProvider:
    return ScriptedProvider(ScriptedModel(provider="scripted", script={role: entries}))  # type: ignore[arg-type]


def hook(matcher: str | None = None, **answer: Any) -> list[dict[str, Any]]:
    """One matcher group of one answer.py hook (kit.hooks.ans)."""
    return [group(ans(**answer), matcher=matcher)]


def recorded(path: Path) -> list[dict[str, Any]]:
    """The payloads an answer.py --record hook received, in order."""
    if not path.exists():
        return []
    return [json.loads(json.loads(line)["stdin"]) for line in path.read_text().splitlines()]


# --- conversation and transcript ---------------------------------------------------------


def test_transcript_has_one_line_per_message(tmp_path: Path) -> None:
    rig = Rig(
        tmp_path, scripted([{"text": "on it", "tool_calls": [WRITE_A, READ_A]}, {"text": "ok"}])
    )
    [result] = rig.run("build the api")
    assert rig.transcript_path == tmp_path / "run" / "transcripts" / "b1" / "api.jsonl"
    lines = rig.transcript()
    assert [(line["direction"], line["role"]) for line in lines] == [
        ("sent", "system"), ("sent", "user"), ("received", "assistant"),
        ("sent", "tool"), ("sent", "tool"), ("received", "assistant"),
    ]  # fmt: skip
    assert all(line["agent"] == "b1/api" and isinstance(line["ts"], float) for line in lines)
    assert lines[1]["content"] == "build the api"
    assert lines[2]["tool_calls"][0] == {
        "id": "call_1_1",
        "name": "file_write",
        "input": WRITE_A["input"],
    }
    assert lines[4] == {
        **lines[4],
        "content": "a = 1\n",
        "tool_call_id": "call_1_2",
        "name": "file_read",
    }
    assert lines[5]["usage"] == {"input_tokens": 0, "output_tokens": 0}
    assert (result.turns, result.calls, result.final_text) == (2, 2, "ok")


def test_transcript_lines_are_written_as_they_happen(tmp_path: Path) -> None:
    """A hook that copies the transcript while a call is pending sees the answer that
    made the call (the hooks contract's "Snapshot the transcript" recipe)."""
    copy = tmp_path / "copy.jsonl"
    transcript = tmp_path / "run" / "transcripts" / "b1" / "api.jsonl"
    cmd = shlex.join(["cp", str(transcript), str(copy)])
    rig = Rig(tmp_path, scripted([{"tool_calls": [LIST]}]),
              hooks={"PreToolUse": [{"hooks": [{"type": "command", "command": cmd}]}]})  # fmt: skip
    rig.run("list")
    seen = [json.loads(line) for line in copy.read_text().splitlines()]
    assert seen[-1]["direction"] == "received" and seen[-1]["tool_calls"][0]["name"] == "list_files"


def test_model_turn_events(tmp_path: Path) -> None:
    entries = [{"tool_calls": [LIST, LIST], "usage": {"input_tokens": 7, "output_tokens": 3}}]
    rig = Rig(tmp_path, scripted(entries))
    rig.run("go")
    first, second = rig.read_events("model.turn")
    assert {k: first[k] for k in ("step", "batch", "role", "turn", "tokens_in", "tokens_out", "usd", "tool_calls")} == {
        "step": "dev-batches", "batch": "b1", "role": "b1/api", "turn": 1,
        "tokens_in": 7, "tokens_out": 3, "usd": 0.0, "tool_calls": 2,
    }  # fmt: skip
    assert second["turn"] == 2 and second["tool_calls"] == 0 and second["seconds"] >= 0


def test_a_follow_up_prompt_continues_the_conversation(tmp_path: Path) -> None:
    entries = [{"tool_calls": [WRITE_A]}, {"text": "first done"},
               {"tool_calls": [READ_A]}, {"text": "repaired"}]  # fmt: skip
    rig = Rig(tmp_path, scripted(entries))
    first, second = rig.run("build", "the audit failed: fix it")
    assert (first.turns, first.calls, first.final_text) == (2, 1, "first done")
    assert (second.turns, second.calls, second.final_text) == (4, 2, "repaired")
    users = [line["content"] for line in rig.transcript() if line["role"] == "user"]
    assert users == ["build", "the audit failed: fix it"]
    assert rig.ledger.turns == 4


# --- settings-shape hooks ----------------------------------------------------------------


def test_session_start_and_prompt_contexts_are_appended(tmp_path: Path) -> None:
    log = tmp_path / "hooks.jsonl"
    hooks = {
        "SessionStart": hook(record=log, stdout="branch main"),
        "UserPromptSubmit": hook(record=log, stdout="be brief"),
    }
    rig = Rig(tmp_path, scripted([{"text": "a"}, {"text": "b"}]), hooks=hooks)
    rig.run("task one", "task two")
    users = [line["content"] for line in rig.transcript() if line["role"] == "user"]
    assert users == [
        "task one\n<hook_context>branch main</hook_context>\n<hook_context>be brief</hook_context>",
        "task two\n<hook_context>be brief</hook_context>",
    ]
    payloads = recorded(log)
    assert [(p["hook_event_name"], p.get("source"), p.get("prompt")) for p in payloads] == [
        ("SessionStart", "startup", None),
        ("UserPromptSubmit", None, "task one"),
        ("UserPromptSubmit", None, "task two"),
    ]
    assert payloads[0]["transcript_path"] == str(rig.transcript_path)


def test_a_blocked_prompt_stops_the_role_before_any_turn(tmp_path: Path) -> None:
    hooks = {"UserPromptSubmit": hook(stderr="no secrets in prompts", exit=2)}
    rig = Rig(tmp_path, scripted([{"tool_calls": [WRITE_A]}]), hooks=hooks)
    [result] = rig.run("my password is hunter2")
    assert result.status == "stopped"
    assert result.error is not None and result.error.endswith(
        "blocked the prompt: no secrets in prompts]"
    )
    assert (result.turns, result.calls) == (0, 0)
    assert [line["role"] for line in rig.transcript()] == ["system"]
    assert result.to_json() == {"name": "b1/api", "status": "stopped", "turns": 0, "calls": 0,
                                "refused": 0, "error": result.error}  # fmt: skip


def test_prompt_continue_false_stops_the_role(tmp_path: Path) -> None:
    stop = json.dumps({"continue": False, "stopReason": "frozen for the release"})
    rig = Rig(tmp_path, scripted([{"tool_calls": [WRITE_A]}]),
              hooks={"UserPromptSubmit": hook(stdout=stop)})  # fmt: skip
    [result] = rig.run("build")
    assert (result.status, result.error, result.turns) == ("stopped", "frozen for the release", 0)


def test_stop_hook_blocks_are_honoured_in_a_row_up_to_the_cap(tmp_path: Path) -> None:
    """docs/hooks.md, "Events": 'a Stop hook's blocks are honoured in a row up to
    `budget.stop_blocks` (default 8, as Claude Code) ... each continuation is one more turn,
    charged to the budget; at the cap the role finishes, with a `hook.stop_cap` event and
    the role's `stop_blocks_capped` in the result'."""
    log = tmp_path / "stop.jsonl"
    hooks = {"Stop": hook(record=log, stderr="tests fail", exit=2)}
    limits = BudgetLimits(seconds=None, stop_blocks=2)
    rig = Rig(tmp_path, scripted([{"text": "done?"}, {"text": "now done"}]), hooks=hooks,
              limits=limits)  # fmt: skip
    first, second = rig.run("build", "again")
    assert (first.turns, first.final_text, first.stop_blocks_capped) == (3, FINAL_TEXT, 2)
    assert first.to_json()["stop_blocks_capped"] == 2
    assert second.turns == 6 and second.stop_blocks_capped == 2
    users = [line["content"] for line in rig.transcript() if line["role"] == "user"]
    keep = f"[Stop hook ({ans(record=log, stderr='tests fail', exit=2)}) asks to keep going: tests fail]"
    assert users == ["build", keep, keep, "again", keep, keep]
    assert [p["stop_hook_active"] for p in recorded(log)] == [False, True, True] * 2
    assert [e["blocks"] for e in rig.read_events("hook.stop_cap")] == [2, 2]
    assert rig.ledger.turns == 6


def test_a_ralph_loop_runs_to_its_promise_within_the_default_cap(tmp_path: Path) -> None:
    """The issue's ralph-wiggum loop: a Stop hook that keeps the model going for five
    rounds, then removes its state file: under the default cap of 8 every round runs."""
    state = tmp_path / "ralph.state"
    script = DATA / "cc_hooks" / "loop_until.sh"
    hooks = {"Stop": [group(shlex.join(["bash", str(script), str(state), "5"]))]}
    rig = Rig(tmp_path, scripted([]), hooks=hooks)
    [result] = rig.run("build")
    assert (result.turns, result.stop_blocks_capped) == (5, None)
    assert not state.exists()
    assert rig.read_events("hook.stop_cap") == []


def test_pre_tool_continue_false_stops_the_role_and_a_follow_up_pairs_its_calls(
    tmp_path: Path,
) -> None:
    stop = json.dumps({"continue": False, "stopReason": "enough for today"})
    hooks = {"PreToolUse": hook(stdout=stop, matcher="file_read")}
    entries = [{"tool_calls": [WRITE_A, READ_A, LIST]}, {"text": "resumed"}]
    rig = Rig(tmp_path, scripted(entries), hooks=hooks)
    first, second = rig.run("build", "go on")
    assert first.status == "stopped" and first.error == "enough for today"
    assert (first.calls, first.refused) == (2, 1)  # list_files never ran
    assert [e["tool"] for e in rig.read_events("tool.call")] == ["file_write", "file_read"]
    tools = [
        (line["tool_call_id"], line["content"])
        for line in rig.transcript()
        if line["role"] == "tool"
    ]
    assert tools[2] == ("call_1_3", UNFINISHED)
    assert second.status == "succeeded" and second.final_text == "resumed"


def test_session_end_fires_once_on_close(tmp_path: Path) -> None:
    log = tmp_path / "end.jsonl"
    rig = Rig(tmp_path, scripted([]), hooks={"SessionEnd": hook(record=log)})

    async def go() -> None:
        agent = rig.agent()
        await agent.run("x")
        await agent.close("other")
        await agent.close("other")

    anyio.run(go)
    assert [(p["hook_event_name"], p["reason"]) for p in recorded(log)] == [("SessionEnd", "other")]


# --- budget, cancellation, resume --------------------------------------------------------


def test_turn_budget(tmp_path: Path) -> None:
    rig = Rig(
        tmp_path,
        scripted([{"tool_calls": [LIST]}] * 10),
        limits=BudgetLimits(seconds=None, turns=3),
    )
    [result] = rig.run("loop")
    assert result.status == "budget_exhausted"
    assert rig.ledger.spent() == "turns"
    assert result.turns == 3


def test_a_slow_model_turn_is_cut_at_the_time_budget(tmp_path: Path) -> None:
    with OpenAIFake() as server:
        # The server never answers: returning at all means the budget cut the turn (the
        # suite's time-out is the hang guard).
        server.push(Reply(200, {}, hang=True))
        rig = Rig(tmp_path, OPENAI.provider(server), limits=BudgetLimits(seconds=0.4))
        [result] = rig.run("think hard")
    assert result.status == "budget_exhausted"
    assert rig.ledger.spent() == "seconds"
    # The turn's time is charged: what was left of the 0.4 s (a lower bound: load only adds).
    assert rig.ledger.snapshot()["model_seconds"] >= 0.2


def test_cancellation_leaves_an_interrupted_result(tmp_path: Path) -> None:
    with OpenAIFake() as server:
        server.push(Reply(200, {}, delay=3.0))
        rig = Rig(tmp_path, OPENAI.provider(server))

        async def go() -> RoleResult:
            agent = rig.agent()
            with anyio.move_on_after(0.3):
                await agent.run("x")
            await agent.close("interrupted")
            return agent.result

        result = anyio.run(go)
    assert result.status == "interrupted"


def test_resume_reloads_the_conversation_and_goes_on(tmp_path: Path) -> None:
    log = tmp_path / "start.jsonl"
    entries = [
        {"tool_calls": [WRITE_A]},
        {"tool_calls": [READ_A]},
        {"tool_calls": [LIST]},
        {"text": "all done"},
    ]
    hooks = {"SessionStart": hook(record=log)}
    first = Rig(
        tmp_path, scripted(entries), hooks=hooks, limits=BudgetLimits(seconds=None, turns=2)
    )
    [cut] = first.run("build")
    assert cut.status == "budget_exhausted" and cut.calls == 2
    again = Rig(tmp_path, scripted(entries), hooks=hooks)
    [result] = again.run("continue the task", resume=True)
    assert result.status == "succeeded" and result.final_text == "all done"
    # the scripted model went on at its third entry: only list_files ran in this session
    tools = [e["tool"] for e in again.read_events("tool.call")]
    assert tools == ["file_write", "file_read", "list_files"]  # events.jsonl holds both sessions
    assert (result.turns, result.calls) == (2, 1)
    assert [p["source"] for p in recorded(log)] == ["startup", "resume"]
    systems = [line for line in again.transcript() if line["role"] == "system"]
    assert len(systems) == 1


# --- compaction --------------------------------------------------------------------------


def test_compaction_keeps_a_long_session_inside_the_window(tmp_path: Path) -> None:
    """Old tool results become stubs, PreCompact hooks fire with trigger "auto", a
    `compact` event records what was dropped, and the server (which rejects a call
    without its result) accepts every request."""
    log = tmp_path / "precompact.jsonl"
    big = "".join(f"line {i} of a long file\n" for i in range(150))  # ~3.5k characters

    asked = itertools.count()

    def respond(req: Any) -> Reply:
        n = next(asked)
        if n < 8:
            return completion(None, [(f"r{n}", "file_read", {"file_path": "src/big.txt"})])
        return completion("read it all")

    with OpenAIFake() as server:
        server.fallback = respond
        # 6000 tokens: the two recent results and the tool definitions fit in half of it,
        # so stubs are enough (no exchange is removed)
        rig = Rig(tmp_path, OPENAI.provider(server, context_tokens=6000),
                  hooks={"PreCompact": hook(record=log)})  # fmt: skip
        (rig.workspace / "src" / "big.txt").write_text(big)
        [result] = rig.run("read src/big.txt eight times")
    assert result.status == "succeeded", result.error
    events = rig.read_events("compact")
    assert events, "compaction never triggered"
    for e in events:
        assert e["role"] == "b1/api" and e["trigger"] == "auto"
        assert e["messages_compacted"] >= 1 and e["chars_dropped"] > 0
        assert e["messages_removed"] == e["calls_removed"] == 0
        assert e["tokens_after"] < e["tokens_before"]
    assert [p["trigger"] for p in recorded(log)] == ["auto"] * len(events)
    assert recorded(log)[0]["hook_event_name"] == "PreCompact"
    last = server.requests[-1].body["messages"]
    results = [m["content"] for m in last if m["role"] == "tool"]
    assert results[0] == stub(len(big))
    assert results[-1] == big and results[-2] == big  # the recent turns are whole
    assert last[1]["content"] == "read src/big.txt eight times"
    assert sum(len(json.dumps(m)) for m in last) < 6000 * 4
    notes = [line for line in rig.transcript() if line["direction"] == "compacted"]
    assert len(notes) == len(events)
    # the transcript keeps the full results
    assert all(line["content"] == big for line in rig.transcript() if line.get("role") == "tool")


# --- compaction: removing whole exchanges ------------------------------------------------

SMALL_WINDOW = 2000  # tokens: some 6,400 characters before compaction starts


def small_reads(rig: Rig, n: int) -> list[dict[str, Any]]:
    """n files of one line in the workspace, and one script entry reading each."""
    for i in range(n):
        (rig.workspace / "src" / f"f{i}.txt").write_text(f"line of file {i}\n")
    return [{"tool_calls": [{"tool": "file_read", "input": {"file_path": f"src/f{i}.txt"}}]}
            for i in range(n)]  # fmt: skip


def paths_read(rig: Rig) -> list[str]:
    return [e["input"]["file_path"] for e in rig.read_events("tool.call")]


def test_a_long_role_of_small_calls_drops_its_oldest_exchanges(tmp_path: Path) -> None:
    """Stubs cannot help a role of many small calls: its oldest exchanges are removed, one
    note stands for them, the scripted answers still come in order (each entry once), and
    the conversation stays bounded."""
    n = 300
    log = tmp_path / "precompact.jsonl"
    rig = Rig(tmp_path, scripted([]), tools=("file_read",),
              hooks={"PreCompact": hook(record=log)})  # fmt: skip
    entries = [*small_reads(rig, n), {"text": "all read"}]
    rig.provider = ScriptedProvider(
        ScriptedModel(provider="scripted", script={"b1/api": entries}, context_tokens=SMALL_WINDOW)  # type: ignore[arg-type]
    )

    async def go() -> Agent:
        agent = rig.agent()
        await agent.run("read every file")
        await agent.close()
        return agent

    agent = anyio.run(go)
    result = agent.result
    assert (result.status, result.calls, result.turns) == ("succeeded", n, n + 1), result.error
    assert result.final_text == "all read"
    assert paths_read(rig) == [f"src/f{i}.txt" for i in range(n)]
    # bounded: without removals the conversation would hold 2 + 2n + 1 messages
    assert len(agent.messages) < 150
    assert agent._chars + agent._tools_chars <= TRIGGER * SMALL_WINDOW * CHARS_PER_TOKEN
    assert [m.content for m in agent.messages[:2]] == ["You build the API.", "read every file"]
    [note] = [m for m in agent.messages if m.removed_answers]
    assert note is agent.messages[2] and note.role == "user"
    answers = sum(m.role == "assistant" for m in agent.messages)
    assert note.removed_answers + answers == n + 1
    events = rig.read_events("compact")
    assert len(events) >= 3 and all(e["messages_removed"] > 0 for e in events)
    removed_messages = sum(e["messages_removed"] for e in events)
    removed_calls = sum(e["calls_removed"] for e in events)
    assert note.content == NOTE.format(messages=removed_messages, calls=removed_calls)
    assert removed_calls == note.removed_answers  # one call an answer here
    assert all(e["tokens_after"] <= TARGET * SMALL_WINDOW < e["tokens_before"] for e in events)
    assert [p["hook_event_name"] for p in recorded(log)] == ["PreCompact"] * len(events)
    # the transcript keeps every message as first sent, and records each compaction
    lines = rig.transcript()
    assert sum(line.get("role") == "tool" for line in lines) == n
    assert not any(line.get("removed_answers") for line in lines)
    notes = [line for line in lines if line["direction"] == "compacted"]
    assert [(x["messages_removed"], x["calls_removed"]) for x in notes] == [
        (e["messages_removed"], e["calls_removed"]) for e in events
    ]
    assert notes[-1]["note"] == note.content
    sent = [line for line in lines if line["direction"] in ("sent", "received")]
    start, stop = notes[0]["removed"]
    assert start == 2 and sent[start]["role"] == "assistant" and sent[stop]["role"] == "assistant"
    assert notes[1]["removed"][0] == stop  # the next removal goes on where this one ended


def test_a_role_resumed_after_a_removal_gets_its_next_answer(tmp_path: Path) -> None:
    """The transcript keeps every message; a resumed role reloads them all, compacts
    again, and the scripted model goes on at the right entry."""
    n = 240
    first = Rig(tmp_path, scripted([]), tools=("file_read",),
                limits=BudgetLimits(seconds=None, turns=150))  # fmt: skip
    entries = [*small_reads(first, n), {"text": "all read"}]

    def provider() -> ScriptedProvider:
        config = {"b1/api": entries}
        return ScriptedProvider(
            ScriptedModel(provider="scripted", script=config, context_tokens=SMALL_WINDOW)  # type: ignore[arg-type]
        )

    first.provider = provider()
    [cut] = first.run("read every file")
    assert (cut.status, cut.calls) == ("budget_exhausted", 150)
    assert any(e["messages_removed"] for e in first.read_events("compact"))
    again = Rig(tmp_path, provider(), tools=("file_read",))
    [result] = again.run("go on", resume=True)
    assert (result.status, result.final_text) == ("succeeded", "all read"), result.error
    assert (result.calls, result.turns) == (n - 150, n - 150 + 1)
    # events.jsonl holds both sessions: every file read once, in order
    assert paths_read(again) == [f"src/f{i}.txt" for i in range(n)]


@pytest.mark.parametrize("proto", PROTOCOLS, ids=lambda p: p.name)
def test_http_requests_stay_valid_and_bounded_after_removals(tmp_path: Path, proto: Any) -> None:
    """Through each provider's wire form against a fake that rejects a tool result without
    its call (and a call without its result): every request is accepted and stays small,
    and the note goes as an ordinary user message."""
    n = 200
    asked = itertools.count()

    def respond(req: Any) -> Reply:
        k = next(asked)
        if k < n:
            return proto.reply(None, [(f"r{k}", "file_read", {"file_path": f"src/f{k}.txt"})])
        return proto.reply("all read")

    with proto.server() as server:
        server.fallback = respond
        rig = Rig(
            tmp_path, proto.provider(server, context_tokens=SMALL_WINDOW), tools=("file_read",)
        )
        small_reads(rig, n)
        [result] = rig.run("read every file")
    assert result.status == "succeeded", result.error
    assert len(server.requests) == n + 1
    assert paths_read(rig) == [f"src/f{i}.txt" for i in range(n)]
    problem = openai_problem if proto.name == "openai" else anthropic_problem
    for req in server.requests:
        messages = req.body["messages"]
        assert problem(messages) is None
        ids = {r for r, _ in proto.tool_results(req.body)}
        calls = {
            c for c in json.dumps(messages).split('"') if c.startswith("r") and c[1:].isdigit()
        }
        assert ids == calls  # each result's call is in the same request, and each call's result
    sizes = [len(json.dumps(req.body["messages"])) for req in server.requests]
    # flat: some 100 calls fill the window (each a few hundred bytes on the wire), and a
    # request stays near that size however many calls follow
    assert max(sizes) < 40_000 and max(sizes) < 2 * min(sizes[n // 2 :])
    last = server.requests[-1].body["messages"]
    note = NOTE.split("(")[0]
    if proto.name == "openai":
        assert last[1] == {"role": "user", "content": "read every file"}
        assert last[2]["role"] == "user" and last[2]["content"].startswith(note)
        assert last[3]["role"] == "assistant"
    else:
        first_user = last[0]["content"]
        assert first_user[0] == {"type": "text", "text": "read every file"}
        assert first_user[1]["type"] == "text" and first_user[1]["text"].startswith(note)
        assert last[1]["role"] == "assistant"
