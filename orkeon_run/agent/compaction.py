"""Keeping a long conversation inside the model's context window.

`ContextMeter` (meter.py) estimates how many tokens the next request will carry: the
provider's last reported input tokens plus about one token per 4 characters added since,
or 4 characters a token for the whole conversation when no report exists yet. This
module is imported by a role's first compaction, not before (agent/loop.py).

When the estimate passes `TRIGGER` of the window, `plan` picks what to shorten, oldest
first, until the estimate is back under `TARGET` of the window:

1. tool results older than the last `KEEP_TURNS` answers become the stub
   `[compacted: N characters dropped]`;
2. then long string arguments of those older answers' tool calls (a file_write's
   `content`) become the same stub.

No message is removed by these two and no id is changed. When they are not enough (a
long role of many small calls), `plan_removal` picks the third stage:

3. the oldest whole exchanges are removed: an answer with the messages that follow it
   up to the next answer (its calls' results, a Stop hook's or a follow-up's user
   message), just enough of them to reach `TARGET`. One user message, the note
   (`NOTE`), stands where they were and counts them; a later removal updates it (one
   note, its counts summed). A call never loses its result nor a result its call, so
   the providers see valid pairs.

Always kept: the system prompt, every message before the role's first answer (the task
and any hook context sent with it), and the last `KEEP_TURNS` answers with their
results. When even removing everything else is not enough, the request goes out as it
is and a provider that still finds it too long fails the role with its own message.

Every compaction changes the conversation before its end, so the provider's prompt cache
(models/anthropic.py) is written again from the first changed message on. Compactions
therefore come in batches: each one drops down to `TARGET`, far below `TRIGGER`, so the
next is a long way off; and one that cannot get there (a huge task, huge recent results)
or found nothing to drop is not tried again until the estimate has grown by `BATCH` of
the window since (or passes `CEILING`, where anything dropped is worth a rewrite),
instead of nibbling a message off every turn and breaking the cache each time. After a
compaction the next request reads the tools and the system prompt from the cache (their
breakpoints come before any message) and writes the rest again, once.

The note's `removed_answers` keeps the number of answers the conversation stands for
(the scripted model picks its answer by it); the role's transcript keeps every message
as it was first sent, and a resumed role reloads them all and compacts again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..models.base import Message, ToolCall
from .meter import message_chars

KEEP_TURNS = 2
MIN_DROP = 200  # shorter texts are not worth a stub

STUB = "[compacted: {n} characters dropped]"
# The user message that stands where stage 3 removed whole exchanges.
NOTE = (
    "[compacted: earlier messages were removed here to fit the context window "
    "(messages: {messages}, tool calls: {calls}). What those calls did to the workspace "
    "remains; read a file again if you need its content.]"
)


def stub(n: int) -> str:
    return STUB.format(n=n)


def note(messages: int, calls: int, answers: int) -> Message:
    """The note that stands for `messages` removed messages holding `answers` answers
    and `calls` tool calls."""
    return Message("user", NOTE.format(messages=messages, calls=calls), removed_answers=answers)


@dataclass
class Edit:
    index: int
    message: Message  # the replacement
    chars_dropped: int


def _shrink_input(value: Any) -> tuple[Any, int]:
    if isinstance(value, str) and len(value) >= MIN_DROP:
        s = stub(len(value))
        return s, len(value) - len(s)
    if isinstance(value, dict):
        out, dropped = {}, 0
        for k, v in value.items():
            out[k], d = _shrink_input(v)
            dropped += d
        return out, dropped
    return value, 0


@dataclass
class Scanned:
    """How far earlier plans read, once their edits are applied: before `results` no tool
    result is long enough for a stub, before `calls` no call argument is. The next plan
    starts there; `remove` moves both when it removes messages before them. Without it, a
    conversation that stays over the trigger with nothing left to drop is read whole again
    every turn: quadratic in its length (a 10,000-call run spent half its time here)."""

    results: int = 0
    calls: int = 0


def _horizon(messages: list[Message]) -> int:
    """Index of the KEEP_TURNS-th last answer (from there on, messages are recent and
    kept whole), or -1 when there are fewer answers."""
    answers = 0
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            answers += 1
            if answers == KEEP_TURNS:
                return i
    return -1


def plan(messages: list[Message], need: int, scanned: Scanned | None = None) -> list[Edit]:
    """Edits, oldest first, that drop at least `need` characters, or as many as exist.

    With `scanned`, reading starts where it says and it is moved to where this plan
    stopped; it holds only once the edits are applied."""
    s = scanned if scanned is not None else Scanned()
    horizon = _horizon(messages)
    if horizon < 0:
        return []
    edits: list[Edit] = []
    dropped = 0
    for i in range(s.results, horizon):
        m = messages[i]
        if m.role == "tool" and len(m.content) >= MIN_DROP:
            stubbed = stub(len(m.content))
            edits.append(Edit(i, replace(m, content=stubbed), len(m.content) - len(stubbed)))
            dropped += edits[-1].chars_dropped
            if dropped >= need:
                s.results = i + 1
                return edits
    s.results = max(s.results, horizon)
    for i in range(s.calls, horizon):
        m = messages[i]
        if m.role != "assistant" or not m.tool_calls:
            continue
        calls, lost = [], 0
        for c in m.tool_calls:
            new_input, d = _shrink_input(c.input)
            calls.append(ToolCall(c.id, c.name, new_input) if d else c)
            lost += d
        if lost:
            edits.append(Edit(i, replace(m, tool_calls=tuple(calls)), lost))
            dropped += lost
            if dropped >= need:
                s.calls = i + 1
                return edits
    s.calls = max(s.calls, horizon)
    return edits


def apply(messages: list[Message], edits: list[Edit]) -> int:
    """Apply `edits` in place; the characters dropped."""
    for e in edits:
        messages[e.index] = e.message
    return sum(e.chars_dropped for e in edits)


# --- stage 3: removing whole exchanges ---------------------------------------------------


@dataclass
class Removed:
    """What earlier removals took from one conversation: where their note is (-1: none
    yet) and the messages and tool calls it stands for (the answers are its own
    `removed_answers`). Removed messages were always the oldest after the ones kept
    before the note, one run of them, so an index maps back to the conversation as first
    sent (`original`)."""

    note: int = -1
    messages: int = 0
    calls: int = 0

    def original(self, index: int) -> int:
        """The index, in the conversation as first sent (its transcript's messages), of
        the message now at `index` (not the note)."""
        return index if self.note < 0 or index < self.note else index + self.messages - 1


@dataclass
class Removal:
    """Messages `start` up to `stop` (not included) to remove: whole exchanges."""

    start: int
    stop: int
    calls: int
    answers: int
    chars: int  # characters of the removed messages, once the edits before it are applied


def plan_removal(
    messages: list[Message],
    need: int,
    removed: Removed,
    edits: list[Edit] | tuple[Edit, ...] = (),
) -> Removal | None:
    """The oldest whole exchanges whose removal drops at least `need` characters (the
    note's own growth accounted), or all of them before the recent turns when that is not
    enough; None when there is none to remove, or when they take less room than the note
    would. `edits` (stages 1-2, not yet applied) give the sizes the messages will have.
    Reads only the messages it removes."""
    if removed.note >= 0:
        start = removed.note + 1
    else:
        start = next((i for i, m in enumerate(messages) if m.role == "assistant"), -1)
    horizon = _horizon(messages)
    if start < 0 or horizon <= start:
        return None
    shortened = {e.index: e.message for e in edits}
    # The note's text grows with its counts: charge the longest it can be (or what it
    # adds to the note already there) against what is removed.
    old_note = message_chars(messages[removed.note]) if removed.note >= 0 else 0
    need += len(NOTE.format(messages=10**9, calls=10**9)) - old_note
    chars = calls = answers = 0
    i = start
    while i < horizon:
        # one exchange: the answer at i and everything up to the next answer
        j = i
        while True:
            m = shortened.get(j, messages[j])
            chars += message_chars(m)
            calls += len(m.tool_calls)
            j += 1
            if j >= horizon or messages[j].role == "assistant":
                break
        answers += 1
        i = j
        if chars >= need:
            break
    grown = message_chars(note(removed.messages + i - start, removed.calls + calls, 0)) - old_note
    if chars <= grown:  # the note would take more room than the messages it stands for
        return None
    return Removal(start, i, calls, answers, chars)


def remove(messages: list[Message], removal: Removal, removed: Removed, scanned: Scanned) -> int:
    """Apply `removal` in place (after the edits it was planned with): the exchanges go,
    the note is put where they were or updated, `removed` and `scanned` follow. The
    characters dropped (the removed messages' less what the note adds)."""
    start, stop = removal.start, removal.stop
    answers = removal.answers
    old_note = 0
    if removed.note >= 0:
        old = messages[removed.note]
        old_note = message_chars(old)
        answers += old.removed_answers
    removed.messages += stop - start
    removed.calls += removal.calls
    new_note = note(removed.messages, removed.calls, answers)
    if removed.note >= 0:
        del messages[start:stop]
        messages[removed.note] = new_note
        inserted = 0
    else:
        messages[start:stop] = [new_note]
        removed.note = start
        inserted = 1

    def moved(i: int) -> int:
        if i < start:
            return i
        if i < stop:
            return start + inserted
        return i - (stop - start) + inserted

    scanned.results, scanned.calls = moved(scanned.results), moved(scanned.calls)
    return removal.chars - (message_chars(new_note) - old_note)
