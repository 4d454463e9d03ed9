"""Which files a trusted command names (config/pins.py; docs/hooks.md, "Pinned files"):
the words of a hook's or server's command, read as the shell and PATH would, each
resolved from the workspace."""

from __future__ import annotations

import os
from pathlib import Path

from orkeon_run.config.pins import MISSING, pin, shell_words


def test_a_settings_hooks_words_stand_for_the_workspace_and_skip_redirections() -> None:
    """docs/hooks.md, "Pinned files": `$CLAUDE_PROJECT_DIR` stands for the workspace; the
    file of a redirection and a word with another variable are not the hook's."""
    words = shell_words(
        'python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/x.py 2>>logs/err.txt && '
        "node ${ORKEON_PROJECT_DIR}/scripts/check.js < in.json | tee $HOME/out"
    )
    assert "./.claude/hooks/x.py" in words and "./scripts/check.js" in words
    assert not {"logs/err.txt", "in.json", "$HOME/out", "&&", "|"} & set(words)


def test_the_files_a_command_names_are_pinned_and_a_change_is_seen(tmp_path: Path) -> None:
    """docs/security.md, "Guards": a named file is pinned by content; one named with a `/`
    that is not there yet is pinned as missing (one that appears has changed); a folder
    or a word naming nothing is not pinned; a program PATH finds in the workspace is."""
    ws = tmp_path / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "scripts/check.js").write_text("1\n")
    (ws / ".venv/bin").mkdir(parents=True)
    (ws / ".venv/bin/lint").write_text("#!/bin/sh\n")
    (ws / ".venv/bin/lint").chmod(0o755)
    search = f"{ws / '.venv/bin'}{os.pathsep}{os.environ['PATH']}"
    command = ["node", "scripts/check.js", "--conf=scripts/later.json", "scripts", "{path}"]
    pins = pin(ws, [command, ["lint", "-q"]], search)
    assert pins.digests["scripts/later.json"] == MISSING
    assert {"scripts/check.js", ".venv/bin/lint"} <= set(pins.digests)
    assert "scripts" not in pins.digests and "{path}" not in pins.digests
    assert pins.changed(command) == []
    (ws / "scripts/check.js").write_text("2\n")
    (ws / "scripts/later.json").write_text("{}\n")
    assert pins.changed(command) == ["scripts/check.js", "scripts/later.json"]
    assert pins.changed_all() == ["scripts/check.js", "scripts/later.json"]
