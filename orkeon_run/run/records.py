"""The run directory's records, kept as the run wrote them (docs/security.md, "The run's
records").

`inputs.json`, `state.json` and `result.json` are written whole (a temporary file, synced,
renamed over), secrets redacted, and **sealed**: the SHA-256 of each file as orkeon wrote
it is kept in the run's seal, `$ORKEON_CONFIG_DIR/seals/RUN_ID.json`, a folder outside the
workspace that no role writes (the file tools never leave the workspace; the shell's
sandbox hides orkeon's configuration folder; `$ORKEON_SEALS_DIR` when set, never inside
the workspace). `--resume` and tasks-repair read a run's
records only through `open_sealed`, which refuses (InputError, exit 2, naming the file)
a record that is not the one the run wrote last, a record the seal does not know, and a
run with no seal here (made on another machine or with another configuration folder:
bring its seal along, docs/security.md).

A record is written in three moves: the seal names the new digest beside the one it
replaces, the file is replaced, the seal forgets the old digest. A run killed between them
leaves a record its seal accepts either way.

The run directory's `lock` file is held (flock, exclusive) for as long as a run works in
it: a second run given the same directory, or a `--resume` of a run still running, is
refused (exit 2). The kernel drops the lock when the process ends, SIGKILL included.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config.inputs import Plan, parse_plan
from ..environ import Redactor, config_dir
from ..errors import InputError, RecordsError, UsageError
from ..jsonio import atomic_write_bytes, atomic_write_json

SEALED = ("inputs.json", "state.json", "result.json")
LOCK = "lock"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


# Where the seals are kept, when not in orkeon's configuration folder: a folder kept with
# the run directories (`orkeon jobs run` uses OUT/_seals), outside every workspace.
SEALS_VAR = "ORKEON_SEALS_DIR"


def seals_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$ORKEON_SEALS_DIR`, else `$ORKEON_CONFIG_DIR/seals` (`~/.config/orkeon/seals`)."""
    env = os.environ if environ is None else environ
    given = env.get(SEALS_VAR)
    # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user.
    return Path(os.path.expanduser(given)) if given else config_dir(environ) / "seals"


def check_seals_dir(workspace: Path, environ: Mapping[str, str] | None = None) -> None:
    """InputError when the seals would be kept inside the workspace, where a role's file
    tools could rewrite them along with the records."""
    where = seals_dir(environ).resolve()
    if where == workspace or workspace in where.parents:
        env = os.environ if environ is None else environ
        name = SEALS_VAR if env.get(SEALS_VAR) else "ORKEON_CONFIG_DIR"
        raise InputError(
            f"{name}: the run's seals would be kept in {where}, inside the workspace: "
            "keep them where no role writes"
        )


