"""What compaction shortens and what it keeps (orkeon_run/compaction.py)."""

from __future__ import annotations

import itertools
from pathlib import Path

from kit import ROOT
from kit.fakes.anthropic_api import conversation_problem as anthropic_problem
from kit.fakes.openai_api import conversation_problem as openai_problem

from orkeon_run.agent.compaction import (
    KEEP_TURNS,
    NOTE,
    Removal,
    Removed,
    Scanned,
    apply,
    plan,
    plan_removal,
    remove,
    stub,
)
from orkeon_run.agent.meter import ContextMeter, message_chars
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


# --- stage 3: removing the oldest whole exchanges ----------------------------------------


def small_session(turns: int, preamble: int = 3) -> list[Message]:
    """A long role of small calls: nothing worth a stub. Every third answer is followed by
    a Stop hook's user message; the task comes with a hook context message."""
    msgs = [Message("system", "S" * 100), Message("user", "the task")]
    msgs += [Message("user", f"<hook_context>{k}</hook_context>") for k in range(preamble - 2)]
    for t in range(turns):
        calls = tuple(ToolCall(f"c{t}_{k}", "file_read", {"file_path": f"f{t}_{k}"})
                      for k in range(t % 3))  # fmt: skip
        msgs.append(Message("assistant", f"turn {t}", calls))
        msgs += [
            Message("tool", f"read {c.id}", tool_call_id=c.id, name="file_read") for c in calls
        ]
        if t % 3 == 0:
            msgs.append(Message("user", f"keep going {t}"))
    return msgs


def compact(msgs: list[Message], need: int, removed: Removed, scanned: Scanned) -> Removal | None:
    """Stages 1-2, then stage 3 for what they leave, as the agent runs them."""
    edits = plan(msgs, need, scanned)
    dropped = apply(msgs, edits)
    removal = plan_removal(msgs, need - dropped, removed) if dropped < need else None
    if removal is not None:
        remove(msgs, removal, removed, scanned)
    return removal


def answers_of(msgs: list[Message]) -> list[str]:
    return [m.content for m in msgs if m.role == "assistant"]


def exchanges(msgs: list[Message]) -> list[list[Message]]:
    """`msgs` (starting at an answer) cut before each answer."""
    out: list[list[Message]] = []
    for m in msgs:
        if m.role == "assistant":
            out.append([])
        out[-1].append(m)
    return out


def test_removal_takes_the_oldest_whole_exchanges_and_leaves_one_note() -> None:
    msgs = small_session(30, preamble=3)
    before = list(msgs)
    removed = Removed()
    need = 1000
    removal = plan_removal(msgs, need, removed)
    assert removal is not None and removal.start == 3  # right after the preamble
    dropped = remove(msgs, removal, removed, Scanned())
    # the system prompt, the task and its hook context are the same objects, in place
    assert all(a is b for a, b in zip(msgs[:3], before[:3], strict=True))
    note = msgs[3]
    gone = before[3 : 3 + len(before) - len(msgs) + 1]
    assert note.role == "user" and note.removed_answers == removal.answers
    assert note.content == NOTE.format(messages=len(gone), calls=removal.calls)
    assert removal.answers == sum(m.role == "assistant" for m in gone)
    assert removal.calls == sum(len(m.tool_calls) for m in gone)
    # whole exchanges only: what is left starts at the answer after them
    assert msgs[4].role == "assistant"
    assert answers_of(msgs) == [f"turn {t}" for t in range(removal.answers, 30)]
    assert all(a is b for a, b in zip(msgs[4:], before[3 + len(gone) :], strict=True))
    # just enough: the removed exchanges cover `need` and the note's size; one fewer would not
    assert dropped == sum(message_chars(m) for m in gone) - message_chars(note) >= need
    sizes = [sum(message_chars(m) for m in x) for x in exchanges(gone)]
    longest_note = len(NOTE.format(messages=10**9, calls=10**9))
    assert sum(sizes[:-1]) < need + longest_note <= sum(sizes)
    assert (removed.note, removed.messages, removed.calls) == (3, len(gone), removal.calls)


