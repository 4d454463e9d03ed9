"""The composite action (`action.yml`), its shell steps run here as GitHub's runner runs
them: `bash --noprofile --norc -eo pipefail SCRIPT`, each step with fresh
`$GITHUB_OUTPUT` and `$GITHUB_STEP_SUMMARY` files, `${{ inputs.* }}` and
`${{ steps.*.outputs.* }}` substituted (any other expression fails the test).

The install step really runs (a virtual environment, `pip install "$GITHUB_ACTION_PATH"`),
offline: pip may not use an index, and orkeon's dependencies and its build backend come
from the test's own environment through PYTHONPATH, as PyPI would give them on a runner.
That takes seconds, so the module installs once."""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest
from kit import GIT_ENV, ROOT
from kit.fakes.github_api import GitHubFake
from kit.report import hook_script, mixed_doc, read_outputs
from kit.steps import make_workspace

yaml = pytest.importorskip("yaml")

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def outputs(path: Path) -> dict[str, str]:
    return read_outputs(path.read_text()) if path.exists() else {}


class Runner:
    """Runs the action's `run:` steps in order, as GitHub's runner would."""

    def __init__(self, tmp: Path, inputs: dict[str, str], env: dict[str, str]) -> None:
        self.tmp, self.env = tmp, env
        declared = ACTION["inputs"]
        assert set(inputs) <= set(declared), set(inputs) - set(declared)
        self.inputs = {
            k: inputs.get(k, str(spec.get("default", ""))) for k, spec in declared.items()
        }
        self.steps: dict[str, dict[str, str]] = {}
        self.summaries: list[str] = []

    def value(self, text: str) -> str:
        def one(m: re.Match[str]) -> str:
            expr = m.group(1)
            if expr.startswith("inputs."):
                return self.inputs[expr.removeprefix("inputs.")]
            found = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
            assert found, f"the test knows no expression {expr!r}"
            return self.steps.get(found.group(1), {}).get(found.group(2), "")

        return EXPR.sub(one, text)

    def run(self, *ids: str) -> int:
        """Run these `run:` steps, in the action's order, until one fails; its code."""
        code = 0
        assert set(ids) <= {s.get("id") for s in ACTION["runs"]["steps"]}
        for n, step in enumerate(ACTION["runs"]["steps"]):
            if step.get("id") not in ids:
                continue
            out, summary = self.tmp / f"output-{n}", self.tmp / f"summary-{n}"
            script = self.tmp / f"step-{n}.sh"
            script.write_text(step["run"])
            env = {
                **self.env,
                **{k: self.value(str(v)) for k, v in (step.get("env") or {}).items()},
                "GITHUB_OUTPUT": str(out),
                "GITHUB_STEP_SUMMARY": str(summary),
                "GITHUB_ENV": str(self.tmp / f"env-{n}"),
                "GITHUB_PATH": str(self.tmp / f"path-{n}"),
            }
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=self.env["GITHUB_WORKSPACE"], env=env, capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            self.last = done
            self.steps[step.get("id", str(n))] = outputs(out)
            self.summaries.append(summary.read_text() if summary.exists() else "")
            code = done.returncode
            if code != 0:
                return code
        return code

    def outputs(self) -> dict[str, str]:
        return {name: self.value(spec["value"]) for name, spec in ACTION["outputs"].items()}


def deps_path() -> str:
    """The test environment's site-packages: orkeon's dependencies and hatchling."""
    return os.pathsep.join(site.getsitepackages())


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], str]:
    tmp = tmp_path_factory.mktemp("action")
    (tmp / "repo").mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp),
        "LANG": "C.UTF-8",
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_WORKSPACE": str(tmp / "repo"),
        "RUNNER_TEMP": str(tmp / "runner-temp"),
        "PYTHONPATH": deps_path(),
        "PIP_NO_INDEX": "1",
        "PIP_NO_BUILD_ISOLATION": "0",  # pip's spelling of --no-build-isolation
        "ORKEON_CONFIG_DIR": str(tmp / "config"),
        "ORKEON_LOG_LEVEL": "error",
        **GIT_ENV,
    }
    (tmp / "runner-temp").mkdir()
    runner = Runner(tmp, {"step": "dev-batches", "inputs": "{}", "python": sys.executable}, env)
    assert runner.run("key", "install") == 0, runner.last.stderr[-3000:]
    return tmp, env, runner.steps["install"]["orkeon"]


