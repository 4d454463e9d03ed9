"""`orkeon apply FILE [--workspace DIR]` (docs/output.md, "The patch"): "checks the
manifest's digests (the patch's and each file's) and its base (HEAD must be the base
commit), refuses guard paths and any path outside what the manifest lists, then applies it
with `git apply --index`"; "exit 0 applied, 1 refused (what and why; nothing applied), 2
bad input". The patches are written by `orkeon run dev-batches --patch` with the scripted
model and applied in a second clone, as the two-job recipe of docs/ci.md does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kit import git
from kit.cli import clean_environment, orkeon, run_json
from kit.steps import make_workspace, scripted, write

from orkeon_run import gitpatch
from orkeon_run.run import patchfile

FILES = {"README.md": "# demo\n", "src/a.py": "a = 1\n"}
BINARY = "x\u0000\u0001y\u00ff" * 40  # a NUL: a binary file for git


@pytest.fixture
def made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, Path, Path]:
    """A run's patch (`orkeon run dev-batches --patch`), the workspace it ran in and a
    second clone of that workspace at the base."""
    clean_environment(tmp_path, monkeypatch)
    ws = make_workspace(tmp_path, FILES)
    calls = [write("src/a.py", "a = 2\n"), write("src/data.bin", BINARY)]
    script = {"b1/api": [{"tool_calls": calls}, {"text": "done"}]}
    plan = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]}
    out = tmp_path / "orkeon.patch"
    code, result, err = run_json(
        capsys, "dev-batches", ws, "--patch", str(out), doc=scripted(script, plan=plan)
    )
    assert code == 0, (result, err)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(ws), str(clone))
    return out, ws, clone


def apply(capsys: pytest.CaptureFixture[str], patch: Path, clone: Path) -> tuple[int, str, str]:
    return orkeon(capsys, "apply", str(patch), "--workspace", str(clone))


def untouched(clone: Path) -> bool:
    return git(clone, "status", "--porcelain") == ""


def test_a_patch_round_trips_into_a_second_clone_binary_file_included(
    made: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    patch, ws, clone = made
    code, out, err = apply(capsys, patch, clone)
    assert code == 0, err
    assert out.startswith("orkeon apply: applied 2 files from ")
    for rel in ("src/a.py", "src/data.bin"):
        assert (clone / rel).read_bytes() == (ws / rel).read_bytes()
    # Applied to the index too (`git apply --index`): the second job commits it as it is.
    assert git(clone, "status", "--porcelain").splitlines() == ["M  src/a.py", "A  src/data.bin"]


def test_a_patch_changed_after_it_was_written_is_refused(
    made: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    patch, _, clone = made
    patch.write_bytes(patch.read_bytes().replace(b"+a = 2", b"+a = 9"))
    code, out, err = apply(capsys, patch, clone)
    assert (code, out) == (1, "")
    assert "refused: the patch's SHA-256 is not the manifest's" in err
    assert untouched(clone)


def test_a_file_whose_content_is_not_the_manifests_is_refused(
    made: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The patch and its digest changed together: the file's own digest still tells."""
    patch, _, clone = made
    pf = patchfile.parse(patch.read_bytes())
    changed = pf.patch.replace(b"+a = 2", b"+a = 9")
    blob = gitpatch.blob_id(b"a = 2\n")
    changed = changed.replace(blob.encode(), gitpatch.blob_id(b"a = 9\n").encode())
    manifest = {k: v for k, v in pf.manifest.items() if k not in ("format", "version")}
    patch.write_bytes(patchfile.render(manifest, changed))
    code, _, err = apply(capsys, patch, clone)
    assert code == 1
    assert "refused: src/a.py: its new content is not the manifest's" in err
    assert untouched(clone)


