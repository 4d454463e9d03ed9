"""The environment orkeon hands to the programs it starts, and the secrets it keeps out of
the run's records.

The model's key must never reach a program the model can steer: the shell tool, native
hooks, settings-shape hooks, and the audit's build and tests (whose output a repair role
reads). Credential-like variables are removed too wherever the model's own commands run.
What a program prints anyway (a secret kept in a file, a build that echoes a token) is
redacted where the run writes it and before the model reads it (`Redactor`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# The rule Claude Code's hook environment uses for what looks like a credential.
CREDENTIAL_NAME = re.compile(
    r"(?:^|_)(TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE_KEY)(?:$|_)", re.IGNORECASE
)
# orkeon's own variables: where trust and the runs' seals are recorded, and the switch
# that grants trust. Their values are secrets of the run too (the folders the sandbox
# hides); every other ORKEON_* name is only kept from the programs orkeon starts.
OWN_VARS = ("ORKEON_CONFIG_DIR", "ORKEON_TRUST_PROJECT_HOOKS", "ORKEON_SEALS_DIR")
# Names orkeon consumes as a family (docs/security.md, "What orkeon keeps for itself"):
# its own knobs and settings (`ORKEON_*`, .NET-style `Orkeon__*`, any case) and the trace
# exporter's connection (`OTEL_EXPORTER_OTLP_*`: endpoint, headers, certificates, key).
OWN_PREFIXES = ("ORKEON_", "OTEL_EXPORTER_OTLP_")
# Among those, the exporter's variables whose values are secrets although their names do
# not look like credentials (`…_HEADERS` holds `authorization=Bearer …`; the certificate
# and key variables name the files a client proves itself with).
OTLP_SECRET = re.compile(r"^OTEL_EXPORTER_OTLP_(?:\w*_)?(?:HEADERS|CERTIFICATE|CLIENT_KEY)$")
# GitHub Actions' command files: a program the model steers that appended to one would set
# the step's outputs and summary, or the environment and PATH of the job's later steps.
CI_FILE_VARS = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STATE", "GITHUB_STEP_SUMMARY")
# Variables orkeon set for its own process only (set_for_this_process).
_SET_HERE: dict[str, str] = {}


def own_name(name: str) -> bool:
    """Whether `name` is a variable orkeon consumes itself (OWN_PREFIXES): never handed
    to a program orkeon starts."""
    return name.upper().startswith(OWN_PREFIXES)


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
    """`environ` (default: orkeon's) without `remove`, the variables orkeon consumes
    itself (`own_name`), GitHub Actions' command files and, with `credentials`, every
    credential-like name. The one place the environment of a program orkeon starts is
    made (the shell, hooks, the audit's build and test, MCP servers, jobs' clones)."""
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
        if k not in drop and not own_name(k) and not (credentials and CREDENTIAL_NAME.search(k))
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


# --- secrets out of the records -----------------------------------------------------------

REDACTED = "[redacted]"
# Shorter values are not redacted: a 3-character "secret" (`abc`, `true`, `none`) would
# blank every occurrence of that text in the run's records. A real key or token is longer.
MIN_SECRET_CHARS = 8


def secret_values(
    environ: Mapping[str, str] | None = None, key_env: str | None = None
) -> list[str]:
    """The secrets of `environ` (default: orkeon's): the value of `key_env` (the model's
    key variable), of every variable whose name looks like a credential, of orkeon's own
    (OWN_VARS), of the trace exporter's headers, certificates and key (each header's
    value as well as the whole), and the credentials inside its endpoints' URLs."""
    env = os.environ if environ is None else environ
    values = [v for k, v in env.items() if CREDENTIAL_NAME.search(k) or k in OWN_VARS]
    if key_env and env.get(key_env):
        values.append(env[key_env])
    for name, value in env.items():
        upper = name.upper()
        if OTLP_SECRET.match(upper):
            values.append(value)
            if upper.endswith("HEADERS"):
                for header in value.split(","):
                    values += header_secrets(header.partition("=")[2])
        elif upper.startswith("OTEL_EXPORTER_OTLP_") and upper.endswith("ENDPOINT"):
            values += url_secrets(value)
    return values