def test_the_action_declares_its_inputs_outputs_and_steps() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert {"step", "inputs", "workspace", "output", "upload-artifact"} <= set(ACTION["inputs"])
    assert set(ACTION["outputs"]) == {
        "status", "exit_code", "run_dir", "cost_usd", "output", "patch"
    }  # fmt: skip
    for step in ACTION["runs"]["steps"]:
        if "run" in step:
            assert step["shell"] == "bash"
            assert "${{" not in step["run"], "an input pasted into a script can become a command"
    cache, upload = [s for s in ACTION["runs"]["steps"] if "uses" in s]
    assert cache["uses"].startswith("actions/cache@")
    assert cache["with"] == {
        "path": "${{ steps.key.outputs.venv }}",
        "key": "${{ steps.key.outputs.key }}",
    }
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["with"]["path"] == "${{ steps.run.outputs.run_dir }}"
    assert upload["with"]["include-hidden-files"] is True  # the run is under .orkeon/
    assert upload["if"].startswith("always() && inputs.upload-artifact == 'true'")


@pytest.mark.slow
def test_the_action_runs_a_step_and_reports_it(
    installed: tuple[Path, dict[str, str], str], tmp_path: Path
) -> None:
    tmp, env, orkeon = installed
    assert orkeon == str(tmp / "runner-temp" / "orkeon-venv" / "bin" / "orkeon")
    repo = tmp_path / "repo"
    repo.mkdir()
    ws = make_workspace(
        repo, {"README.md": "# app\n", "src/a/__init__.py": "", "src/b/__init__.py": ""}
    )
    (repo / "ci").mkdir()
    (repo / "ci" / "inputs.json").write_text(json.dumps(mixed_doc(hook_script(tmp_path))))
    env = {**env, "GITHUB_WORKSPACE": str(repo)}
    runner = Runner(tmp_path, {"step": "dev-batches", "inputs": "@ci/inputs.json", "workspace": "ws",
                               "run-dir": "ws/.orkeon/runs/ci", "python": sys.executable}, env)  # fmt: skip
    runner.steps["install"] = {"orkeon": orkeon}  # installed once for the module
    code = runner.run("run")
    assert code == 1, runner.last.stderr[-3000:]
    rd = str(ws / ".orkeon" / "runs" / "ci")
    assert runner.outputs() == {
        "status": "failed",
        "exit_code": "1",
        "run_dir": rd,
        "cost_usd": "0.0",
        "output": "",  # a task's answer only
        "patch": "",  # with the input patch only
    }
    assert runner.summaries[-1].startswith("### ❌ orkeon `dev-batches`: failed (exit 1)")
    assert runner.last.stdout.startswith("dev-batches: failed (exit 1)")  # --output text
    assert (
        "::error title=orkeon dev-batches%3A the audit of batch b1 failed::" in runner.last.stderr
    )
    assert "::warning file=ws/secret/key.txt,title=" in runner.last.stderr
    assert json.loads((Path(rd) / "result.json").read_text())["status"] == "failed"


