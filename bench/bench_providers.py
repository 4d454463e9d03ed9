"""What a model provider adds to a turn (issue 5): target under 5 ms against a loopback
server.

For each HTTP provider and a conversation of 2, 20 and 60 tool rounds (a file_read result
of ~2.4 kB each, six tool specs), against the loopback fake of its API (tests/kit/fakes):

- provider: the median of `Model.complete(messages, tools)`: converting the conversation,
  encoding the request, the HTTP client, the round trip, reading the reply;
- raw: the median of posting the same request body, already encoded, with a bare HTTP
  client (httpx2, the SDKs' own) and decoding the reply's JSON: the round trip alone.

The difference is what the provider adds. Both are timed in turn within each round, so a
load that comes and goes on the machine weighs on both alike. Also shown: the same for
the SDK's typed `chat.completions.create` (openai) / `messages.create` (anthropic), which
the providers do not use (see models/openai.py), and the scripted provider's turn.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2

from orkeon_run.config.inputs import AnthropicModel, OpenAIModel, ScriptedModel
from orkeon_run.models import anthropic as anthropic_mod
from orkeon_run.models import openai as openai_mod
from orkeon_run.models.anthropic import AnthropicProvider
from orkeon_run.models.base import Message, ToolCall, ToolSpec
from orkeon_run.models.openai import OpenAIProvider
from orkeon_run.models.scripted import ScriptedProvider
from tests.kit.fakes import anthropic_api, openai_api
from tests.kit.fakes.server import FakeServer

from .common import header, row

ROUNDS = (2, 20, 60)
REPEAT = 150
TARGET_MS = 5.0
RESULT = "".join(f"    line {i}: some source code of a file the model reads\n" for i in range(40))
TOOLS = [
    ToolSpec(
        name,
        "A tool the model may call. " * 8,
        {
            "type": "object",
            "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["file_path"],
        },
    )
    for name in ("file_read", "file_write", "file_edit", "list_files", "search_files", "shell")
]

Timed = Callable[[], Awaitable[object]]


def conversation(rounds: int) -> list[Message]:
    msgs = [Message("system", "You are a careful engineer. " * 60), Message("user", "Task. " * 200)]
    for i in range(rounds):
        msgs.append(
            Message(
                "assistant",
                "Reading.",
                [ToolCall(f"c{i}", "file_read", {"file_path": f"src/m{i}.py"})],
            )
        )
        msgs.append(Message("tool", RESULT, tool_call_id=f"c{i}", name="file_read"))
    return msgs  # fmt: skip


async def interleaved(fns: dict[str, Timed], repeat: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():  # warm up: connections, caches
        for _ in range(10):
            await fn()
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            await fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(v) for name, v in samples.items()}


async def bench_openai(server: FakeServer, msgs: list[Message]) -> dict[str, float]:
    url = server.base_url  # type: ignore[attr-defined]
    provider = OpenAIProvider(
        OpenAIModel(provider="openai", model="gpt-4o-mini", base_url=url), "sk-test"
    )
    model = provider.for_role("r")
    body = {"model": "gpt-4o-mini", "messages": openai_mod.wire_messages(msgs),
            "max_tokens": provider.max_output_tokens(), "tools": openai_mod.wire_tools(TOOLS),
            "tool_choice": "auto"}  # fmt: skip
    data = json.dumps(body).encode()
    raw = httpx2.AsyncClient()
    headers = {"authorization": "Bearer sk-test", "content-type": "application/json"}
    import openai  # the SDK, for the typed path only: the provider does not load it

    typed = openai.AsyncOpenAI(api_key="sk-test", base_url=url, max_retries=0)

    async def p() -> object:
        return await model.complete(msgs, TOOLS)

    async def r() -> object:
        return json.loads(
            (await raw.post(url + "/chat/completions", content=data, headers=headers)).content
        )

    async def t() -> object:
        return await typed.chat.completions.create(**body)

    try:
        return await interleaved({"provider": p, "raw": r, "typed": t}, REPEAT)
    finally:
        await raw.aclose()
        await typed.close()
        await provider.aclose()


async def bench_anthropic(server: FakeServer, msgs: list[Message]) -> dict[str, float]:
    url = server.base_url  # type: ignore[attr-defined]
    config = AnthropicModel(provider="anthropic", model="claude-sonnet-4-6", base_url=url)
    provider = AnthropicProvider(config, "sk-ant-test")
    model = provider.for_role("r")
    system, wire = anthropic_mod.wire_request(msgs)
    body = {"model": config.model, "max_tokens": provider.max_output_tokens(), "system": system,
            "messages": wire, "tools": anthropic_mod.wire_tools(TOOLS)}  # fmt: skip
    anthropic_mod.add_breakpoints(body)  # the same bytes the provider sends (cache on)
    data = json.dumps(body).encode()
    raw = httpx2.AsyncClient()
    headers = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01",
               "content-type": "application/json"}  # fmt: skip
    import anthropic  # the SDK, for the typed path only: the provider does not load it

    typed = anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=url, max_retries=0)

    async def p() -> object:
        return await model.complete(msgs, TOOLS)

    async def r() -> object:
        return json.loads(
            (await raw.post(url + "/v1/messages", content=data, headers=headers)).content
        )

    async def t() -> object:
        return await typed.messages.create(**body)

    try:
        return await interleaved({"provider": p, "raw": r, "typed": t}, REPEAT)
    finally:
        await raw.aclose()
        await typed.close()
        await provider.aclose()


async def bench_scripted(msgs: list[Message]) -> float:
    model = ScriptedProvider(
        ScriptedModel(provider="scripted", script={"r": [{"text": "x"}] * 200})
    ).for_role("r")

    async def s() -> Any:
        return await model.complete(msgs, TOOLS)

    return (await interleaved({"s": s}, REPEAT * 10))["s"]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def main() -> None:
    header()
    fakes: list[tuple[str, FakeServer, Callable[..., Awaitable[dict[str, float]]]]] = [
        ("openai", openai_api.OpenAIFake(), bench_openai),
        ("anthropic", anthropic_api.AnthropicFake(), bench_anthropic),
    ]
    for name, server, bench in fakes:
        reply = (openai_api.completion("ok", usage=(100, 5)) if name == "openai"
                 else anthropic_api.message("ok", usage=(100, 5)))  # fmt: skip
        server.fallback = lambda req, reply=reply: reply
        with server:
            for rounds in ROUNDS:
                msgs = conversation(rounds)
                got = asyncio.run(bench(server, msgs))
                added = got["provider"] - got["raw"]
                kib = len(json.dumps([m.to_json() for m in msgs])) // 1024
                row(f"{name}: added per turn, {rounds} rounds ({kib} KiB)", ms(added),
                    ms(got["raw"]), got["provider"] / got["raw"], f"< {TARGET_MS:g} ms",
                    added * 1000 < TARGET_MS)  # fmt: skip
                typed = got["typed"] - got["raw"]
                row(f"  (SDK typed create would add, {rounds} rounds)", ms(typed), ms(got["raw"]),
                    got["typed"] / got["raw"], "not used", None)  # fmt: skip
    for rounds in ROUNDS:
        s = asyncio.run(bench_scripted(conversation(rounds)))
        row(
            f"scripted: a turn, {rounds} rounds",
            f"{s * 1e6:.1f} µs",
            "",
            None,
            "< 5 ms",
            s * 1000 < TARGET_MS,
        )


if __name__ == "__main__":
    main()
