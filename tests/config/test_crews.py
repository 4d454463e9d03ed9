"""Crews as data (crew.py, crews/): the built-in crews, workspace overrides, bad files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kit import ROOT

from orkeon_run.config import crews as crew_mod
from orkeon_run.config.crews import Crew, load_crew
from orkeon_run.config.trust import record_crews_trust
from orkeon_run.errors import InputError
from orkeon_run.policy.words import split_command
from orkeon_run.run.steps import crew_steps, step_module

CREW_STEPS = crew_steps()


@pytest.mark.parametrize("step", CREW_STEPS)
def test_builtin_crews_load(step: str) -> None:
    crew = load_crew(step)
    assert crew.step == step
    assert crew.source == ROOT / "crews" / f"{step}.toml"
    for name in step_module(step).ROLES:
        assert crew.role(name).tools
        assert len(crew.system_prompt(name)) > 200


def test_dev_spec_roles_and_rule_sets() -> None:
    """docs/inputs.md: "dev-spec `analyst` then `writer`"; the issue: "its rule sets let
    it read anywhere in the workspace and write only the spec"."""
    crew = load_crew("dev-spec")
    assert [r.name for r in crew.roles] == ["analyst", "writer"]
    paths = {"spec": "docs/the spec.md"}
    (writer,) = crew.rule_sets_for("writer", paths)
    assert writer.refusal("file_write", ["docs/the spec.md"]) is None
    assert writer.refusal("file_edit", ["docs/the spec.md"]) is None
    assert writer.refusal("file_read", ["src/deep/x.py"]) is None
    assert writer.refusal("file_write", ["src/x.py"]) is not None
    assert writer.refusal("file_write", ["other/docs/the spec.md"]) is not None
    assert writer.refusal("shell", ["touch x"]) is not None
    (analyst,) = crew.rule_sets_for("analyst", paths)
    assert analyst.refusal("file_read", ["a/b.txt"]) is None
    assert analyst.refusal("file_write", ["docs/the spec.md"]) is not None


def test_placeholders_in_prompts() -> None:
    crew = load_crew("dev-batches")
    text = crew.system_prompt("worker", {"role": "api", "batch": "b1", "roots": "src/api/"})
    assert "role `api` of batch `b1`" in text
    assert "only under your roots: src/api/." in text
    assert "${" not in text


def test_path_glob_escapes_glob_characters() -> None:
    assert crew_mod.path_glob("a[1]/x*.md") == r"/a\[1\]/x\*.md"
    assert crew_mod.path_glob(".orkeon/spec.md") == "/.orkeon/spec.md"


def test_schema_is_the_models() -> None:
    from orkeon_run.commands.schema import schema

    s = schema("crew")
    model = Crew.model_json_schema()
    # `step` lists the steps with a crew, from the step registry (config/ sits below it).
    assert s["properties"].pop("step")["enum"] == list(CREW_STEPS)
    assert model["properties"].pop("step")["type"] == "string"
    assert s == model
    assert s["additionalProperties"] is False
    assert set(s["properties"]) == {"description", "budget", "roles", "rule_sets"}
    json.dumps(s)


@pytest.fixture(autouse=True)
def _config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trust is recorded in a config folder of the test's own."""
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("ORKEON_TRUST_PROJECT_HOOKS", raising=False)


def write_override(ws: Path, step: str, text: str, *, trust: bool = True) -> Path:
    """Write a workspace crew file; trust the workspace's crews as they now are."""
    folder = ws / ".orkeon" / "crews"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{step}.toml"
    path.write_text(text)
    if trust:
        record_crews_trust(ws)
    return path


PLANNER = """
step = "dev-plan"
[budget]
seconds = 60
[[roles]]
name = "planner"
prompt = "{prompt}"
tools = ["file_read", "file_write"]
"""


def test_workspace_override_with_builtin_prompt(tmp_path: Path) -> None:
    path = write_override(tmp_path, "dev-plan", PLANNER.format(prompt="prompts/planner.md"))
    crew = load_crew("dev-plan", tmp_path)
    assert crew.source == path
    assert crew.budget.seconds == 60
    assert crew.role("planner").tools == ["file_read", "file_write"]
    assert crew.rule_sets == []
    assert "planner of a dev-plan step" in crew.system_prompt("planner")


def test_workspace_override_with_its_own_prompt(tmp_path: Path) -> None:
    (tmp_path / ".orkeon" / "crews").mkdir(parents=True)
    (tmp_path / ".orkeon" / "crews" / "mine.md").write_text("Plan ${spec} quickly.")
    write_override(tmp_path, "dev-plan", PLANNER.format(prompt="mine.md"))
    crew = load_crew("dev-plan", tmp_path)
    assert crew.system_prompt("planner", {"spec": "s.md"}).startswith("Plan s.md quickly.\n\n")
    # Another step of the same workspace keeps its built-in crew.
    assert load_crew("dev-spec", tmp_path).source == ROOT / "crews" / "dev-spec.toml"