@pytest.mark.slow
def test_the_actions_patch_input_writes_the_patch_and_names_it(
    installed: tuple[Path, dict[str, str], str], tmp_path: Path
) -> None:
    """docs/ci.md, "A patch applied by another job": the agent job's step writes the patch
    (`patch`), and the output `patch` names it for the upload."""
    _, env, orkeon = installed
    repo = tmp_path / "repo"
    repo.mkdir()
    ws = make_workspace(repo, {"README.md": "# app\n", "src/a.py": "a = 1\n"})
    call = {"tool": "file_write", "input": {"file_path": "src/a.py", "content": "a = 2\n"}}
    doc = {
        "model": {"provider": "scripted", "script": {"b1/api": [{"tool_calls": [call]}, {"text": "ok"}]}},
        "plan": {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]},
    }  # fmt: skip
    env = {**env, "GITHUB_WORKSPACE": str(repo)}
    target = str(tmp_path / "runner-temp" / "orkeon.patch")
    runner = Runner(tmp_path, {"step": "dev-batches", "inputs": json.dumps(doc), "workspace": "ws",
                               "patch": target, "python": sys.executable}, env)  # fmt: skip
    runner.steps["install"] = {"orkeon": orkeon}
    (tmp_path / "runner-temp").mkdir()
    assert runner.run("run") == 0, runner.last.stderr[-3000:]
    assert runner.outputs()["patch"] == target
    assert b"diff --git a/src/a.py b/src/a.py" in Path(target).read_bytes()
    assert (ws / "src" / "a.py").read_text() == "a = 2\n"


def test_nothing_ran_is_exit_code_2_and_no_status(
    installed: tuple[Path, dict[str, str], str], tmp_path: Path
) -> None:
    _, env, orkeon = installed
    (tmp_path / "repo").mkdir()
    env = {**env, "GITHUB_WORKSPACE": str(tmp_path / "repo")}
    runner = Runner(tmp_path, {"step": "dev-batches", "inputs": '{"budget": 3}'}, env)
    runner.steps["install"] = {"orkeon": orkeon}
    assert runner.run("run") == 2
    assert runner.outputs() == {
        "status": "",
        "exit_code": "2",
        "run_dir": "",
        "cost_usd": "",
        "output": "",
        "patch": "",
    }
    assert runner.last.stderr.startswith("orkeon: ")


def test_an_old_python_is_refused_with_the_fix(tmp_path: Path) -> None:
    fake = tmp_path / "python-3.10"
    fake.write_text("#!/bin/sh\nexit 1\n")  # `sys.version_info < (3, 11)` answers 1
    fake.chmod(0o755)
    env = {
        "PATH": os.environ["PATH"],
        "GITHUB_WORKSPACE": str(tmp_path),
        "RUNNER_TEMP": str(tmp_path),
    }
    runner = Runner(tmp_path, {"step": "x", "inputs": "{}", "python": str(fake)}, env)
    assert runner.run("key", "install") == 2
    assert (
        "::error title=orkeon::" in runner.last.stdout
        and "actions/setup-python" in runner.last.stdout
    )


def userns_step(tmp: Path, key_value: str | None, sudo_exit: int) -> tuple[int, str, str]:
    """The action's user-namespace step as a hosted runner runs it, with the sysctl's file
    played by one in `tmp` (None: no such key, as on a kernel without AppArmor's switch)
    and `sudo` by a program that records its arguments. Exit code, stdout, sudo's log."""
    (step,) = [s for s in ACTION["runs"]["steps"] if s.get("id") == "userns"]
    key = tmp / "apparmor_restrict_unprivileged_userns"
    if key_value is not None:
        key.write_text(key_value)
    script = tmp / "userns.sh"
    real = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
    assert real in step["run"]
    script.write_text(step["run"].replace(real, str(key)))
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp / "sudo.log"
    sudo = bin_dir / "sudo"
    sudo.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexit {sudo_exit}\n')
    sudo.chmod(0o755)
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        env={"PATH": f"{bin_dir}:{os.environ['PATH']}"}, capture_output=True, text=True,
    )  # fmt: skip
    return done.returncode, done.stdout, log.read_text() if log.exists() else ""


