"""Prompt caching (issue 13): what a role's input tokens are billed, with and without the
Anthropic provider's `cache_control` breakpoints. Target: at least 70 % less on a 20-turn
session.

One role (the dev-batches worker's system prompt, its six tools) runs 20 turns against
the loopback fake Messages API (tests/kit/fakes), each answer one `file_read` of a 2.4 kB
file, then a final answer. The fake serves every answer's usage from a simulated prompt
cache (tests/kit/fakes/prompt_cache.py: prefixes keyed by content, 20-block lookback, 1024
tokens minimum, as the API documents them), so the hits are what the breakpoints earn.
The same session runs with `"cache": false` as the baseline, in the same process.

Billed input tokens = input tokens at full price + cache writes × (write price / input
price) + cache reads × (read price / input price), at the model's prices from the price
database (claude-sonnet-4-6: 1.25 and 0.1).
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orkeon_run.models.pricing import listed
from tests.kit.agent import Rig
from tests.kit.fakes import anthropic_api
from tests.kit.fakes.prompt_cache import PromptCache
from tests.kit.fakes.protocols import ANTHROPIC

from .common import header, row

TURNS = 20
TARGET = 0.70
PROMPT = Path(__file__).parent.parent / "crews" / "prompts" / "worker.md"
SOURCE = "".join(f"    line {i}: some source code of a file the model reads\n" for i in range(40))


def reply(req: Any) -> Any:
    answers = sum(m["role"] == "assistant" for m in req.body["messages"])
    if answers >= TURNS - 1:
        return anthropic_api.message("The module is read.", usage=(0, 40))
    call = (f"toolu_{answers}", "file_read", {"file_path": f"src/m{answers}.py"})
    return anthropic_api.message("Reading the next module.", [call], usage=(0, 60))


def session(tmp: Path, cache: bool) -> list[dict[str, Any]]:
    """The `model.turn` events of one 20-turn session."""
    server = anthropic_api.AnthropicFake(prompt_cache=PromptCache(min_tokens=1024))
    server.fallback = reply
    with server:
        rig = Rig(tmp, ANTHROPIC.provider(server, cache=cache))
        for i in range(TURNS):
            (rig.workspace / "src" / f"m{i}.py").write_text(SOURCE)
        rig.agent = _with_prompt(rig.agent)  # type: ignore[method-assign]
        [result] = rig.run("Read every module under src/ and say what each does. " * 20)
    assert (result.status, result.turns) == ("succeeded", TURNS), result.error
    return rig.read_events("model.turn")


def _with_prompt(make: Any) -> Any:
    system = PROMPT.read_text(encoding="utf-8")
    return lambda **kw: make(system_prompt=system, **kw)


def billed(turns: list[dict[str, Any]], read: float, write: float) -> float:
    total = 0.0
    for t in turns:
        fresh = t["tokens_in"] - t["cache_read_tokens"] - t["cache_write_tokens"]
        total += fresh + read * t["cache_read_tokens"] + write * t["cache_write_tokens"]
    return total


def main() -> None:
    header()
    found = listed("anthropic", ANTHROPIC.model)
    assert found is not None
    p = found[1].get_prices(datetime.now(tz=UTC))
    read = float(p.cache_read_mtok) / float(p.input_mtok)
    write = float(p.cache_write_mtok) / float(p.input_mtok)
    with tempfile.TemporaryDirectory() as tmp:
        on = session(Path(tmp) / "on", cache=True)
        off = session(Path(tmp) / "off", cache=False)
    sent = sum(t["tokens_in"] for t in off)
    b_on, b_off = billed(on, read, write), billed(off, read, write)
    fall = 1 - b_on / b_off
    row(f"billed input tokens, {TURNS} turns, cache on", f"{b_on:,.0f}", f"{b_off:,.0f}",
        b_on / b_off, f">= {TARGET:.0%} less", fall >= TARGET)  # fmt: skip
    row("  fall against cache off", f"{fall:.1%}", "", None, "", None)
    row("  input tokens sent (both)", f"{sent:,}", "", None, "", None)
    hits = sum(t["cache_read_tokens"] for t in on)
    row("  of which read from the cache (on)", f"{hits:,}", "", hits / sent, "", None)
    usd_on = sum(t["usd"] for t in on)
    usd_off = sum(t["usd"] for t in off)
    row("  USD of the session, cache on", f"${usd_on:.4f}", f"${usd_off:.4f}", usd_on / usd_off,
        "", None)  # fmt: skip


if __name__ == "__main__":
    main()