BAD = [
    ('step = "dev-plan"\nextra = 1\n', "extra: unknown key"),
    ('step = "dev-plan"\n[[roles]]\nname = "planner"\nprompt = "p.md"\ntools = ["rm"]\n',
     "roles[0].tools[0]: unknown tool 'rm'"),
    ('step = "dev-plan"\n[[roles]]\nname = "other"\nprompt = "prompts/planner.md"\n'
     'tools = ["file_read"]\n', "roles: the dev-plan crew needs a role named planner"),
    (PLANNER.format(prompt="prompts/planner.md")
     + '[[rule_sets]]\nname = "r"\ndeny = ["rm(x)"]\n', "rule_sets[0].deny[0]: unknown tool 'rm'"),
    (PLANNER.format(prompt="nowhere.md"), "roles[0].prompt: no such file: nowhere.md"),
    (PLANNER.format(prompt="prompts/planner.md").replace("dev-plan", "dev-spec"),
     "step: is 'dev-spec', expected 'dev-plan'"),
    ('step = "dev-plan"\nroles = [', "not TOML"),
    (PLANNER.format(prompt="prompts/planner.md") + "[budget2]\n", "budget2: unknown key"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), BAD)
def test_bad_crew_file_names_the_file_and_field(tmp_path: Path, text: str, expected: str) -> None:
    path = write_override(tmp_path, "dev-plan", text)
    with pytest.raises(InputError) as info:
        load_crew("dev-plan", tmp_path, roles=step_module("dev-plan").ROLES)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert expected in message


def test_crew_for_another_step_is_refused(tmp_path: Path) -> None:
    crews = tmp_path / ".orkeon" / "crews"
    crews.mkdir(parents=True)
    shutil.copy(ROOT / "crews" / "dev-spec.toml", crews / "dev-plan.toml")
    record_crews_trust(tmp_path)
    with pytest.raises(
        InputError, match=r"dev-plan.toml: step: is 'dev-spec', expected 'dev-plan'"
    ):
        load_crew("dev-plan", tmp_path)


def test_installed_layout_finds_the_packaged_crews(tmp_path: Path) -> None:
    """pyproject force-includes crews/ as orkeon_run/crews in the wheel: the loader must find
    them there when no checkout's crews/ sits beside the package."""
    site = tmp_path / "site"
    shutil.copytree(
        ROOT / "orkeon_run", site / "orkeon_run", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(ROOT / "crews", site / "orkeon_run" / "crews")
    code = "from orkeon_run.config.crews import load_crew; print(load_crew('dev-batches').source)"
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(site / "orkeon_run" / "crews" / "dev-batches.toml")


def test_every_role_is_told_hook_context_is_untrusted(tmp_path):
    """The OrbCode page: "The system prompt tells the model to treat the contents as
    untrusted" — for every role of every built-in crew, and for a workspace's own crew."""
    for step in CREW_STEPS:
        crew = load_crew(step, tmp_path)
        for role in crew.roles:
            prompt = crew.system_prompt(role.name, {})
            assert prompt.endswith(crew_mod.HOOK_CONTEXT_NOTE), (step, role.name)
            assert "<hook_context>" in prompt


def test_an_untrusted_workspace_crew_is_skipped(tmp_path: Path, capsys) -> None:
    """A cloned repository must not widen what the model may do: its own crew file runs only
    once trusted, and trust is asked again when any file under .orkeon/crews/ changes."""
    override = write_override(tmp_path, "dev-plan", PLANNER.format(prompt="mine.md"), trust=False)
    (override.parent / "mine.md").write_text("Plan quickly.")
    assert load_crew("dev-plan", tmp_path).system_prompt("planner").startswith("You are")
    assert "crews are not trusted and were skipped" in capsys.readouterr().err
    record_crews_trust(tmp_path)
    assert load_crew("dev-plan", tmp_path).system_prompt("planner").startswith("Plan quickly.")
    (override.parent / "mine.md").write_text("Plan slowly.")  # a change drops the trust
    assert load_crew("dev-plan", tmp_path).system_prompt("planner").startswith("You are")


# Commands an adversarial review ran through the base list's `git` and `sort`: each runs a
# program of the model's choosing, or hides a change from the audit.
RUNS_A_PROGRAM = [
    "git --no-pager -c alias.x=!touch x x",
    "git -p -c core.pager=sh log",
    "git --git-dir=.git config alias.w !touch",
    "git --config-env=core.pager=CMD log",
    "git --exec-path=src sh -c touch",
    "git ls-remote --upload-pack=touch .",
    "git ls-remote -u touch .",
    "git fetch --upload-pack=touch origin",
    "git grep --open-files-in-pager=touch hi",
    "git grep -Otouch hi",
    "git replace HEAD^{tree} abc",
    "git update-index --assume-unchanged README.md",
    "sort --compress-program=sh -S 1k src/cmds",
]


@pytest.mark.parametrize("step, role", [("dev-batches", "worker"), ("tasks-repair", "repairer")])
@pytest.mark.parametrize("command", RUNS_A_PROGRAM)
def test_the_batch_crews_deny_git_and_sort_options_that_run_programs(
    step: str, role: str, command: str
) -> None:
    rule_sets = load_crew(step).rule_sets_for(role, {"plan": ".orkeon/plan.json"})
    argv = split_command(command)
    assert any(rs.refusal("shell", [command], argv) is not None for rs in rule_sets), command


@pytest.mark.parametrize(
    "command", ["git status", "git diff --stat", "git grep -c foo", "git log -p", "sort -u a.txt"]
)
def test_the_batch_crews_still_allow_everyday_git_and_sort(command: str) -> None:
    rule_sets = load_crew("dev-batches").rule_sets_for("worker", {"plan": ".orkeon/plan.json"})
    argv = split_command(command)
    assert all(rs.refusal("shell", [command], argv) is None for rs in rule_sets), command
