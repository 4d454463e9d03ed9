"""`orkeon init`: a starter setup in a workspace (docs/ci.md, "Starting from orkeon init"):

- `.orkeon/hooks/guard.py`, a native pre-tool guard that keeps the crew off the CI files,
  orkeon's own folder and files that look like keys;
- `.orkeon/crews/dev-batches.toml` and its prompt, a copy of the built-in crew to edit (a
  workspace crew applies once trusted: `orkeon hooks trust`, or the workflow's
  `ORKEON_TRUST_PROJECT_HOOKS=1`);
- `ci/orkeon-inputs.json`, the inputs every step of the workflow uses (the model, a budget,
  the guard, the shell's settings, the audit to fill in);
- the CI workflow: `.github/workflows/orkeon.yml` (`--ci github`) or `.gitlab-ci.yml`
  (`--ci gitlab`).

Nothing is overwritten without `--force`: when a file it would write exists, it writes
nothing and names them (exit 2). The files pass `orkeon validate` as written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .. import __version__
from ..errors import InputError

STARTER = Path(__file__).resolve().parent / "starter"
CI_FILES = {"github": ".github/workflows/orkeon.yml", "gitlab": ".gitlab-ci.yml"}
KEY_ENVS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
GUARD = "python3 .orkeon/hooks/guard.py {tool} {path}"


def inputs_document(provider: str, model: str) -> dict[str, object]:
    """The starter inputs: every key an operator changes first, with safe values."""
    return {
        "model": {"provider": provider, "model": model},
        "budget": {"seconds": 1800, "usd": 5.0},
        "hooks": [{"event": "pre-tool", "command": GUARD}],
        "gate": {"deny": ["shell(git push *)"]},
        "shell": {"allow_interpreters": True},
        "audit": {"build": None, "test": None},
    }


def files(ci: str, model: str, install: str) -> dict[str, str]:
    """What init writes: workspace-relative path -> text."""
    from ..config.crews import builtin_dir

    provider, _, name = model.partition(":")
    if provider not in KEY_ENVS or not name:
        raise InputError(
            f"--model: {model!r} is not PROVIDER:NAME with a provider that needs a key "
            f"({', '.join(KEY_ENVS)}), like anthropic:claude-sonnet-4-5"
        )
    workflow = (STARTER / f"{ci}.yml.tmpl").read_text()
    workflow = workflow.replace("@INSTALL@", install).replace("@KEY_ENV@", KEY_ENVS[provider])
    crews = builtin_dir()
    crew = (crews / "dev-batches.toml").read_text()
    head = (
        "# A copy of orkeon's built-in dev-batches crew, written by `orkeon init`, to edit: it\n"
        "# replaces the built-in one once trusted (`orkeon hooks trust`, docs/inputs.md).\n"
    )
    return {
        ".orkeon/hooks/guard.py": (STARTER / "guard.py.tmpl").read_text(),
        ".orkeon/crews/dev-batches.toml": head + crew,
        ".orkeon/crews/prompts/worker.md": (crews / "prompts" / "worker.md").read_text(),
        "ci/orkeon-inputs.json": json.dumps(inputs_document(provider, name), indent=2) + "\n",
        CI_FILES[ci]: workflow,
    }


def main(
    workspace: str | None,
    *,
    ci: str = "github",
    model: str = "anthropic:claude-sonnet-4-5",
    install: str | None = None,
    force: bool = False,
) -> int:
    if ci not in CI_FILES:
        raise InputError(f"--ci: {ci!r} is not one of {', '.join(CI_FILES)}")
    root = Path(workspace or ".").expanduser()
    if not root.is_dir():
        raise InputError(f"--workspace: not a folder: {root}")
    wanted = files(ci, model, install or f"orkeon=={__version__}")
    there = [rel for rel in wanted if (root / rel).exists() or (root / rel).is_symlink()]
    if there and not force:
        raise InputError(
            f"init: would overwrite {', '.join(there)}; nothing was written "
            "(--force overwrites them)"
        )
    for rel, text in wanted.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():  # replaced, never followed out of the workspace
            path.unlink()
        path.write_text(text, encoding="utf-8")
    (root / ".orkeon" / "hooks" / "guard.py").chmod(0o755)
    out = sys.stdout
    for rel in wanted:
        out.write(f"wrote {rel}\n")
    out.write(
        "next: fill in ci/orkeon-inputs.json's audit (your build and test), then\n"
        "  orkeon validate --inputs @ci/orkeon-inputs.json --step pipeline\n"
        "  orkeon hooks trust   # the crew copy in .orkeon/crews/, on this machine\n"
    )
    return 0
