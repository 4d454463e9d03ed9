"""`--patch FILE` through the command line with the scripted model (docs/output.md, "The
patch"): "writes the run's changes as a git binary patch against the commit the run
started from, with a manifest"; "a hit fails the step: exit 1, `error.kind` "audit", the
path and the rule named, the secret itself never printed; no FILE is written"; "a `patch`
inside the workspace's guards, on a step that writes none, or in a workspace that is no
git repository with a commit is exit 2, nothing run" (docs/inputs.md, "patch")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kit import git
from kit.cli import clean_environment, orkeon, pipeline_doc, run_json
from kit.steps import make_workspace, scripted, write

from orkeon_run.run import patchfile

FILES = {"README.md": "# demo\n", "src/a.py": "a = 1\n", "src/old.txt": "to go\n"}
# A string detect-secrets' AWS plugin finds (AWS's own documented example key id).
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
# A value orkeon's redactor knows (a credential-like variable of its environment) that no
# detector of detect-secrets would find: only the redactor can name it.
TOKEN = "plainword-plainword-plainword"


def plan(roots: list[str]) -> dict[str, Any]:
    return {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": roots, "task": "t"}]}]}


def inputs(calls: list[dict[str, Any]], roots: list[str] | None = None) -> dict[str, Any]:
    script = {"b1/api": [{"tool_calls": calls}, {"text": "done"}]}
    shell = {"extra_allowed_commands": ["rm"]}
    return scripted(script, plan=plan(roots or ["src/"]), shell=shell)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clean_environment(tmp_path, monkeypatch)
    return make_workspace(tmp_path, FILES)


def test_the_patch_holds_the_change_against_the_base_with_its_manifest(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = git(ws, "rev-parse", "HEAD").strip()
    calls = [
        write("src/a.py", "a = 2\n"),
        write("src/new.bin", "x\u0000\u0001y" * 40),  # a NUL: binary for git
        {"tool": "shell", "input": {"command": "rm src/old.txt"}},
    ]
    out = tmp_path / "change.patch"
    code, result, err = run_json(capsys, "dev-batches", ws, "--patch", str(out), doc=inputs(calls))
    assert code == 0, (result, err)
    pf = patchfile.parse(out.read_bytes())
    m = pf.manifest
    assert (m["base"], m["step"], m["run_id"], m["orkeon"]) == (
        base, "dev-batches", result["run_id"], "0.1.0"
    )  # fmt: skip
    by_path = {f["path"]: f for f in m["files"]}
    assert {p: f["status"] for p, f in by_path.items()} == {
        "src/a.py": "modified",
        "src/new.bin": "added",
        "src/old.txt": "deleted",
    }
    assert by_path["src/a.py"]["batch"] == "b1" and by_path["src/a.py"]["roles"] == ["b1/api"]
    assert by_path["src/a.py"]["sha256"] == patchfile.sha256(b"a = 2\n")
    assert by_path["src/old.txt"]["sha256"] is None
    assert m["patch_sha256"] == patchfile.sha256(pf.patch)
    assert b"GIT binary patch" in pf.patch and b"diff --git a/src/a.py b/src/a.py" in pf.patch
    assert result["patch"] == {
        "path": str(out), "base": base, "files": 3, "sha256": m["patch_sha256"]
    }  # fmt: skip


def test_a_patch_file_inside_the_workspace_is_not_part_of_the_change(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_json(
        capsys, "dev-batches", ws, "--patch", str(ws / "orkeon.patch"),
        doc=inputs([write("src/a.py", "a = 2\n")]),
    )  # fmt: skip
    assert code == 0, err
    assert patchfile.parse((ws / "orkeon.patch").read_bytes()).paths == ["src/a.py"]


@pytest.mark.parametrize(
    ("content", "rule"),
    [
        (f"key = '{AWS_KEY}'\n", "detect-secrets: AWS Access Key"),
        (f"t = {TOKEN}\n", "redactor value"),
    ],
    ids=["detect-secrets", "redactor"],
)
def test_a_secret_in_the_change_fails_the_step_and_is_never_printed(
    ws: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    content: str,
    rule: str,
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", TOKEN)
    out = tmp_path / "change.patch"
    out.write_text("a stale patch from before\n")
    calls = [write("src/a.py", "a = 2\n"), write("src/conf.py", "x = 1\n" + content)]
    code, result, err = run_json(capsys, "dev-batches", ws, "--patch", str(out), doc=inputs(calls))
    assert code == 1
    assert result["status"] == "failed" and result["error"]["kind"] == "audit"
    assert f"src/conf.py:2 ({rule})" in result["error"]["message"]
    assert "patch" not in result
    assert not out.exists()  # neither written nor the stale one left for the next job
    shown = json.dumps(result) + err
    assert AWS_KEY not in shown and TOKEN not in shown


def test_a_workflow_in_the_change_fails_the_step_as_a_guard(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "change.patch"
    calls = [write(".github/workflows/ci.yml", "on: push\n")]
    code, result, _ = run_json(
        capsys, "dev-batches", ws, "--patch", str(out), doc=inputs(calls, [".github/"])
    )
    assert code == 1 and result["error"]["kind"] == "audit"
    assert ".github/workflows/ci.yml (guard .github/workflows/)" in result["error"]["message"]
    assert not out.exists()


@pytest.mark.parametrize(
    "where", [".orkeon/hooks/p.patch", ".git/p.patch", ".orkeon/runs/p.patch", ".mcp.json"]
)
def test_a_patch_path_inside_the_guards_is_bad_input_and_nothing_runs(
    ws: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    (ws / where).parent.mkdir(parents=True, exist_ok=True)
    code, out, err = orkeon(
        capsys, "run", "dev-batches", "--workspace", str(ws), "--progress", "none",
        "--inputs", json.dumps(inputs([write("src/a.py", "a = 2\n")])), "--patch", str(ws / where),
    )  # fmt: skip
    assert code == 2 and out == ""
    assert err.startswith("orkeon: patch: ") and "inside the workspace's guards" in err
    assert not (ws / ".orkeon" / "runs").exists() or not any((ws / ".orkeon" / "runs").iterdir())
    assert (ws / "src" / "a.py").read_text() == "a = 1\n"


def test_patch_outside_a_git_repository_or_on_another_step_is_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clean_environment(tmp_path, monkeypatch)
    plain = make_workspace(tmp_path, FILES, git=False)
    doc = json.dumps(inputs([write("src/a.py", "a = 2\n")]))
    argv = ["--progress", "none", "--inputs", doc, "--patch", str(tmp_path / "p.patch")]
    code, _, err = orkeon(capsys, "run", "dev-batches", "--workspace", str(plain), *argv)
    assert code == 2 and "patch: the workspace is not a git repository" in err
    git(plain, "init", "-q")
    code, _, err = orkeon(capsys, "run", "dev-batches", "--workspace", str(plain), *argv)
    assert code == 2 and "patch: the workspace is not a git repository with a commit" in err
    code, _, err = orkeon(capsys, "run", "task", "--workspace", str(plain), *argv)
    assert code == 2 and "patch: only dev-batches, tasks-repair, pipeline write a patch" in err
    assert (plain / "src" / "a.py").read_text() == "a = 1\n"


def test_a_pipeline_writes_one_patch_of_all_its_batches(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The spec and plan under .orkeon/ are orkeon's own outputs, not the patch's."""
    out = tmp_path / "change.patch"
    code, result, err = run_json(capsys, "pipeline", ws, "--patch", str(out), doc=pipeline_doc())
    assert code == 0, (result, err)
    files = patchfile.parse(out.read_bytes()).manifest["files"]
    assert [(f["path"], f["batch"], f["roles"]) for f in files] == [
        ("docs/x.md", "b2", ["b2/docs"]),
        ("src/hello.txt", "b1", ["b1/api"]),
    ]
    assert result["patch"]["files"] == 2
    assert all("patch" not in s for s in result["steps"])  # its steps wrote none


def test_a_repair_writes_the_patch_of_the_repaired_change(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tasks-repair: the patch is made against the commit the repair started from, its
    files attributed to the repaired role."""
    test = ["grep", "-q", "42", "src/a.py"]
    doc = inputs([write("src/a.py", "a = 41\n")])
    first = tmp_path / "first"
    code, _, _ = run_json(capsys, "dev-batches", ws, "--run-dir", str(first),
                          doc={**doc, "audit": {"test": test}})  # fmt: skip
    assert code == 1
    fix = scripted({"b1/api": [{"tool_calls": [write("src/a.py", "a = 42\n")]}, {"text": "ok"}]})
    out = tmp_path / "repair.patch"
    code, result, err = run_json(
        capsys, "tasks-repair", ws, "--patch", str(out),
        doc={**fix, "repair": {"run": str(first), "role": "b1/api"}},
    )  # fmt: skip
    assert code == 0, (result, err)
    (f,) = patchfile.parse(out.read_bytes()).manifest["files"]
    assert (f["path"], f["batch"], f["roles"]) == ("src/a.py", "b1", ["b1/api"])
    assert f["sha256"] == patchfile.sha256(b"a = 42\n")
