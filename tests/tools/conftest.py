"""Fixtures of the tools' tests."""

from kit.sandbox import sandbox_mode  # noqa: F401 - the sandbox tests run in both modes