def test_recent_answers_are_kept_and_pairs_stay_valid() -> None:
    msgs = small_session(40)
    before = list(msgs)
    removal = plan_removal(msgs, 10**9, Removed())  # more than everything
    assert removal is not None
    remove(msgs, removal, Removed(), Scanned())
    assert answers_of(msgs) == answers_of(before)[-KEEP_TURNS:]
    horizon = max(i for i, m in enumerate(before) if m.content == f"turn {40 - KEEP_TURNS}")
    assert msgs[4:] == before[horizon:]
    for problem in (openai_problem(openai.wire_messages(msgs)),
                    anthropic_problem(anthropic.wire_request(msgs)[1])):  # fmt: skip
        assert problem is None
    assert plan_removal(msgs, 10**9, Removed(note=3)) is None  # nothing older left


def test_pairs_stay_valid_at_every_cut() -> None:
    """Whatever `need`, no tool result is left without its call nor a call without its
    result, for either provider."""
    base = small_session(25)
    for need in range(0, 3000, 37):
        msgs = list(base)
        removal = plan_removal(msgs, need, Removed())
        assert removal is not None
        remove(msgs, removal, Removed(), Scanned())
        calls = {c.id for m in msgs for c in m.tool_calls}
        results = {m.tool_call_id for m in msgs if m.role == "tool"}
        assert calls == results
        assert openai_problem(openai.wire_messages(msgs)) is None
        assert anthropic_problem(anthropic.wire_request(msgs)[1]) is None


def test_a_later_removal_updates_the_one_note() -> None:
    msgs = small_session(50)
    total = len(msgs)
    removed = Removed()
    first = plan_removal(msgs, 800, removed)
    assert first is not None
    remove(msgs, first, removed, Scanned())
    second = plan_removal(msgs, 800, removed)
    assert second is not None and second.start == 4  # right after the note
    remove(msgs, second, removed, Scanned())
    notes = [m for m in msgs if m.removed_answers]
    assert len(notes) == 1 and notes[0] is msgs[3]
    gone = total - (len(msgs) - 1)
    assert (removed.messages, removed.calls) == (gone, first.calls + second.calls)
    assert notes[0].removed_answers == first.answers + second.answers
    assert notes[0].content == NOTE.format(messages=gone, calls=first.calls + second.calls)
    # the answers the conversation stands for did not change
    assert sum((m.role == "assistant") + m.removed_answers for m in msgs) == 50
    assert answers_of(msgs)[0] == f"turn {first.answers + second.answers}"
    assert openai_problem(openai.wire_messages(msgs)) is None
    assert anthropic_problem(anthropic.wire_request(msgs)[1]) is None


def test_original_indexes_map_back_to_the_conversation_as_sent() -> None:
    msgs = small_session(40)
    original = list(msgs)
    removed = Removed()
    for need in (500, 700):
        removal = plan_removal(msgs, need, removed)
        assert removal is not None
        remove(msgs, removal, removed, Scanned())
    for i, m in enumerate(msgs):
        if i != removed.note:
            assert original[removed.original(i)] is m


def test_exchanges_smaller_than_the_note_are_not_removed() -> None:
    msgs = [Message("system", "s"), Message("user", "task")]
    msgs += [Message("assistant", f"a{t}") for t in range(2 + KEEP_TURNS)]
    assert plan_removal(msgs, 10**9, Removed()) is None
    msgs[2] = Message("assistant", "a" * len(NOTE))  # now worth it
    removal = plan_removal(msgs, 10**9, Removed())
    assert removal is not None and (removal.start, removal.stop) == (2, 4)


def test_the_edits_of_stages_1_and_2_count_in_a_removal() -> None:
    """A removal planned with edits not yet applied counts the messages as they will be."""
    msgs = session(6)
    edits = plan(msgs, 10**9)
    removal = plan_removal(msgs, 100, Removed(), edits)
    assert removal is not None and removal.start == 2
    shortened = list(msgs)
    apply(shortened, edits)
    assert removal.chars == sum(message_chars(m) for m in shortened[removal.start : removal.stop])
    assert removal.chars < sum(message_chars(m) for m in msgs[removal.start : removal.stop])


