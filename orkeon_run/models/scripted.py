"""The scripted model provider (docs/inputs.md, "model"): deterministic, no network, no SDK.

The script maps role full names to entries; each entry is one model turn. A role's n-th
answer is its n-th entry, where n is the number of answers already in the conversation
it is sent (answers a compaction removed count too: its note carries how many): the model
keeps no state of its own, so a resumed role (whose conversation is reloaded from its
transcript) goes on where it stopped. When a role's entries are used up, or the script
has none for it, it answers `FINAL_TEXT` with no calls and the role ends. An entry `{}`
answers an empty text with no calls.

Tool-call ids are deterministic: an entry's own `id`, else `call_T_K` (turn T, call K,
from 1). An entry's `usage` (`{"input_tokens", "output_tokens"}`, and optionally
`cache_read_input_tokens` / `cache_creation_input_tokens`, the parts of the input read
from and written to a prompt cache) is reported as the turn's tokens; without it a turn
reports 0 tokens. Its price is 0 unless `model.price` says otherwise, so a scripted run's
`usd` is a number, not null.

`script` is an object, a path to a JSON file holding one (relative paths resolve against
`base_dir`, the current directory by default), or `"@transcript:PATH"`: replay the
answers recorded in a transcript file (for the role it recorded) or in a directory of
transcripts (a run's `transcripts/`, for every role in it). See `transcript.replay_script`.

Memory: a script file or a replay is validated whole when it is loaded (a bad one fails
before the run, with every problem named), but each entry is then kept only as its compact
JSON text, deflated, and decoded again when its turn is asked for: validated entries (near
a kilobyte per call) would otherwise stay alive for the whole run, growing with its length.
An inline script is kept as the `ScriptEntry` objects the inputs already hold.
"""

from __future__ import annotations

import itertools
import json
import os
import zlib
from pathlib import Path
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError
from pydantic_core import from_json

from ..config.errorlines import error_lines
from ..config.inputs import ScriptedModel, ScriptEntry
from ..errors import InputError
from ..jsonio import loads_strict
from .base import Message, ToolCall, ToolSpec, Turn
from .pricing import DEFAULT_CONTEXT_TOKENS, FREE, Pricer, Rates
from .transcript import replay_script

FINAL_TEXT = "done"
TRANSCRIPT_PREFIX = "@transcript:"

_SCRIPT = TypeAdapter(dict[str, list[ScriptEntry]])

# One turn as kept: a validated entry (an inline script), or one packed by `_pack_entry` (a
# script file or a replay), which `_entry` decodes when its turn is asked for.
Packed = ScriptEntry | bytes
Script = dict[str, list[Packed]]


def _validate(doc: Any, origin: str) -> dict[str, list[ScriptEntry]]:
    try:
        return _SCRIPT.validate_python(doc)
    except ValidationError as exc:
        raise InputError(error_lines(exc, prefix=origin)) from None


def _pack(doc: dict[str, Any], origin: str) -> Script:
    """`doc` (plain JSON data) validated, each entry packed by `_pack_entry`.

    Entries are validated one at a time, so at most one validated entry is alive at once.
    On any problem (or a role that is not a list, which no single entry shows) the whole
    document is validated instead: the error lines are exactly those of one whole-script
    validation, every problem named."""
    if all(type(entries) is list for entries in doc.values()):
        try:
            return {role: [_pack_entry(raw) for raw in entries] for role, entries in doc.items()}
        except ValidationError:
            pass
    return cast(Script, _validate(doc, origin))  # raises InputError for anything JSON holds


def _pack_entry(raw: Any) -> bytes:
    """A valid entry's compact JSON text, deflated: a turn's calls repeat their keys, tools
    and paths, so some 10 bytes a call are kept where the text takes 50 and its validated
    objects near a kilobyte."""
    ScriptEntry.model_validate(raw)  # the check only: this entry is decoded on its turn
    # ASCII escapes keep a lone surrogate (which JSON text may hold) exact through the
    # round trip; the text is plain JSON data, so decoding it gives `raw` back.
    text = json.dumps(raw, separators=(",", ":")).encode("ascii")
    # Raw deflate, fastest level, small window: microseconds for a short text (the default
    # window allocates a large buffer per call).
    z = zlib.compressobj(1, zlib.DEFLATED, -12, 4)
    return z.compress(text) + z.flush()


def _entry(packed: Packed) -> ScriptEntry:
    """The validated entry of one turn: the same data `_pack_entry` validated."""
    if isinstance(packed, ScriptEntry):
        return packed
    text = zlib.decompress(packed, -15)
    try:
        # pydantic's decoder shares short strings between turns (a path read again and
        # again is kept once, however many calls hold it).
        raw = from_json(text, cache_strings=True)
    except ValueError:  # a lone surrogate (`\ud800`), which only `json` decodes
        raw = json.loads(text)
    return ScriptEntry.model_validate(raw)