def header_secrets(value: str) -> list[str]:
    """A header's value, and its credential alone when it is `SCHEME CREDENTIAL`
    (`Bearer …`, `Basic …`)."""
    value = value.strip()
    scheme, _, credential = value.partition(" ")
    return [value, credential.strip()] if credential and scheme.isalpha() else [value]


def url_secrets(url: str) -> list[str]:
    """The credentials a URL carries: its user info (`user:pass@`, whole and the
    password) and the value of each query parameter (`?token=…`)."""
    from urllib.parse import parse_qsl, unquote, urlsplit

    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return []
    out: list[str] = []
    userinfo, at, _ = parts.netloc.rpartition("@")
    if at and userinfo:
        out.append(userinfo)
        user, colon, password = userinfo.partition(":")
        out += [user, password, unquote(password)] if colon else [user, unquote(user)]
    out += [value for _, value in parse_qsl(parts.query)]
    out += [p.partition("=")[2] for p in parts.query.split("&")] if parts.query else []
    return [v for v in out if v]


class Redactor:
    """Replaces the values of secrets by `[redacted]`: the model's key and every
    credential-like variable (CREDENTIAL_NAME) of the environment the run started with,
    orkeon's own (`secret_values`), and those of the run's configuration (`extra`: MCP
    servers' headers and env values, credentials in base URLs),
    each of at least MIN_SECRET_CHARS characters (and each such line of a value that spans
    lines, such as a private key). Exact occurrences only: an encoded form (base64, URL
    quoting) is not found.

    Cheap when there is nothing to replace: a text is searched once per secret (`in`), and
    nothing is copied or rebuilt unless a secret is found."""

    __slots__ = ("_escaped", "_needles")

    def __init__(self, values: Iterable[str] = ()) -> None:
        needles: set[str] = set()
        for value in values:
            if len(value) >= MIN_SECRET_CHARS:
                needles.add(value)
            if "\n" in value:
                needles.update(
                    line.strip()
                    for line in value.splitlines()
                    if len(line.strip()) >= MIN_SECRET_CHARS
                )
        # Longest first: a secret that holds another is replaced whole.
        self._needles = tuple(sorted(needles, key=lambda n: (-len(n), n)))
        # Inside JSON text a secret appears as its string escape (`"` as `\\"`); escaping
        # is per character, so the escape of a secret is a substring of its container's.
        escaped = {json.dumps(n, ensure_ascii=False)[1:-1] for n in self._needles}
        self._escaped = tuple(sorted(escaped, key=lambda n: (-len(n), n)))

    @classmethod
    def from_environ(
        cls,
        environ: Mapping[str, str] | None = None,
        key_env: str | None = None,
        extra: Iterable[str] = (),
    ) -> Redactor:
        """The secrets of `environ` (default: orkeon's; `secret_values`) and `extra`."""
        return cls([*secret_values(environ, key_env), *extra])

    def __bool__(self) -> bool:
        return bool(self._needles)

    @property
    def secrets(self) -> tuple[str, ...]:
        """What is redacted, longest first."""
        return self._needles

    def text(self, text: str) -> str:
        """`text` with every secret replaced; the same object when none is in it."""
        for needle in self._needles:
            if needle in text:
                text = text.replace(needle, REDACTED)
        return text

    def json_text(self, text: str) -> str:
        """JSON text with every secret in its strings replaced; the same object when none
        is in it."""
        for needle in self._escaped:
            if needle in text:
                text = text.replace(needle, REDACTED)
        return text

    def value(self, value: Any) -> Any:
        """A JSON-like value (str, list, dict, numbers) with every secret in its strings
        replaced; the same object when none is in it."""
        if not self._needles:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, (dict, list)):
            text = json.dumps(value, ensure_ascii=False, default=str)
            redacted = self.json_text(text)
            return value if redacted is text else json.loads(redacted)
        return value