def test_on_a_hosted_linux_runner_the_action_lets_the_sandbox_use_user_namespaces(
    tmp_path: Path,
) -> None:
    """ubuntu-24.04's AppArmor switch is lifted before orkeon runs; where it is off or
    missing nothing is touched; a sudo that fails is a warning, not a failed step."""
    (step,) = [s for s in ACTION["runs"]["steps"] if s.get("id") == "userns"]
    assert step["if"] == "runner.os == 'Linux' && runner.environment == 'github-hosted'"
    ids = [s.get("id") for s in ACTION["runs"]["steps"]]
    assert ids.index("userns") < ids.index("run")
    (tmp_path / "on").mkdir()
    code, out, sudo = userns_step(tmp_path / "on", "1\n", 0)
    assert (code, sudo) == (0, "-n sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0\n")
    assert "apparmor_restrict_unprivileged_userns=0" in out
    for name, value in (("off", "0\n"), ("missing", None)):
        (tmp_path / name).mkdir()
        assert userns_step(tmp_path / name, value, 0) == (0, "", "")
    (tmp_path / "refused").mkdir()
    code, out, _ = userns_step(tmp_path / "refused", "1\n", 1)
    assert code == 0 and out.startswith("::warning title=orkeon::could not allow user namespaces")


def test_a_warm_install_is_reused_and_a_broken_one_replaced(
    installed: tuple[Path, dict[str, str], str], tmp_path: Path
) -> None:
    """ "The action caches its install (keyed on orkeon's version and the Python version) so
    a warm run installs in seconds": the cache restores the virtual environment where the
    install step looks, which then only checks it."""
    _, env, orkeon = installed
    runner = Runner(tmp_path, {"step": "x", "inputs": "{}", "python": sys.executable}, env)
    assert runner.run("key", "install") == 0, runner.last.stderr[-2000:]
    assert runner.last.stdout.startswith("orkeon: the cached install: orkeon ")
    assert runner.steps["install"]["orkeon"] == orkeon
    assert runner.steps["key"]["venv"] == str(Path(orkeon).parent.parent)

    # A restored folder that does not run (another runner image's Python) is replaced.
    broken = tmp_path / "temp"
    (broken / "orkeon-venv" / "bin").mkdir(parents=True)
    (broken / "orkeon-venv" / "bin" / "orkeon").write_text("#!/bin/sh\nexit 1\n")
    (broken / "orkeon-venv" / "bin" / "orkeon").chmod(0o755)
    runner = Runner(tmp_path, {"step": "x", "inputs": "{}", "python": sys.executable},
                    {**env, "RUNNER_TEMP": str(broken)})  # fmt: skip
    assert runner.run("key", "install") == 0, runner.last.stderr[-2000:]
    assert "cached install" not in runner.last.stdout
    done = subprocess.run([runner.steps["install"]["orkeon"], "--version"], capture_output=True)
    assert done.returncode == 0