def load_script(script: dict[str, list[ScriptEntry]] | str, base_dir: Path | None = None) -> Script:
    """The script as entries per role (each a `ScriptEntry`, or a validated entry packed:
    see `_entry`); InputError (exit 2) naming the problem otherwise.

    `prepare.py` calls this at validation time (through `check_model`, which keeps nothing)
    so a bad script file fails before the run starts.
    """
    if not isinstance(script, str):
        return cast(Script, script)  # the inputs' own objects: nothing to validate or copy
    base = base_dir or Path.cwd()
    if script.startswith(TRANSCRIPT_PREFIX):
        # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user (an
        # internal error, exit 1); the shell's way is to keep the text as it is.
        written = script[len(TRANSCRIPT_PREFIX) :]
        path = base / os.path.expanduser(written)
        if not path.exists():
            raise InputError(f"model.script: no such transcript: {_as_written(written, path)}")
        if not (path.is_file() or path.is_dir()):  # a FIFO or a device: see below
            raise InputError(f"model.script: not a regular file or folder: {path}")
        try:
            doc = replay_script(path)
        except (OSError, UnicodeDecodeError, KeyError, TypeError) as exc:
            raise InputError(f"model.script: cannot read transcript {path}: {exc}") from None
        return _pack(doc, "model.script")
    path = base / os.path.expanduser(script)
    if path.exists() and not path.is_file():
        # A FIFO blocks the read and /dev/zero never ends it: validation would hang.
        raise InputError(f"model.script: not a regular file: {path}")
    try:
        doc = loads_strict(path.read_text(encoding="utf-8"))  # no NaN: see inputs.py
    except FileNotFoundError:
        hint = ""
        if script.startswith("@"):
            hint = f"; a script file is named by its path, without '@' (only {TRANSCRIPT_PREFIX}PATH takes one)"
        raise InputError(f"model.script: no such file: {_as_written(script, path)}{hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"model.script: cannot read {path}: {exc}") from None
    except ValueError as exc:
        raise InputError(f"model.script: {path} is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InputError(f"model.script: {path} must hold a JSON object")
    return _pack(doc, "model.script")


def _as_written(written: str, path: Path) -> str:
    """The path as the inputs wrote it, and where it was looked for when that differs
    (a relative path, a `~`): `@/x.json (looked for /ci/ws/@/x.json)`."""
    return written if str(path) == written else f"{written} (looked for {path})"


class ScriptedRole:
    """One role's scripted model."""

    def __init__(self, role: str, entries: list[Packed]) -> None:
        self.role = role
        self.entries = entries
        # (conversation, its length, its last message, answers in it) as last counted: the
        # agent sends the same list every turn, grown at its end, so only the new messages
        # are counted (counting all of them every turn is quadratic in a long session). A
        # list that is not the one counted, or whose counted end is no longer where it was
        # (a compaction removed messages before it), is counted whole again. (Should the
        # end stay in place, the count still holds: a compaction's note counts exactly the
        # answers it removed.)
        self._counted: tuple[list[Message], int, Message, int] | None = None

    def _answers(self, messages: list[Message]) -> int:
        """Answers the conversation holds: its assistant messages, plus those a compaction
        removed (its note's `removed_answers`), so removing answers does not change n."""
        start = n = 0
        if self._counted is not None:
            seen, length, last, count = self._counted
            if seen is messages and length <= len(messages) and messages[length - 1] is last:
                start, n = length, count
        n += sum(
            (m.role == "assistant") + m.removed_answers
            for m in itertools.islice(messages, start, None)
        )
        if messages:
            self._counted = (messages, len(messages), messages[-1], n)
        return n

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        answer_schema: Any = None,
        *,
        idle: float | None = None,
    ) -> Turn:
        """The next entry; `answer_schema` is ignored: the script's text is the answer. A
        script answers at once: it is never silent, so `idle` has nothing to watch."""
        n = self._answers(messages)
        if n >= len(self.entries):
            return Turn(text=FINAL_TEXT, tool_calls=[], model_name="scripted")
        entry = _entry(self.entries[n])
        calls = [
            ToolCall(c.id or f"call_{n + 1}_{k + 1}", c.tool, dict(c.input))
            for k, c in enumerate(entry.tool_calls)
        ]
        usage = entry.usage or {}
        return Turn(
            text=entry.text or "",
            tool_calls=calls,
            tokens_in=int(usage.get("input_tokens", 0)),
            tokens_out=int(usage.get("output_tokens", 0)),
            model_name="scripted",
            cache_read_tokens=int(usage.get("cache_read_input_tokens", 0)),
            cache_write_tokens=int(usage.get("cache_creation_input_tokens", 0)),
        )


class ScriptedProvider:
    name = "scripted"

    def __init__(self, config: ScriptedModel, *, base_dir: Path | None = None) -> None:
        self.config = config
        self.script = load_script(config.script, base_dir)

    def for_role(self, role: str) -> ScriptedRole:
        return ScriptedRole(role, self.script.get(role, []))

    def price(self) -> Pricer | None:
        p = self.config.price
        return Rates.of(p) if p else FREE

    def context_tokens(self) -> int:
        return self.config.context_tokens or DEFAULT_CONTEXT_TOKENS

    async def aclose(self) -> None:
        pass
