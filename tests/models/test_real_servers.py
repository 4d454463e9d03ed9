"""What real OpenAI-compatible servers (llama.cpp's, llama-cpp-python's) and small models do,
against the loopback fakes taught those habits (tests/kit/fakes): strict `content`, arguments
that are not valid JSON, answers cut at the output limit, replies that never end, long
error bodies whose reason comes last. Both protocols where both can show it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit.agent import Rig
from kit.fakes import openai_api
from kit.fakes.protocols import OPENAI, PROTOCOLS, Protocol
from kit.fakes.server import Recorded, Reply

from orkeon_run.errors import ProviderError
from orkeon_run.models.answers import CUT_NOTE, MAX_CUT, NOT_RUN
from orkeon_run.models.base import Message

CONVO = [Message("system", "You help."), Message("user", "read README.md")]
READ = ("c1", "file_read", {"file_path": "README.md"})
LIST = ("c3", "list_files", {})


@pytest.fixture(params=PROTOCOLS, ids=lambda p: p.name)
def proto(request: pytest.FixtureRequest) -> Protocol:
    return request.param


def complete(provider: Any, messages: list[Message] = CONVO) -> Any:
    async def go() -> Any:
        try:
            return await provider.for_role("b1/api").complete(messages, [])
        finally:
            await provider.aclose()

    return anyio.run(go)


def received(rig: Rig) -> list[dict[str, Any]]:
    return [line for line in rig.transcript() if line["direction"] == "received"]


# --- a reply that never ends -----------------------------------------------------------


def test_a_request_past_its_timeout_is_cancelled_and_its_connection_closed(
    proto: Protocol,
) -> None:
    """The server is still generating when the time-out comes: the client closes that
    connection (a server that watches it stops generating) before its retry is answered,
    and the retry goes on a new connection."""
    with proto.server() as server:

        def second(req: Recorded) -> Reply:
            # answered only once the first request's connection is closed
            closed = server.hang_up.wait(10)
            return proto.reply("second try" if closed else "the first is still open")

        server.push(Reply(hang=True), second)
        turn = complete(proto.provider(server, timeout_seconds=0.5, max_retries=1))
    assert turn.text == "second try"
    first, retry = server.requests
    assert server.hung_up == [first]
    assert first.client != retry.client


def test_a_reply_cut_by_the_time_budget_closes_its_connection(
    tmp_path: Path, proto: Protocol
) -> None:
    from orkeon_run.limits import BudgetLimits

    with proto.server() as server:
        server.push(Reply(hang=True))
        rig = Rig(tmp_path, proto.provider(server), limits=BudgetLimits(seconds=0.5))
        [result] = rig.run("go")
        assert server.hang_up.wait(10)
    assert result.status == "budget_exhausted"
    assert len(server.requests) == 1


# --- error bodies ----------------------------------------------------------------------


def test_a_500_naming_a_malformed_request_is_not_retried_and_keeps_its_reason() -> None:
    """llama-cpp-python's answer to a null `content`: HTTP 500, seven validation errors of
    which one says why. One attempt (the same bytes would fail the same way), and that one
    is what the error line shows."""
    sent = {"role": "assistant", "content": None, "tool_calls": []}
    text = openai_api.null_content_rejection(2, sent)
    assert len(text) > 1000 and text.index("valid string") > 300  # cut at 300, it was lost
    with OPENAI.server() as server:
        server.fallback = lambda req: openai_api.error(500, text, type="internal_server_error")
        with pytest.raises(ProviderError) as err:
            complete(OPENAI.provider(server, max_retries=3))
    assert len(server.requests) == 1
    assert str(err.value) == (
        "openai gpt-4o-mini: server error (HTTP 500), not retried: "
        + openai_api.NULL_CONTENT_REASON.format(index=2)
    )


def test_a_long_message_keeps_its_beginning_and_its_end() -> None:
    text = "The upstream model server could not complete the request. " * 10 + "Reason: disk full"
    with OPENAI.server() as server:
        server.push(OPENAI.error(400, text))
        with pytest.raises(ProviderError) as err:
            complete(OPENAI.provider(server, max_retries=0))
    message = str(err.value)
    assert len(message) == 300 and " … " in message
    assert message.startswith("openai gpt-4o-mini: request rejected (HTTP 400): The upstream")
    assert message.endswith("Reason: disk full")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"detail": [{"loc": ["body", "messages", 2, "content"], "msg": "field required"}]},
         "body.messages.2.content: field required"),
        ("Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyError: 'tool_calls'\n",
         "KeyError: 'tool_calls'"),
        ("<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
         "502 Bad Gateway"),
    ],
)  # fmt: skip
def test_the_reason_in_other_error_bodies(body: Any, reason: str) -> None:
    """FastAPI's `detail`, a Python traceback, a proxy's HTML page."""
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    with OPENAI.server() as server:
        server.push(Reply(400, raw=raw))
        with pytest.raises(ProviderError) as err:
            complete(OPENAI.provider(server, max_retries=0))
    assert str(err.value) == f"openai gpt-4o-mini: request rejected (HTTP 400): {reason}"


def test_a_transient_500_is_still_retried(proto: Protocol) -> None:
    with proto.server() as server:
        server.push(proto.error(500, "Internal server error"), proto.reply("ok"))
        assert complete(proto.provider(server, max_retries=1)).text == "ok"
    assert len(server.requests) == 2


# --- strict content --------------------------------------------------------------------


def test_a_strict_server_takes_a_session_with_calls(tmp_path: Path) -> None:
    """The fake fails (HTTP 500) on an assistant message whose content is not a string,
    as llama-cpp-python's does; what orkeon sends passes."""
    with OPENAI.server() as server:
        assert server.strict_content  # type: ignore[attr-defined]
        server.push(OPENAI.reply(None, [READ]), OPENAI.reply(None, [LIST]), OPENAI.reply("done"))
        rig = Rig(tmp_path, OPENAI.provider(server))
        [result] = rig.run("read")
    assert (result.status, result.turns, result.calls) == ("succeeded", 3, 2), result.error
    sent = server.requests[-1].body["messages"]
    assert [m["content"] for m in sent if m["role"] == "assistant"] == ["", ""]
    assert all(r.body["tool_choice"] == "auto" for r in server.requests)