def test_scanned_follows_the_removals() -> None:
    """`Scanned` stays right when messages are removed: each plan with it finds what a plan
    reading everything finds, and the next reads only what is new."""
    msgs = session(2)
    scanned, removed = Scanned(), Removed()
    removals = 0
    for t in range(2, 80):
        big = BIG if t % 4 == 0 else "small"
        call = ToolCall(f"c{t}", "file_write", {"file_path": "f", "content": big})
        msgs.append(Message("assistant", f"turn {t}", (call,)))
        msgs.append(Message("tool", big, tool_call_id=f"c{t}", name="file_write"))
        need = 3000 if t % 2 else 6000
        fresh = plan(list(msgs), need)
        edits = plan(msgs, need, scanned)
        assert [(e.index, e.message) for e in edits] == [(e.index, e.message) for e in fresh]
        dropped = apply(msgs, edits)
        if dropped < need:
            removal = plan_removal(msgs, need - dropped, removed)
            if removal is not None:
                removals += 1
                remove(msgs, removal, removed, scanned)
        assert scanned.results <= len(msgs) and scanned.calls <= len(msgs)
        # nothing before where `scanned` says is left to shorten
        assert not any(m.role == "tool" and m.content == BIG for m in msgs[: scanned.results])
    assert removals > 3
    assert openai_problem(openai.wire_messages(msgs)) is None


def test_message_json_keeps_removed_answers() -> None:
    m = Message("user", "note", removed_answers=7)
    assert m.to_json() == {"role": "user", "content": "note", "removed_answers": 7}
    assert Message.from_json(m.to_json()) == m
    assert "removed_answers" not in Message("user", "x").to_json()


def test_the_note_is_documented_as_it_is_sent() -> None:
    """docs/inputs.md "Context compaction" shows the note's text, to the character."""
    docs = (ROOT / "docs" / "inputs.md").read_text(encoding="utf-8")
    assert "\n" + NOTE.format(messages="N", calls="K") + "\n" in docs


def test_a_compaction_that_falls_short_waits_for_a_batch(tmp_path: Path) -> None:
    """A task that fills most of the window: no compaction can get back under TARGET.
    Compaction then waits until the conversation has grown by BATCH of the window (each
    one rewrites the provider's prompt cache from its first change on) instead of
    nibbling at it every turn."""
    from kit.agent import Rig

    from orkeon_run.agent.meter import BATCH, CEILING, TRIGGER
    from orkeon_run.config.inputs import ScriptedModel
    from orkeon_run.models.scripted import ScriptedProvider

    window = 10_000
    read = {"tool": "file_read", "input": {"file_path": "README.md", "limit": 1}}
    entries = [{"text": "x" * 300, "tool_calls": [read]} for _ in range(120)]
    config = ScriptedModel(provider="scripted", script={"b1/api": entries}, context_tokens=window)
    rig = Rig(tmp_path, ScriptedProvider(config), tools=("file_read",))
    [result] = rig.run("T" * 30_000)  # 7500 tokens of a 10000-token window
    assert result.turns == 121
    compactions = rig.read_events("compact")
    assert compactions[0]["tokens_before"] > TRIGGER * window
    # every compaction but the first came after a batch of growth (or past the ceiling)
    for before, after in itertools.pairwise(compactions):
        grown = after["tokens_before"] - before["tokens_after"]
        assert grown >= BATCH * window or after["tokens_before"] > CEILING * window
    # ~90 tokens a turn, 1000 tokens a batch: about one compaction every 11 turns, not 1
    assert 5 <= len(compactions) <= 121 // 8


def test_the_batch_is_counted_in_characters_whatever_the_tokenizer() -> None:
    """A provider whose tokens are denser than 4 characters reports more than the estimate
    made after a compaction (from characters): that jump is not growth."""
    meter = ContextMeter(1000)
    meter.compacted(3000)  # 750 tokens by characters
    meter.report(chars_sent=3000, tokens_in=850)  # the provider counts 850
    assert meter.estimate(3100) == 875 and not meter.over(3100)  # grown by 25 tokens only
    assert meter.over(3000 + 4 * 100)  # a batch: 10 % of the window
    meter.report(chars_sent=3000, tokens_in=960)
    assert meter.over(3000)  # past the ceiling: anything dropped helps