def test_a_workspace_whose_head_is_not_the_base_is_refused(
    made: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    patch, _, clone = made
    (clone / "README.md").write_text("# moved on\n")
    git(clone, "commit", "-qam", "later")
    code, _, err = apply(capsys, patch, clone)
    assert code == 1
    base = patchfile.parse(patch.read_bytes()).manifest["base"]
    assert f"the patch's base is {base}" in err
    assert untouched(clone)


def hand_made(
    tmp_path: Path, base: str, changes: list[gitpatch.FileChange], listed: list[str]
) -> Path:
    """A patch file as an attacker would write it: `changes` in the patch, `listed` in
    the manifest, every digest right."""
    files: list[dict[str, Any]] = []
    for c in changes:
        if c.path in listed:
            files.append(
                {"path": c.path, "status": "added", "batch": None, "roles": [], "mode": c.mode,
                 "sha256": patchfile.sha256(c.after or b""), "blob": gitpatch.blob_id(c.after)}
            )  # fmt: skip
    manifest = {
        "orkeon": "0.1.0",
        "run_id": "x",
        "step": "dev-batches",
        "base": base,
        "files": files,
    }
    out = tmp_path / "hand.patch"
    out.write_bytes(patchfile.render(manifest, gitpatch.patch(changes).encode()))
    return out


def test_a_patch_touching_github_workflows_is_refused(
    made: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, clone = made
    base = git(clone, "rev-parse", "HEAD").strip()
    flow = gitpatch.FileChange(".github/workflows/x.yml", None, b"on: push\n")
    patch = hand_made(tmp_path, base, [flow], [flow.path])
    code, _, err = apply(capsys, patch, clone)
    assert code == 1
    assert "refused: .github/workflows/x.yml: a guard (.github/workflows/)" in err
    assert untouched(clone) and not (clone / ".github").exists()


def test_a_path_outside_the_manifest_is_refused(
    made: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, clone = made
    base = git(clone, "rev-parse", "HEAD").strip()
    listed = gitpatch.FileChange("src/ok.py", None, b"ok = 1\n")
    extra = gitpatch.FileChange("src/extra.py", None, b"import os\n")
    patch = hand_made(tmp_path, base, [listed, extra], [listed.path])
    code, _, err = apply(capsys, patch, clone)
    assert code == 1
    assert "refused: src/extra.py: changed by the patch, not listed in its manifest" in err
    assert untouched(clone)


def test_bad_input_is_exit_2_naming_it(
    made: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    patch, _, clone = made
    code, _, err = apply(capsys, tmp_path / "missing.patch", clone)
    assert code == 2 and err.startswith("orkeon: FILE: cannot read ")
    plain = tmp_path / "plain.patch"
    plain.write_text("diff --git a/x b/x\n")
    code, _, err = apply(capsys, plain, clone)
    assert code == 2 and "not an orkeon patch" in err and "Traceback" not in err
    broken = tmp_path / "broken.patch"
    broken.write_bytes(patchfile.MAGIC + json.dumps({"format": "orkeon-patch"}).encode() + b"\n\n")
    code, _, err = apply(capsys, broken, clone)
    assert code == 2 and "manifest.version" in err
    nogit = tmp_path / "nogit"
    nogit.mkdir()
    code, _, err = apply(capsys, patch, nogit)
    assert code == 2 and err.startswith("orkeon: --workspace: ")
    assert err.count("\n") == 1


def test_a_workspace_in_a_folder_of_its_repository_round_trips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The manifest's paths are the workspace's; `orkeon apply --workspace` of the same
    folder in another clone puts them there."""
    clean_environment(tmp_path, monkeypatch)
    repo = make_workspace(tmp_path, {"top.txt": "top\n", "app/src/a.py": "a = 1\n"})
    script = {"b1/api": [{"tool_calls": [write("src/a.py", "a = 2\n")]}, {"text": "done"}]}
    plan = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]}
    out = tmp_path / "app.patch"
    code, _, err = run_json(
        capsys, "dev-batches", repo / "app", "--patch", str(out), doc=scripted(script, plan=plan)
    )
    assert code == 0, err
    assert patchfile.parse(out.read_bytes()).paths == ["src/a.py"]
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    code, out_text, err = apply(capsys, out, clone / "app")
    assert code == 0, err
    assert out_text.startswith("orkeon apply: applied 1 file from ")
    assert git(clone, "status", "--porcelain").splitlines() == ["M  app/src/a.py"]
