"""What compaction shortens and what it keeps (orkeon_run/compaction.py)."""

from __future__ import annotations

from fakes.anthropic_api import conversation_problem as anthropic_problem
from fakes.openai_api import conversation_problem as openai_problem

from orkeon_run.compaction import (
    KEEP_TURNS,
    ContextMeter,
    Scanned,
    apply,
    message_chars,
    plan,
    stub,
)
from orkeon_run.models import anthropic, openai
from orkeon_run.models.base import Message, ToolCall

BIG = "x" * 5000


def session(turns: int) -> list[Message]:
    msgs = [Message("system", "S" * 3000), Message("user", "T" * 3000)]
    for t in range(turns):
        calls = [ToolCall(f"c{t}a", "file_read", {"file_path": f"f{t}"}),
                 ToolCall(f"c{t}b", "file_write", {"file_path": f"g{t}", "content": BIG})]  # fmt: skip
        msgs.append(Message("assistant", f"turn {t}", calls))
        msgs.append(Message("tool", BIG, tool_call_id=f"c{t}a", name="file_read"))
        msgs.append(Message("tool", "created", tool_call_id=f"c{t}b", name="file_write"))
    return msgs


def test_old_tool_results_become_stubs_oldest_first() -> None:
    msgs = session(5)
    edits = plan(msgs, need=6000)
    assert [e.index for e in edits] == [3, 6]  # the first two turns' file_read results
    dropped = apply(msgs, edits)
    assert msgs[3].content == stub(5000) == "[compacted: 5000 characters dropped]"
    assert dropped == 2 * (5000 - len(stub(5000)))
    assert msgs[3].tool_call_id == "c0a" and msgs[3].name == "file_read"


def test_system_task_texts_and_recent_turns_are_kept() -> None:
    msgs = session(5)
    before = [(m.role, m.content, m.tool_calls) for m in msgs]
    apply(msgs, plan(msgs, need=10**9))
    assert msgs[0].content == "S" * 3000 and msgs[1].content == "T" * 3000
    assert [m.content for m in msgs if m.role == "assistant"] == [f"turn {t}" for t in range(5)]
    recent = len(msgs) - 3 * KEEP_TURNS
    assert [(m.role, m.content, m.tool_calls) for m in msgs[recent:]] == before[recent:]
    # the older answers' long call arguments went too, ids and names unchanged
    assert msgs[2].tool_calls[1].input == {"file_path": "g0", "content": stub(5000)}
    assert [c.id for c in msgs[2].tool_calls] == ["c0a", "c0b"]


def test_pairs_stay_valid_for_both_providers() -> None:
    msgs = session(6)
    apply(msgs, plan(msgs, need=10**9))
    assert openai_problem(openai.wire_messages(msgs)) is None
    assert anthropic_problem(anthropic.wire_request(msgs)[1]) is None
    assert len(msgs) == 2 + 3 * 6  # nothing removed


def test_nothing_to_do_with_only_recent_turns() -> None:
    assert plan(session(KEEP_TURNS), need=10**9) == []


def test_meter_uses_reported_tokens_then_chars() -> None:
    meter = ContextMeter(1000)
    assert meter.estimate(2000) == 500
    assert not meter.over(3200)  # 800 tokens: at the trigger, not over it
    assert meter.over(3204)
    meter.report(chars_sent=2000, tokens_in=900)  # this tokenizer: ~2.2 chars a token
    assert meter.estimate(2400) == 900 + 100
    assert meter.over(2000)
    assert meter.chars_to_drop(2000) == (900 - 500) * 4
    meter.reset()
    assert meter.estimate(2000) == 500


def test_message_chars_counts_call_arguments() -> None:
    m = Message("assistant", "ab", [ToolCall("id", "tool", {"k": "v"})])
    assert message_chars(m) == 2 + 2 + 4 + len('{"k": "v"}')


def test_a_plan_starts_where_the_last_one_stopped() -> None:
    """With `Scanned`, each plan reads only what earlier plans did not (a long session
    over the trigger with nothing left to drop is not read whole again every turn), and
    finds exactly what a plan reading everything finds."""
    msgs = session(2)
    scanned = Scanned()
    for t in range(2, 40):
        big = BIG if t % 3 else "small"  # some turns leave nothing worth a stub
        call = ToolCall(f"c{t}", "file_write", {"file_path": "f", "content": big})
        msgs.append(Message("assistant", f"turn {t}", [call]))
        msgs.append(Message("tool", big, tool_call_id=f"c{t}", name="file_write"))
        need = 3000 if t % 2 else 10**9
        fresh = plan(list(msgs), need)
        edits = plan(msgs, need, scanned)
        assert [(e.index, e.message) for e in edits] == [(e.index, e.message) for e in fresh]
        apply(msgs, edits)
        assert scanned.results <= len(msgs) and scanned.calls <= len(msgs)
    apply(msgs, plan(msgs, 10**9, scanned))
    horizon = len(msgs) - 2 * KEEP_TURNS  # everything before the recent turns is read
    assert (scanned.results, scanned.calls) == (horizon, horizon)
    assert plan(msgs, 10**9, scanned) == []
