"""Against the real APIs: only with `--live` and the provider's key set.

    OPENAI_API_KEY=... ANTHROPIC_API_KEY=... .venv/bin/pytest tests/models/test_live.py --live

The model names default to small, cheap ones; override with ORKEON_LIVE_OPENAI_MODEL /
ORKEON_LIVE_ANTHROPIC_MODEL (and ORKEON_LIVE_OPENAI_BASE_URL for a compatible server).
A session costs a fraction of a cent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kit.agent import Rig

from orkeon_run.config.inputs import AnthropicModel, OpenAIModel
from orkeon_run.models import build_provider

pytestmark = pytest.mark.live

TASK = (
    "Call the list_files tool exactly once with no arguments. After you get its result, "
    "answer with the single word DONE and call no more tools."
)


def configs() -> list[object]:
    return [
        pytest.param(
            OpenAIModel(
                provider="openai",
                model=os.environ.get("ORKEON_LIVE_OPENAI_MODEL", "gpt-4o-mini"),
                base_url=os.environ.get("ORKEON_LIVE_OPENAI_BASE_URL"),
                timeout_seconds=60,
            ),
            id="openai",
        ),
        pytest.param(
            AnthropicModel(
                provider="anthropic",
                model=os.environ.get("ORKEON_LIVE_ANTHROPIC_MODEL", "claude-haiku-4-5"),
                timeout_seconds=60,
            ),
            id="anthropic",
        ),
    ]


@pytest.mark.parametrize("config", configs())
def test_a_real_tool_session(tmp_path: Path, config: OpenAIModel | AnthropicModel) -> None:
    if not os.environ.get(config.api_key_env):
        pytest.skip(f"{config.api_key_env} is not set")
    rig = Rig(tmp_path, build_provider(config), tools=("list_files",))
    [result] = rig.run(TASK)
    assert result.status == "succeeded", result.error
    assert result.calls >= 1
    assert "DONE" in result.final_text.upper()
    snap = rig.ledger.snapshot()
    assert snap["tokens_in"] > 0 and snap["tokens_out"] > 0
    if rig.provider.price() is not None:
        assert snap["usd"] > 0