# --- arguments that are not valid JSON -----------------------------------------------------


def test_unreadable_arguments_become_a_tool_error_and_the_other_calls_run(
    tmp_path: Path, proto: Protocol
) -> None:
    bad: Any = '{"path": "src"' if proto.name == "openai" else "src"
    why = (
        "the arguments are not valid JSON: Expecting ',' delimiter: line 1 column 15 "
        '(char 14): {"path": "src"'
        if proto.name == "openai"
        else 'the arguments are not a JSON object: "src"'
    )
    with proto.server() as server:
        server.push(
            proto.reply("Looking.", [READ, ("c2", "list_files", bad), LIST], usage=(90, 30)),
            proto.reply("done", usage=(120, 4)),
        )
        rig = Rig(tmp_path, proto.provider(server))
        [result] = rig.run("look")
    assert (result.status, result.turns, result.calls) == ("succeeded", 2, 2)
    # the valid calls ran through the pipeline; the unreadable one did not
    assert [(e["seq"], e["tool"]) for e in rig.read_events("tool.call")] == [
        (1, "file_read"),
        (2, "list_files"),
    ]
    results = proto.tool_results(server.requests[1].body)
    assert results[1] == ("c2", f"error: {why}")
    assert [r[0] for r in results] == ["c1", "c2", "c3"] and results[0][1] == "# readme\n"
    # the raw reply is in the transcript, the turn and its tokens are counted
    first = received(rig)[0]
    assert first["tool_calls"][1] == {
        "id": "c2", "name": "list_files", "input": {}, "error": why,
        "arguments": bad if proto.name == "openai" else '"src"',
    }  # fmt: skip
    turns = rig.read_events("model.turn")
    assert [(t["tokens_in"], t["tool_calls"], t["invalid_calls"]) for t in turns] == [
        (90, 3, 1),
        (120, 0, 0),
    ]
    assert rig.ledger.snapshot()["tokens_in"] == 210