def test_the_cache_key_names_the_runner_the_python_and_the_sources(tmp_path: Path) -> None:
    copy = tmp_path / "action"
    for name in ("pyproject.toml", "orkeon_run", "crews"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            copy.mkdir(exist_ok=True)
            shutil.copy2(src, copy / name)
    env = {"PATH": os.environ["PATH"], "GITHUB_WORKSPACE": str(tmp_path), "RUNNER_TEMP": str(tmp_path),
           "GITHUB_ACTION_PATH": str(copy), "RUNNER_OS": "Linux", "RUNNER_ARCH": "ARM64"}  # fmt: skip

    def key() -> str:
        runner = Runner(tmp_path, {"step": "x", "inputs": "{}", "python": sys.executable}, env)
        assert runner.run("key") == 0, runner.last.stderr
        return runner.steps["key"]["key"]

    first = key()
    version = ".".join(map(str, sys.version_info[:3]))
    assert first.startswith(f"orkeon-Linux-ARM64-CPython{version}-0.1.0-"), first
    assert key() == first
    (copy / "orkeon_run" / "cli.py").write_text("# changed\n", encoding="utf-8")
    assert key() != first


def test_the_action_refuses_an_untrusted_trigger_before_anything_runs(
    installed: tuple[Path, dict[str, str], str], tmp_path: Path
) -> None:
    """docs/ci.md, "Who may start a run": the check runs after orkeon's install and before
    anything else (the sandbox switch, the run); a refusal is one annotation and exit 2, and
    the step that runs orkeon never starts."""
    ids = [s.get("id") for s in ACTION["runs"]["steps"]]
    assert ids.index("install") < ids.index("trigger") < ids.index("userns") < ids.index("run")
    (step,) = [s for s in ACTION["runs"]["steps"] if s.get("id") == "trigger"]
    assert step["env"]["GITHUB_TOKEN"] == "${{ inputs.github-token }}"
    assert ACTION["inputs"]["github-token"]["default"] == "${{ github.token }}"
    _, env, orkeon = installed
    (tmp_path / "repo").mkdir()
    with GitHubFake() as github:
        github.permissions.update({"alice": "write", "carol": "read"})
        env = {**env, "GITHUB_WORKSPACE": str(tmp_path / "repo"), "GITHUB_API_URL": github.url,
               "GITHUB_REPOSITORY": "acme/app", "GITHUB_EVENT_NAME": "issue_comment"}  # fmt: skip
        inputs = {"step": "dev-batches", "inputs": '{"budget": 3}', "github-token": "ghs_test"}
        venv = {"venv": str(Path(orkeon).parent.parent)}

        runner = Runner(tmp_path, inputs, {**env, "GITHUB_ACTOR": "carol"})
        runner.steps.update(key=venv, install={"orkeon": orkeon})
        assert runner.run("trigger", "run") == 2
        assert runner.last.stderr.startswith("::error title=orkeon: run refused::carol has read")
        assert "run" not in runner.steps  # orkeon never started

        runner = Runner(tmp_path, {**inputs, "allowed-bots": "not a login!"},
                        {**env, "GITHUB_ACTOR": "alice"})  # fmt: skip
        runner.steps.update(key=venv, install={"orkeon": orkeon})
        assert runner.run("trigger", "run") == 2
        assert "allowed-bots: 'login!' is not a GitHub login" in runner.last.stderr

        runner = Runner(tmp_path, inputs, {**env, "GITHUB_ACTOR": "alice"})
        runner.steps.update(key=venv, install={"orkeon": orkeon})
        assert runner.run("trigger", "run") == 2  # the run's own exit 2: its inputs are bad
        assert runner.steps["trigger"] == {}
        assert runner.last.stderr.startswith("orkeon: ")  # the run started and said why


def test_comment_true_runs_orkeon_with_the_live_comment(
    installed: tuple[Path, dict[str, str], str], tmp_path: Path
) -> None:
    """docs/ci.md, "Live progress in the pull request": `comment: true` is
    `--github-comment`, with the token as ORKEON_GITHUB_TOKEN (which no program orkeon
    starts inherits); what it needs is checked before anything runs."""
    (step,) = [s for s in ACTION["runs"]["steps"] if s.get("id") == "run"]
    assert step["env"]["ORKEON_GITHUB_TOKEN"] == "${{ inputs.github-token }}"
    _, env, orkeon = installed
    (tmp_path / "repo").mkdir()
    env = {**env, "GITHUB_WORKSPACE": str(tmp_path / "repo"), "GITHUB_REPOSITORY": "acme/app"}
    for comment, expect in (
        ("true", "--github-comment: cannot read the event"),
        ("false", "budget"),
    ):
        runner = Runner(tmp_path, {"step": "dev-batches", "inputs": '{"budget": 3}',
                                   "github-token": "ghs_test", "comment": comment}, env)  # fmt: skip
        runner.steps["install"] = {"orkeon": orkeon}
        assert runner.run("run") == 2
        assert expect in runner.last.stderr, runner.last.stderr
