"""The run directory (INTERFACE section 7): ids, redacted inputs, atomic writes, state.

RUN_DIR/inputs.json        the inputs as given, secrets redacted
RUN_DIR/events.jsonl       appended and flushed line by line (events.EventLog)
RUN_DIR/result.json        written atomically: temp file, fsync, rename
RUN_DIR/state.json         progress for --resume (atomic too)
RUN_DIR/transcripts/ROLE.jsonl
"""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

REDACTED = "[redacted]"
# Key names that hold credentials. `*_env` keys name a variable, they hold no secret.
_SECRET_KEY = re.compile(
    r"(?i)(api[_-]?key|token|secret|password|passwd|credential|private[_-]?key|authorization|cookie)"
)
# Values that look like a credential whatever their key is called.
_SECRET_VALUE = re.compile(
    r"(sk-[A-Za-z0-9_-]{16,}|sk-ant-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9-]{10,}|Bearer\s+[A-Za-z0-9._~+/-]{16,})"
)


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def redact(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    if isinstance(value, str):
        if key and _SECRET_KEY.search(key) and not key.endswith("_env"):
            return REDACTED
        return _SECRET_VALUE.sub(REDACTED, value)
    return value


def atomic_write_json(path: Path, obj: Any) -> None:
    """Write JSON so a reader sees the old file or the new one, never a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # backslashreplace: a lone surrogate (from a JSON "\\ud800" escape) is written as
        # that escape, valid JSON, instead of raising and leaving no file.
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            json.dump(obj, f, ensure_ascii=False, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
