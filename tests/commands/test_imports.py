"""What a command imports (docs/performance.md, "Start-up, back below the peers"): the
number of modules that `orkeon run --help` and a scripted `orkeon run` load, held to a
ceiling (the count measured when the ceiling was set, plus a small margin). A module count does not depend on the
machine's speed; a new import that loads a heavy package shows up here first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kit.fakes import anthropic_api
from kit.fakes.anthropic_api import AnthropicFake
from kit.steps import environ, make_workspace, scripted

# Measured (278 and 434 with Python 3.11 and the dependencies of pyproject.toml in
# 2026-12), plus a margin of some 4 %; the scripted run's 445 after modules were split by
# responsibility (run/opening, run/failed, the progress package: 11 small modules); 457
# with the third round's features on the run's path (the kept-up sandbox's client, hook
# handlers and plugins, the hooks' veil, the git-shaped servers' check); 457 with the
# instruction files and without the result's models. `validate`: 342 once it no longer
# loaded an event loop it does not run. 279, 459, 343 and 554 (the Anthropic run, with the
# prices' database) once a run without `patch` no longer loaded the patch's modules; 281,
# 463, 347 and 558 with the bare runs' configuration sources. `validate`: 337 once it no
# longer loaded the calls, the audit, the failed run's and the providers' base modules;
# the runs: 452 and 547 once the modules of features a run does not use were imported
# where the feature starts ("Start-up, fourth pass").
CEILINGS = {"run --help": 285, "scripted run": 455, "validate": 341, "Anthropic run": 550}
# docs/performance.md, "Start-up, fourth pass": modules of features a run with one
# PreToolUse hook does not use, each imported where its feature starts (a compaction, a
# tasks-repair, a crew's MCP entry, a document with an unknown key, SessionStart's env
# files, plugins, PostToolUse's file watch, native hooks, a changed file, OTel traces, a
# shell command that runs git).
FEATURE_ONLY = (
    "orkeon_run.agent.compaction",
    "orkeon_run.run.failed",
    "orkeon_run.tools.mcp",
    "orkeon_run.config.suggest",
    "orkeon_run.hooks.claude.envfile",
    "orkeon_run.hooks.claude.plugins",
    "orkeon_run.hooks.claude.rewrites",
    "orkeon_run.hooks.native",
    "orkeon_run.gitpatch",
    "orkeon_run.run.spans",
    "orkeon_run.policy.gitargs",
)
HEAVY = ("structlog", "rich", "genai_prices", "httpx2", "httpcore2", "yaml", "mcp")
# An HTTP provider's run needs the HTTP client (and, for now, the prices: models/pricing.py).
HTTP_NEEDS = ("genai_prices", "httpx2", "httpcore2")

COUNT = (
    "import contextlib, io, json, sys; from orkeon_run.__main__ import main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n    rc = main(sys.argv[1:])\n"
    "print(json.dumps({'rc': rc, 'modules': sorted(sys.modules)}))"
)


def loaded(tmp: Path, *argv: str, **more: str) -> tuple[int, list[str]]:
    # JSON log lines, as in CI: FORCE_COLOR would ask for the readable form (structlog).
    env = {k: v for k, v in environ(tmp).items() if k != "FORCE_COLOR"} | more
    proc = subprocess.run(
        [sys.executable, "-c", COUNT, *argv],
        capture_output=True, text=True, env=env, cwd=tmp, timeout=120,
    )  # fmt: skip
    out = json.loads(proc.stdout.splitlines()[-1])
    return out["rc"], out["modules"]


def within(what: str, modules: list[str], argv: str, needs: tuple[str, ...] = ()) -> None:
    ceiling = CEILINGS[what]
    assert len(modules) <= ceiling, (
        f"`orkeon {what}` imported {len(modules)} modules, the ceiling is {ceiling}. See what "
        f"grew with `python -X importtime -m orkeon_run {argv} 2> imports.txt` (the second "
        "column is each module's cumulative microseconds), and import the new module where "
        "it is used; raise the ceiling only for a module the command needs."
    )
    heavy = sorted({m.split(".")[0] for m in modules} & (set(HEAVY) - set(needs)))
    assert heavy == [], f"`orkeon {what}` imported {heavy}, which it does not need"


def test_run_help_imports_few_modules(tmp_path: Path) -> None:
    rc, modules = loaded(tmp_path, "run", "--help")
    assert rc == 0
    within("run --help", modules, "run --help")
    # The step registry names the steps; no step, runner or command module is loaded.
    assert not any(
        m.startswith(("orkeon_run.run.steps.", "orkeon_run.commands.run")) for m in modules
    )
    assert "orkeon_run.run.runner" not in modules


def test_a_scripted_run_imports_few_modules(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"README.md": "# demo\n", "src/app.py": "x = 1\n"})
    plan = {"batches": [{"name": "b1", "roles": [{"name": "dev", "roots": ["src/"], "task": "t"}]}]}
    reads = [{"tool_calls": [{"tool": "file_read", "input": {"file_path": "README.md"}}]}] * 3
    doc = scripted({"b1/dev": [*reads, {"text": "done"}]}, plan=plan, budget={"seconds": 60})
    argv = ["run", "dev-batches", "--workspace", str(ws), "--output", "json", "--inputs"]
    rc, modules = loaded(tmp_path, *argv, json.dumps(doc))
    assert rc == 0
    within("scripted run", modules, "run dev-batches --inputs @inputs.json")
    # The result's and events' pydantic models are `orkeon schema`'s; a run writes dicts.
    assert "orkeon_run.run.result" not in modules


def test_a_run_with_a_hook_loads_no_feature_it_does_not_use(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"README.md": "# demo\n", "src/app.py": "x = 1\n"})
    plan = {"batches": [{"name": "b1", "roles": [{"name": "dev", "roots": ["src/"], "task": "t"}]}]}
    reads = [{"tool_calls": [{"tool": "file_read", "input": {"file_path": "README.md"}}]}] * 2
    doc = scripted({"b1/dev": [*reads, {"text": "done"}]}, plan=plan, budget={"seconds": 60})
    hook = {"type": "command", "command": "true"}
    doc["hooks"] = {"PreToolUse": [{"matcher": "*", "hooks": [hook]}]}
    argv = ["run", "dev-batches", "--workspace", str(ws), "--output", "json", "--inputs"]
    rc, modules = loaded(tmp_path, *argv, json.dumps(doc))
    assert rc == 0
    assert "orkeon_run.hooks.claude.settings" in modules  # the hook's own path is loaded
    assert sorted(set(FEATURE_ONLY) & set(modules)) == []


def test_a_run_without_progress_loads_no_view(tmp_path: Path) -> None:
    # docs/performance.md, "Start-up, fourth pass": `--progress none` shows no view, so
    # neither the plain view nor the tracker it follows the run in is imported.
    ws = make_workspace(tmp_path, {"README.md": "# demo\n", "src/app.py": "x = 1\n"})
    plan = {"batches": [{"name": "b1", "roles": [{"name": "dev", "roots": ["src/"], "task": "t"}]}]}
    doc = scripted({"b1/dev": [{"text": "done"}]}, plan=plan, budget={"seconds": 60})
    argv = ["run", "dev-batches", "--workspace", str(ws), "--output", "json", "--progress"]
    rc, modules = loaded(tmp_path, *argv, "none", "--inputs", json.dumps(doc))
    assert rc == 0
    view = {f"orkeon_run.run.progress.{m}" for m in ("plain", "plain_lines", "tracker")}
    assert sorted(view & set(modules)) == []


def test_validate_imports_no_event_loop(tmp_path: Path) -> None:
    # docs/performance.md, "Start-up, back below the peers": `orkeon validate` runs no
    # command and starts no event loop, so it imports neither asyncio nor anyio.
    argv = ["validate", "--inputs", '{"budget": {"seconds": 60}}', "--workspace", str(tmp_path)]
    rc, modules = loaded(tmp_path, *argv)
    assert rc == 0
    within("validate", modules, "validate --inputs @inputs.json")
    loops = sorted({m.split(".")[0] for m in modules} & {"asyncio", "anyio"})
    assert loops == [], f"`orkeon validate` imported {loops}, which it does not need"
    # docs/performance.md, "Start-up, fourth pass": it runs no call, no audit and no
    # repair, and builds no provider; prices only for a `usd` budget.
    unused = ("calls", "run.audit", "run.failed", "models.base", "models.pricing")
    needless = sorted({f"orkeon_run.{m}" for m in unused} & set(modules))
    assert needless == [], f"`orkeon validate` imported {needless}, which it does not need"


def test_an_anthropic_run_imports_few_modules(tmp_path: Path) -> None:
    """The same session through the Anthropic provider, against a loopback fake API: the
    HTTP client is loaded, and nothing else heavy (docs/performance.md, "Start-up, after
    the third round's merges")."""
    ws = make_workspace(tmp_path, {"README.md": "# demo\n", "src/app.py": "x = 1\n"})
    plan = {"batches": [{"name": "b1", "roles": [{"name": "dev", "roots": ["src/"], "task": "t"}]}]}
    read = ("c1", "file_read", {"file_path": "README.md"})
    with AnthropicFake(api_key="sk-ant-test", models=("claude-x",)) as server:
        server.push(anthropic_api.message("reading", [read]), anthropic_api.message("done"))
        model = {"provider": "anthropic", "model": "claude-x", "base_url": server.base_url,
                 "api_key_env": "ORKEON_TEST_KEY", "max_retries": 0}  # fmt: skip
        doc = {"model": model, "plan": plan, "budget": {"seconds": 60}}
        argv = ["run", "dev-batches", "--workspace", str(ws), "--output", "json", "--inputs"]
        rc, modules = loaded(tmp_path, *argv, json.dumps(doc), ORKEON_TEST_KEY="sk-ant-test")
    assert rc == 0
    within("Anthropic run", modules, "run dev-batches --inputs @inputs.json", HTTP_NEEDS)