def test_a_resumed_role_keeps_an_unreadable_call_paired(tmp_path: Path) -> None:
    """The transcript reloads the call with its error; the provider sends it back with
    valid arguments and its result."""
    with OPENAI.server() as server:
        server.push(OPENAI.reply(None, [("c2", "list_files", "{oops")]))
        rig = Rig(tmp_path, OPENAI.provider(server))
        agent = rig.agent()
        server.push(lambda req: Reply(hang=True))  # stop the first session mid-way

        async def first() -> None:
            with anyio.move_on_after(1):
                await agent.run("go")
            await agent.close()

        anyio.run(first)
        server.push(OPENAI.reply("done"))
        [result] = rig.run("go on", resume=True)
    assert result.status == "succeeded"
    sent = server.requests[-1].body["messages"]
    call = next(m for m in sent if m.get("tool_calls"))
    assert call["tool_calls"][0]["function"]["arguments"] == "{}"
    assert openai_api.conversation_problem(sent) is None


# --- answers cut at the output limit -----------------------------------------------------


def test_a_cut_answer_runs_none_of_its_calls_and_the_model_is_told(
    tmp_path: Path, proto: Protocol
) -> None:
    with proto.server() as server:
        server.push(
            proto.reply("Writing.", [READ, ("c2", "file_write", {"file_path": "a"})], cut=True),
            proto.reply("Shorter.", [READ]),
            proto.reply("done"),
        )
        rig = Rig(tmp_path, proto.provider(server, max_output_tokens=300))
        [result] = rig.run("write")
    assert (result.status, result.turns, result.calls) == ("succeeded", 3, 1)
    assert server.requests[0].body["max_tokens"] == 300
    not_run = NOT_RUN.format(limit=300)
    assert proto.tool_results(server.requests[1].body) == [("c1", not_run), ("c2", not_run)]
    assert [e["tool"] for e in rig.read_events("tool.call")] == ["file_read"]  # turn 2's
    assert [t["cut"] for t in rig.read_events("model.turn")] == [True, False, False]


def test_a_cut_answer_without_calls_is_followed_by_a_note(tmp_path: Path, proto: Protocol) -> None:
    with proto.server() as server:
        server.push(proto.reply("The plan is", cut=True), proto.reply("The plan is done."))
        rig = Rig(tmp_path, proto.provider(server, max_output_tokens=64))
        [result] = rig.run("plan")
    assert (result.status, result.turns, result.final_text) == ("succeeded", 2, "The plan is done.")
    users = [line["content"] for line in rig.transcript() if line["role"] == "user"]
    assert users[-1] == CUT_NOTE.format(limit=64)


def test_answers_cut_again_and_again_fail_the_role(tmp_path: Path, proto: Protocol) -> None:
    with proto.server() as server:
        server.fallback = lambda req: proto.reply(None, [READ], cut=True)
        rig = Rig(tmp_path, proto.provider(server, max_output_tokens=32))
        [result] = rig.run("go")
    assert (result.status, result.turns, result.calls) == ("failed", MAX_CUT, 0)
    assert result.error == (
        f"the model's answers were cut at the output limit (32 tokens) {MAX_CUT} times in a "
        "row: raise model.max_output_tokens"
    )
    # every call still has its result: the conversation stays valid for a resume
    lines = rig.transcript()
    calls = [c["id"] for line in lines for c in line.get("tool_calls", [])]
    assert len(calls) == MAX_CUT and len([x for x in lines if x["role"] == "tool"]) == MAX_CUT


def test_a_replay_leaves_out_the_unreadable_call(tmp_path: Path) -> None:
    """`@transcript:` replays what ran: the call that never ran is not replayed."""
    from orkeon_run.models.transcript import replay_script

    with OPENAI.server() as server:
        server.push(
            OPENAI.reply("Looking.", [READ, ("c2", "list_files", "{oops")]), OPENAI.reply("ok")
        )
        rig = Rig(tmp_path, OPENAI.provider(server))
        rig.run("look")
    script = replay_script(rig.transcript_path)
    assert script["b1/api"][0]["tool_calls"] == [
        {"tool": "file_read", "input": {"file_path": "README.md"}, "id": "c1"}
    ]
