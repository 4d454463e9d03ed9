"""Shared fixtures, for every folder of tests/: a real workspace in tmp_path and the real
hook scripts of `tests/data/hooks/` (executable files with a shebang, allowed by their
absolute paths). Helpers live in the kit (tests/kit/), fixtures here."""

from __future__ import annotations

import shlex
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kit import DATA
from kit.steps import make_workspace

from orkeon_run.policy.programs import ShellRules

HOOKS_DIR = DATA / "hooks"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A resolved, empty-but-for-README.md workspace folder (no git repository)."""
    return make_workspace(tmp_path, {"README.md": "# readme\n"}, git=False)


@pytest.fixture
def hook_cmd() -> Callable[..., str]:
    """`hook_cmd("deny.sh", "{tool}")` -> the command text running that script by its
    absolute path with those arguments (each quoted as needed)."""

    def make(name: str, *args: str) -> str:
        script = HOOKS_DIR / name
        assert script.is_file(), script
        return shlex.join([str(script)]) + "".join(f" {a}" for a in args)

    return make


@pytest.fixture
def hook_rules() -> ShellRules:
    """Program rules that allow every script of tests/data/hooks by its absolute path."""
    scripts = tuple(str(p) for p in sorted(HOOKS_DIR.iterdir()))
    return ShellRules(allow_interpreters=False, extra_allowed_commands=scripts)


# --- live provider tests (tests/models/test_live.py) -----------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--live",
        action="store_true",
        default=False,
        help="also run tests marked `live` (real provider APIs; each also needs its key set)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--live"):
        return
    skip = pytest.mark.skip(reason="talks to a real provider API: pass --live (and set its key)")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def in_tmp() -> Iterator[Path]:
    """A folder in the host's /tmp, wherever pytest keeps its own (TMPDIR may move them):
    for a test of what a sandbox does with a workspace under /tmp, which it mounts again
    inside the command's private one. Removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="orkeon-test-", dir="/tmp")).resolve()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def off_tmp() -> Iterator[Path]:
    """A folder outside the host's /tmp, which every sandbox covers with the command's
    private one (so a test of what a sandbox hides must not rely on /tmp hiding it):
    /var/tmp, the FHS's other temporary folder. Removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="orkeon-test-", dir="/var/tmp")).resolve()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
