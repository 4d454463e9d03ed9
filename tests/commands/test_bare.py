"""Hermetic runs through the command line (docs/inputs.md, "Hermetic runs: --bare"): "A
bare run reads nothing the `--inputs` do not name". A workspace and a user configuration
folder full of configuration that each visibly changes a normal run (a user hook and a
project hook that write marks, a user setting that sets the time limit, a project crew that
changes a prompt, an `AGENTS.md`, MCP servers from the user file and `.mcp.json`, the
trust records that let the project's files in); with `--bare` or `ORKEON_BARE=1` none takes effect, broken
copies of them are not even read, and the inputs' own hooks and plugins still run."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from kit import ROOT
from kit.cli import pipeline_doc
from kit.process import orkeon
from kit.steps import environ, make_workspace

CREW_MARK = "CREW-OVERRIDE-PROMPT"
AGENTS_MARK = "AGENTS-FILE-INSTRUCTIONS"
WRITE_SPEC = {
    "tool_calls": [
        {"tool": "file_write", "input": {"file_path": ".orkeon/spec.md", "content": "# Spec\n"}}
    ]
}


def hook(mark: Path) -> dict[str, Any]:
    """A settings-shape PreToolUse hook that writes `mark`: the plugin's data folder, or
    nothing outside a plugin."""
    command = f'printf %s "$CLAUDE_PLUGIN_DATA" > {shlex.quote(str(mark))}'
    return {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]}


def setup(tmp: Path) -> tuple[Path, Path, Path, dict[str, Any]]:
    """The workspace, the config folder, the marks folder and the inputs (with their own
    hook and a plugin outside the workspace, each writing a mark)."""
    marks = tmp / "marks"
    marks.mkdir()
    ws = make_workspace(tmp, {"README.md": "# demo\n"})
    cfg = tmp / "config"
    cfg.mkdir()
    (cfg / "settings.json").write_text(json.dumps({
        "hooks": hook(marks / "user-hook"),
        "mcpServers": {"usersrv": {"command": "/nonexistent/user-server"}},
        "Orkeon": {"Run": {"MaxSeconds": 777}},
    }))  # fmt: skip
    (ws / ".orkeon").mkdir()
    (ws / ".orkeon" / "settings.json").write_text(json.dumps({"hooks": hook(marks / "ws-hook")}))
    (ws / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"wssrv": {"command": "/nonexistent/ws-server"}}})
    )
    crews = ws / ".orkeon" / "crews"
    crews.mkdir()
    shutil.copy(ROOT / "crews" / "dev-spec.toml", crews / "dev-spec.toml")
    (crews / "prompts").mkdir()
    (crews / "prompts" / "analyst.md").write_text(f"{CREW_MARK}: read the workspace.\n")
    (ws / "AGENTS.md").write_text(f"{AGENTS_MARK}: keep it short.\n")
    plugin = tmp / "plugin"
    (plugin / "hooks").mkdir(parents=True)
    (plugin / "hooks" / "hooks.json").write_text(json.dumps({"hooks": hook(marks / "plugin-hook")}))
    doc = {
        "request": "add a greeting",
        "model": {
            "provider": "scripted",
            "script": {"analyst": [{"text": "ok"}], "writer": [WRITE_SPEC]},
        },
        "hooks": hook(marks / "inputs-hook"),
        "plugins": [str(plugin)],
    }
    trusted = orkeon("hooks", "trust", "--workspace", str(ws), cwd=tmp)
    assert trusted.returncode == 0, trusted.stderr
    return ws, cfg, marks, doc


def dev_spec(
    tmp: Path, ws: Path, doc: dict[str, Any], *args: str, env: dict[str, str] | None = None
) -> Any:
    return orkeon(
        "run", "dev-spec", "--workspace", str(ws), "--output", "json",
        "--progress", "none", "--inputs", json.dumps(doc), *args,
        cwd=tmp, env=environ(tmp, **(env or {})),
    )  # fmt: skip


def analyst_sent(ws: Path, result: dict[str, Any]) -> str:
    return (
        ws / ".orkeon" / "runs" / result["run_id"] / "transcripts" / "analyst.jsonl"
    ).read_text()


def test_the_configuration_around_a_normal_run_takes_effect(tmp_path: Path) -> None:
    """The fixture's configuration is live: without --bare each piece changes the run."""
    ws, _, marks, doc = setup(tmp_path)
    done = dev_spec(tmp_path, ws, doc)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["bare"] is False
    assert result["budget"]["limit_seconds"] == 777  # the user's Orkeon:Run:MaxSeconds
    assert CREW_MARK in analyst_sent(ws, result)  # the trusted project crew
    assert AGENTS_MARK in analyst_sent(ws, result)  # the trusted instruction file
    assert {p.name for p in marks.iterdir()} == {
        "user-hook",
        "ws-hook",
        "inputs-hook",
        "plugin-hook",
    }
    data = Path((marks / "plugin-hook").read_text())
    assert data.parent == tmp_path / "config" / "plugins" / "data"  # lasts across runs
    dry = dev_spec(tmp_path, ws, doc, "--dry-run")
    plan = json.loads(dry.stdout)
    commands = " ".join(h["command"] for h in plan["hooks"])
    assert plan["bare"] is False and "user-hook" in commands and "ws-hook" in commands
    checked = orkeon("validate", "--inputs", json.dumps(doc), "--workspace", str(ws), cwd=tmp_path)
    assert checked.returncode == 2  # the user's and the project's servers cannot start
    assert "usersrv" in checked.stderr and "wssrv" in checked.stderr


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_bare_run_takes_only_what_the_inputs_name(tmp_path: Path, how: str) -> None:
    """docs/inputs.md: "`--bare` (or `ORKEON_BARE=1`) reads nothing the `--inputs` do not
    name ... the inputs' own hooks, `settings` files, `mcp_servers` and `plugins` (by path)
    still count"; docs/output.md: the result's `bare` is true."""
    ws, _, marks, doc = setup(tmp_path)
    args, env = (["--bare"], None) if how == "flag" else ([], {"ORKEON_BARE": "1"})
    done = dev_spec(tmp_path, ws, doc, *args, env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["bare"] is True
    assert result["budget"]["limit_seconds"] == 1800  # the built-in crew's, no user setting
    assert CREW_MARK not in analyst_sent(ws, result)
    assert AGENTS_MARK not in analyst_sent(ws, result)
    assert {p.name for p in marks.iterdir()} == {"inputs-hook", "plugin-hook"}
    data = Path((marks / "plugin-hook").read_text())  # a new folder, gone after the run
    assert tmp_path / "config" not in data.parents and not data.exists()
    state = json.loads((ws / ".orkeon" / "runs" / result["run_id"] / "state.json").read_text())
    assert state["bare"] is True  # a --resume of it stays bare (docs/output.md, state.json)
    dry = dev_spec(tmp_path, ws, doc, "--dry-run", *args, env=env)
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    commands = " ".join(h["command"] for h in plan["hooks"])
    assert plan["bare"] is True and "inputs-hook" in commands and "plugin-hook" in commands
    assert "user-hook" not in commands and "ws-hook" not in commands
    listed = orkeon("hooks", "list", "--inputs", json.dumps(doc), "--workspace",
                    str(ws), env=environ(tmp_path, ORKEON_BARE="1"), cwd=tmp_path)  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "inputs-hook" in listed.stdout and "user-hook" not in listed.stdout


BROKEN = {
    "user settings": ("config/settings.json", "{not json"),
    "workspace settings": ("ws/.orkeon/settings.json", "{not json"),
    "workspace .mcp.json": ("ws/.mcp.json", "{not json"),
    "workspace crew": ("ws/.orkeon/crews/dev-spec.toml", "step = [not toml"),
}


@pytest.mark.parametrize("which", list(BROKEN))
def test_a_bare_run_does_not_even_read_the_files(tmp_path: Path, which: str) -> None:
    """docs/inputs.md: a bare run does not read those files: a broken one, which stops a
    normal run (exit 2, naming it), does not matter to it. The trust records are broken
    too: the variable trusts the project's files instead, so a normal run reads them."""
    _, _, marks, doc = setup(tmp_path)
    ws = tmp_path / "ws"
    rel, text = BROKEN[which]
    (tmp_path / rel).write_text(text)
    (tmp_path / "config" / "trusted.json").write_text("{not json")
    trust_env = {"ORKEON_TRUST_PROJECT_HOOKS": "1"}
    normal = dev_spec(tmp_path, ws, doc, env=trust_env)
    assert normal.returncode == 2
    assert f"{tmp_path / rel}: not " in normal.stderr, normal.stderr
    bare = dev_spec(tmp_path, ws, doc, "--bare", env=trust_env)
    assert bare.returncode == 0, bare.stderr
    assert json.loads(bare.stdout)["bare"] is True
    assert {p.name for p in marks.iterdir()} == {"inputs-hook", "plugin-hook"}


def test_validate_bare_lists_what_a_normal_run_would_read(tmp_path: Path) -> None:
    """docs/inputs.md: "`orkeon validate --bare` lists what a normal run would have read:
    each file, whether it exists and whether it is trusted", in text and in JSON."""
    ws, cfg, _, doc = setup(tmp_path)
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    base = ["validate", "--bare", "--inputs", json.dumps(doc), "--workspace", str(ws)]
    text = orkeon(*base, cwd=tmp_path)
    assert text.returncode == 0, text.stderr  # no server of the user's or the project's
    lines = text.stdout.splitlines()
    assert f"  user settings: {cfg / 'settings.json'} (exists)" in lines
    assert f"  trust records: {cfg / 'trusted.json'} (exists)" in lines
    assert f"  workspace settings: {ws / '.orkeon' / 'settings.json'} (exists, trusted)" in lines
    assert f"  workspace .mcp.json: {ws / '.mcp.json'} (exists, not trusted)" in lines  # changed
    assert f"  workspace crews: {ws / '.orkeon' / 'crews'} (exists, trusted)" in lines
    assert f"  workspace review checks: {ws / '.orkeon' / 'checks'} (missing)" in lines
    assert f"  instruction file: {ws / 'AGENTS.md'} (exists, trusted)" in lines
    assert lines[-1] == "inputs are valid"

    as_json = orkeon(
        *base, "--output", "json", env=environ(tmp_path, ORKEON_BARE="true"), cwd=tmp_path
    )
    assert as_json.returncode == 0, as_json.stderr
    doc_out = json.loads(as_json.stdout)
    assert doc_out["valid"] is True and doc_out["bare"] is True
    by_kind = {e["kind"]: e for e in doc_out["not_read"]}
    assert by_kind["workspace .mcp.json"] == {
        "kind": "workspace .mcp.json", "path": str(ws / ".mcp.json"), "exists": True,
        "trusted": False,
    }  # fmt: skip
    assert by_kind["user settings"]["trusted"] is None  # a user file needs no trust
    assert by_kind["workspace review checks"]["exists"] is False
    normal = orkeon("validate", "--inputs", json.dumps(doc), "--output", "json",
                    "--workspace", str(ws), cwd=tmp_path)  # fmt: skip
    assert (
        normal.returncode == 2
    )  # the user's server cannot start (the changed .mcp.json: untrusted)
    (tmp_path / "config" / "settings.json").write_text("{}")
    normal = orkeon("validate", "--inputs", json.dumps(doc), "--output", "json",
                    "--workspace", str(ws), cwd=tmp_path)  # fmt: skip
    assert normal.returncode == 0, normal.stderr
    given = "instructions: AGENTS.md: trusted, given to every role"
    assert json.loads(normal.stdout) == {"valid": True, "bare": False, "lines": [given]}
    assert doc_out["lines"] == []  # the bare check read no instruction file


@pytest.mark.parametrize("value", ["yes", "2", "on"])
def test_orkeon_bare_must_be_a_boolean(tmp_path: Path, value: str) -> None:
    """docs/inputs.md: ORKEON_BARE takes 1, true, 0 or false; another value is exit 2
    naming it, nothing run."""
    ws, _, marks, doc = setup(tmp_path)
    done = dev_spec(tmp_path, ws, doc, env={"ORKEON_BARE": value})
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith(f"environment variable ORKEON_BARE: must be 0, 1, true or false, not {value!r}")
    )
    assert "Traceback" not in done.stderr
    assert list(marks.iterdir()) == [] and not (ws / ".orkeon" / "runs").exists()


