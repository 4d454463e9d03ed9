"""Hooks around the model's tool calls and its sessions.

One protocol (`protocol.py`), two sets implementing it: native hooks (`native.py`,
docs/hooks.md "Native hooks") and Claude Code's settings-shape hooks (`settings.py` and its
helpers, docs/hooks.md "Settings-shape hooks"). A step folds them with `chain`, native
first.
"""

from __future__ import annotations

from .protocol import (
    NO_HOOKS,
    Chain,
    Hooks,
    PostToolVerdict,
    PreToolVerdict,
    PromptVerdict,
    chain,
)

__all__ = [
    "NO_HOOKS",
    "Chain",
    "Hooks",
    "PostToolVerdict",
    "PreToolVerdict",
    "PromptVerdict",
    "chain",
]
