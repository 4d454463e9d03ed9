"""The environment orkeon hands to the programs it starts.

The model's key must never reach a program the model can steer: the shell tool, native
hooks, settings-shape hooks, and the audit's build and tests (whose output a repair role
reads). Credential-like variables are removed too wherever the model's own commands run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

# The OrbCode page's rule for what looks like a credential.
CREDENTIAL_NAME = re.compile(
    r"(?:^|_)(TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE_KEY)(?:$|_)", re.IGNORECASE
)
# orkeon's own variables: where trust is recorded, and the switch that grants it.
OWN_VARS = ("ORKEON_CONFIG_DIR", "ORKEON_TRUST_PROJECT_HOOKS")
# GitHub Actions' command files: a program the model steers that appended to one would set
# the step's outputs and summary, or the environment and PATH of the job's later steps.
CI_FILE_VARS = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STATE", "GITHUB_STEP_SUMMARY")
# Variables orkeon set for its own process only (set_for_this_process).
_SET_HERE: dict[str, str] = {}


def set_for_this_process(name: str, value: str) -> None:
    """Set `name` unless the user did, for orkeon's process only: `scrubbed` leaves it out
    of what the programs orkeon starts inherit."""
    if name not in os.environ:
        os.environ[name] = value
        _SET_HERE[name] = value


def scrubbed(
    remove: Iterable[str] = (),
    *,
    credentials: bool = True,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """`environ` (default: orkeon's) without `remove`, orkeon's own variables, GitHub
    Actions' command files and, with `credentials`, every credential-like name."""
    env = os.environ if environ is None else environ
    drop = {
        *OWN_VARS,
        *CI_FILE_VARS,
        *remove,
        *(k for k, v in _SET_HERE.items() if env.get(k) == v),
    }
    return {
        k: v
        for k, v in env.items()
        if k not in drop and not (credentials and CREDENTIAL_NAME.search(k))
    }


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """orkeon's configuration folder: `$ORKEON_CONFIG_DIR`, else `~/.config/orkeon`
    (the user's settings.json, trusted.json)."""
    env = os.environ if environ is None else environ
    given = env.get("ORKEON_CONFIG_DIR")
    if given:
        # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user (an
        # internal error, exit 1); the shell's way is to keep the text as it is.
        return Path(os.path.expanduser(given))
    return Path.home() / ".config" / "orkeon"