def test_jobs_run_bare_makes_every_job_bare(tmp_path: Path) -> None:
    """docs/inputs.md: `orkeon jobs run` and `jobs validate` take `--bare` too: each job is
    a bare run (a broken user file, which stops a normal check, is not read)."""
    ws, cfg, marks, doc = setup(tmp_path)
    jobs = tmp_path / "jobs.jsonl"
    job = {"id": "one", "step": "dev-spec", "workspace": str(ws), "inputs": doc}
    jobs.write_text(json.dumps(job) + "\n")
    (cfg / "settings.json").write_text("{not json")
    normal = orkeon("jobs", "validate", str(jobs), cwd=tmp_path)
    assert normal.returncode == 2 and f"{cfg / 'settings.json'}: not JSON" in normal.stderr
    checked = orkeon("jobs", "validate", str(jobs), "--bare", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    out = tmp_path / "out"
    done = orkeon("jobs", "run", str(jobs), "--out", str(out), "--bare", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "one" / "result.json").read_text())["bare"] is True
    assert {p.name for p in marks.iterdir()} == {"inputs-hook", "plugin-hook"}


def test_a_resumed_bare_run_stays_bare(tmp_path: Path) -> None:
    """docs/output.md (state.json): "a bare run: `bare: true`; its `--resume` is bare too,
    `--bare` given again or not". The first attempt's turn runs out before the writer
    starts; the resume, without --bare, runs the writer with the inputs' hooks only."""
    ws, _, marks, doc = setup(tmp_path)
    first = dev_spec(tmp_path, ws, {**doc, "budget": {"turns": 1}}, "--bare")
    assert first.returncode == 3, first.stderr
    assert list(marks.iterdir()) == []  # the writer did not start
    rd = ws / ".orkeon" / "runs" / json.loads(first.stdout)["run_id"]
    again = orkeon(
        "run",
        "dev-spec",
        "--resume",
        str(rd),
        "--max-turns",
        "10",
        "--output",
        "json",
        cwd=tmp_path,
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["bare"] is True
    assert {p.name for p in marks.iterdir()} == {"inputs-hook", "plugin-hook"}


def test_a_bare_pipeline_runs_every_step_bare(tmp_path: Path) -> None:
    """docs/inputs.md: `--bare` on `orkeon run pipeline` holds for each step it runs (each
    prepared on its own, steps/chain.py): no step reads the user's or the project's hooks."""
    ws, _, marks, doc = setup(tmp_path)
    piped = pipeline_doc(hooks=doc["hooks"], plugins=doc["plugins"])
    done = orkeon(
        "run", "pipeline", "--workspace", str(ws), "--output", "json",
        "--progress", "none", "--bare", "--inputs", json.dumps(piped), cwd=tmp_path
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["bare"] is True and all(s["bare"] is True for s in result["steps"])
    assert {p.name for p in marks.iterdir()} == {"inputs-hook", "plugin-hook"}


def test_a_bare_review_reads_no_check_files(tmp_path: Path) -> None:
    """docs/inputs.md: the workspace's review checks in `.orkeon/checks/` are not read by a
    bare run: a broken one stops a normal check of a review (exit 2), not a bare one."""
    ws, _, _, doc = setup(tmp_path)
    (ws / ".orkeon" / "checks").mkdir()
    (ws / ".orkeon" / "checks" / "broken.md").write_text("no front matter\n")
    review = {"uncommitted": True, "checks": [{"name": "style", "instructions": "be brief"}]}
    given = json.dumps({"model": doc["model"], "review": review})
    base = ["validate", "--step", "review", "--workspace", str(ws), "--inputs", given]
    trust_env = {"ORKEON_TRUST_PROJECT_HOOKS": "1"}
    normal = orkeon(*base, env=environ(tmp_path, **trust_env), cwd=tmp_path)
    assert normal.returncode == 2 and "broken.md: no front matter" in normal.stderr
    bare = orkeon(*base, "--bare", env=environ(tmp_path, **trust_env), cwd=tmp_path)
    assert bare.returncode == 0, bare.stderr