def seal_file(run_id: str, environ: Mapping[str, str] | None = None) -> Path:
    name = run_id if _SAFE_NAME.match(run_id) else "id-" + _sha256(run_id.encode())[:32]
    return seals_dir(environ) / f"{name}.json"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class RunRecords:
    """The sealed records of one run directory."""

    def __init__(
        self,
        run_dir: Path,
        run_id: str,
        seal_path: Path,
        seal: dict[str, Any] | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.run_id = run_id
        self.seal_path = seal_path
        self.redactor = redactor
        self._seal = seal or {"run_id": run_id, "run_dir": str(run_dir), "files": {}}

    @classmethod
    def create(
        cls, run_dir: Path, run_id: str, environ: Mapping[str, str] | None = None
    ) -> RunRecords:
        return cls(run_dir, run_id, seal_file(run_id, environ))

    def write(self, name: str, obj: Any) -> None:
        """RUN_DIR/NAME, whole, redacted and sealed; RecordsError when the disk refuses."""
        text = json.dumps(obj, ensure_ascii=False, indent=2) + "\n"
        if self.redactor is not None:
            text = self.redactor.json_text(text)
        data = text.encode("utf-8", errors="backslashreplace")
        digest = _sha256(data)
        files: dict[str, Any] = self._seal["files"]
        old = files.get(name)
        files[name] = {"sha256": digest, "before": old["sha256"] if old else None}
        self._save_seal()
        path = self.run_dir / name
        try:
            atomic_write_bytes(path, data)
        except OSError as exc:
            if old:
                files[name] = old
            else:
                files.pop(name, None)
            raise RecordsError.writing(path, exc) from None
        files[name] = {"sha256": digest}
        self._save_seal()

    def copy(self, name: str, to: str) -> None:
        """RUN_DIR/NAME's bytes to RUN_DIR/TO (kept, not sealed: nothing reads it back)."""
        path = self.run_dir / to
        try:
            atomic_write_bytes(path, (self.run_dir / name).read_bytes())
        except OSError as exc:
            raise RecordsError.writing(path, exc) from None

    def _save_seal(self) -> None:
        try:
            atomic_write_json(self.seal_path, self._seal)
        except OSError as exc:
            raise RecordsError.writing(self.seal_path, exc) from None

    def check(self, name: str, data: bytes | None) -> bool:
        """Whether `data` (None: no file) is what the seal says the run last wrote as
        NAME. A record a killed write left as it was counts, and the seal takes it."""
        files: dict[str, Any] = self._seal["files"]
        entry = files.get(name)
        if entry is None:
            return data is None
        found = None if data is None else _sha256(data)
        if found == entry.get("sha256"):
            return True
        if "before" in entry and found == entry["before"]:
            files[name] = {"sha256": found}
            return True
        return False


def open_sealed(
    run_dir: Path, what: str, environ: Mapping[str, str] | None = None
) -> tuple[RunRecords, dict[str, Any]]:
    """The run's records and what they hold (`{"inputs.json": {...}, "state.json": {...},
    "result.json": {...} or None}`), each checked against the run's seal; InputError
    naming `what` (`--resume`, `repair.run`) and the file otherwise. Each file is read
    once: what is checked is what is used."""
    raw: dict[str, bytes | None] = {}
    for name in SEALED:
        try:
            raw[name] = (run_dir / name).read_bytes()
        except FileNotFoundError:
            raw[name] = None
        except OSError as exc:
            raise InputError(f"{what}: cannot read {run_dir / name}: {exc.strerror}") from None
    # The seal is named by the run's id: state.json's, else the folder's name (a default
    # run directory is named by its id).
    candidates = [c for c in (_state_run_id(raw["state.json"]), run_dir.name) if c]
    found = [(c, seal_file(c, environ)) for c in dict.fromkeys(candidates)]
    run_id, seal_path = next(((c, p) for c, p in found if p.is_file()), (None, None))
    if run_id is None or seal_path is None:
        raise InputError(
            f"{what}: {run_dir} has no seal here ({found[0][1]}): orkeon cannot tell whether "
            "its records are the ones the run wrote (a run made on another machine, or with "
            "another ORKEON_CONFIG_DIR? bring its seal along: docs/security.md)"
        )
    try:
        seal = json.loads(seal_path.read_text(encoding="utf-8"))
        if not isinstance(seal, dict) or not isinstance(seal.get("files"), dict):
            raise ValueError("not a seal")
    except (OSError, ValueError) as exc:
        raise InputError(f"{what}: cannot read the run's seal {seal_path}: {exc}") from None
    records = RunRecords(run_dir, run_id, seal_path, seal)
    docs: dict[str, Any] = {}
    for name in SEALED:
        if not records.check(name, raw[name]):
            how = "is missing" if raw[name] is None else "is not the file the run wrote"
            raise InputError(
                f"{what}: {run_dir / name} {how} (it does not match the run's seal "
                f"{seal_path}): orkeon will not go on from records a role could have replaced"
            )
        data = raw[name]
        docs[name] = None if data is None else json.loads(data.decode("utf-8"))
    return records, docs


def _state_run_id(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        state = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    run_id = state.get("run_id") if isinstance(state, dict) else None
    return run_id if isinstance(run_id, str) and run_id else None


# --- the pinned plan (in state.json) ---------------------------------------------------


def pin(plan: Plan, plan_rel: str) -> dict[str, Any]:
    """The plan as a run pins it in its state: its content, and the path it came from
    ("" for a plan given inline)."""
    return {"path": plan_rel, "content": plan.model_dump(mode="json")}


def pinned_plan(state: dict[str, Any], run_dir: Path) -> tuple[Plan, str] | None:
    """The plan a run pinned in its state.json, or None when it pinned none."""
    pinned = state.get("plan")
    if pinned is None:
        return None
    origin = f"{run_dir / 'state.json'}: plan"
    if not isinstance(pinned, dict) or not isinstance(pinned.get("path"), str):
        raise InputError(f"{origin}: not a pinned plan")
    return parse_plan(pinned.get("content"), origin=origin), pinned["path"]


# --- the lock ------------------------------------------------------------------------------


class RunLock:
    """The exclusive lock on RUN_DIR/lock, held while a run works in the directory."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def take(cls, run_dir: Path, what: str) -> RunLock:
        """Lock `run_dir`; UsageError naming `what` when another run holds it,
        RecordsError when the lock file cannot be made (a read-only folder)."""
        path = run_dir / LOCK
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise RecordsError.writing(path, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise UsageError(
                f"{what}: another run is working in {run_dir}{holder}; "
                "two runs never share a run directory"
            ) from None
        except OSError as exc:  # a file system without locks (some network mounts)
            os.close(fd)
            raise RecordsError.writing(path, exc) from None
        try:  # who holds it, for the message above; a full disk loses only that
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass
        return cls(fd)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def in_use(run_dir: Path) -> str | None:
    """A note naming the process that holds `run_dir`'s lock, or None when no run does."""
    try:
        fd = os.open(run_dir / LOCK, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None  # never locked (or unreadable): no run of this orkeon holds it
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(fd) or " (another run)"
    finally:
        os.close(fd)
    return None


def _holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (process {pid})" if pid.isdecimal() else ""
