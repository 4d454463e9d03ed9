"""The job list (docs/scale.md): JSON Lines, or one JSON array, of

    {"id": ID, "step": STEP, "workspace": PATH | {"git": URL, "ref": REF}, "inputs": OBJECT | "@PATH"}

`read` checks the list's shape whole and raises one InputError holding every problem,
one line each, `JOBS:LINE: FIELD: message`. `check_inputs` then checks each job's inputs
as `orkeon validate` would, without starting anything. A relative workspace PATH and an
inputs `@PATH` resolve against the job list's folder, so a list committed beside its
workspaces runs the same from any directory; paths inside an inputs document resolve as
`orkeon run` resolves them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config.inputs import load_document
from ..errors import InputError
from ..jsonio import loads_strict
from ..models.pricing import check_price
from ..run.failed import repair_document
from ..run.prepare import prepare, stdin_tty
from ..run.steps import STEPS as STEP_MODULES
from ..run.steps import unknown_step

# A job's id names its folder under --out and its artifact files: portable file names only.
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
# A branch or tag name (git check-ref-format's rules, loosely), or a commit id; never
# an option (`--upload-pack=…`).
REF_RE = re.compile(r"^(?!-)(?!.*\.\.)(?!.*@\{)[^\s~^:?*\[\\\x00-\x1f\x7f]+(?<![./])$")
JOB_KEYS = ("id", "step", "workspace", "inputs")
GIT_KEYS = ("git", "ref")


@dataclass(frozen=True)
class GitSource:
    url: str
    ref: str | None


@dataclass(frozen=True)
class Job:
    id: str
    step: str
    line: int
    workspace: Path | GitSource  # a PATH resolved against the list's folder
    inputs: dict[str, Any]  # the document, an inputs @PATH read
    fingerprint: str  # of the definition: step, workspace as written, inputs

    @property
    def definition(self) -> dict[str, Any]:
        """What job.json records of the job (never its inputs: inputs.json has them, redacted)."""
        ws = self.workspace
        written: Any = str(ws) if isinstance(ws, Path) else {"git": ws.url, "ref": ws.ref}
        return {"id": self.id, "step": self.step, "workspace": written}


@dataclass(frozen=True)
class JobList:
    name: str  # as given on the command line, for messages
    base: Path  # the folder relative paths resolve against
    jobs: list[Job]


def read(src: str) -> JobList:
    """The job list at `src` (a path, or `-` for standard input), its shape checked whole.
    Raises InputError naming every problem."""
    text, name, base = _text(src)
    entries, problems = _entries(text, name)
    jobs: list[Job] = []
    seen: dict[str, int] = {}
    folders: dict[Path, int] = {}
    docs: dict[Path, Any] = {}  # an inputs file shared by many jobs is read once
    for line, value in entries:
        where = f"{name}:{line}"
        job = _job(value, line, where, base, docs, problems)
        if job is None:
            continue
        if job.id in seen:
            problems.append(f"{where}: id: {job.id!r} is also the id of line {seen[job.id]}")
            continue
        seen[job.id] = line
        if isinstance(job.workspace, Path):
            # Jobs run at the same time, on any machine: two in one folder would change
            # it under each other and each audit the other's work.
            if job.workspace in folders:
                problems.append(
                    f"{where}: workspace: also the workspace of line {folders[job.workspace]} "
                    "(jobs run at the same time: give each its own)"
                )
                continue
            folders[job.workspace] = line
        jobs.append(job)
    if problems:
        raise InputError(problems)
    return JobList(name=name, base=base, jobs=jobs)


def check_inputs(
    jobs: Iterable[Job],
    name: str,
    *,
    warn: Callable[[str], None] | None = None,
    need_price: bool = False,
    bare: bool = False,
) -> None:
    """Each job's inputs checked as `orkeon validate --step STEP --workspace WS` checks them.
    A git workspace is not fetched: its inputs are checked against an empty folder, and
    what needs the workspace's files (a plan or spec file, the workspace's own crews and
    settings) is checked when the job runs. Raises InputError naming every problem;
    `warn` gets each distinct warning once. `need_price`: the batch has a cost cap
    (`jobs run --max-usd`), so each job's model must have a known price. `bare`: checked
    as bare runs (config/sources.py)."""
    problems: list[str] = []
    warned: set[str] = set()
    tty = stdin_tty()
    with tempfile.TemporaryDirectory(prefix="orkeon-jobs-") as empty:
        for job in jobs:
            where = f"{name}:{job.line}"
            found: list[str] = []

            def note(line: str, where: str = where) -> None:
                if warn is not None and line not in warned:
                    warned.add(line)
                    warn(f"{where}: {line}")

            git = isinstance(job.workspace, GitSource)
            doc = job.inputs
            if job.step == "tasks-repair" and git:
                doc = repair_document(doc)  # as the run will: keys the failed run gives
            try:
                config = prepare(
                    doc,
                    step=None if git else job.step,
                    workspace=empty if git else str(job.workspace),
                    stdin_is_tty=tty,
                    need_model=True,
                    bare=bare,
                )
                for line in config.warnings:
                    note(line)
                if need_price:
                    try:
                        check_price(config.inputs.model)
                    except InputError as exc:
                        problems.append(f"{where}: --max-usd: {exc.problems[0]}")
            except InputError as exc:
                found.extend(exc.problems)
            if git:
                found.extend(_step_needs(job))
            problems.extend(f"{where}: {_inputs_field(p)}" for p in found)
    if problems:
        raise InputError(problems)


def _step_needs(job: Job) -> list[str]:
    """The step's checks that need no workspace files (prepare makes them with the files)."""
    doc = job.inputs
    if job.step in ("dev-spec", "pipeline") and not str(doc.get("request") or "").strip():
        return ["request: dev-spec needs a request (what to build, as text)"]
    if job.step == "tasks-repair" and doc.get("repair") is None:
        return ['repair: tasks-repair needs {"run": RUN_DIR, "role": "BATCH/ROLE"}']
    return []


def _inputs_field(problem: str) -> str:
    """A problem `prepare` names by its inputs field (`model.provider: …`), as a field of
    the job (`inputs.model.provider: …`)."""
    if problem.startswith(("inputs:", "inputs ", "inputs.", "inputs (")):
        return problem
    return f"inputs.{problem}"


def _text(src: str) -> tuple[str, str, Path]:
    if src == "-":
        return sys.stdin.read(), "jobs (stdin)", Path.cwd()
    # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user.
    path = Path(os.path.expanduser(src))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"JOBS: no such file: {src}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"JOBS: cannot read {src}: {exc}") from None
    return text, src, path.resolve().parent


def _entries(text: str, name: str) -> tuple[list[tuple[int, Any]], list[str]]:
    """(line, value) for each job of a JSON array or of JSON Lines (blank lines skipped)."""
    if text.lstrip().startswith("["):
        try:
            values = loads_strict(text)
        except ValueError as exc:
            return [], [f"{name}: not JSON: {exc}"]
        # Text that starts with `[` and parses is one array.
        return list(zip(_array_lines(text), values, strict=True)), []
    entries: list[tuple[int, Any]] = []
    problems: list[str] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            entries.append((n, loads_strict(raw)))
        except ValueError as exc:
            problems.append(f"{name}:{n}: not JSON: {exc}")
    return entries, problems


def _array_lines(text: str) -> list[int]:
    """The line each element of a valid JSON array starts on."""
    decoder = json.JSONDecoder()

    def skip(i: int) -> int:
        while text[i] in " \t\n\r":
            i += 1
        return i

    i = skip(text.index("[") + 1)
    lines: list[int] = []
    while text[i] != "]":
        lines.append(text.count("\n", 0, i) + 1)
        _, i = decoder.raw_decode(text, i)
        i = skip(i)
        if text[i] == ",":
            i = skip(i + 1)
    return lines


def _job(
    value: Any, line: int, where: str, base: Path, docs: dict[Path, Any], problems: list[str]
) -> Job | None:
    if not isinstance(value, dict):
        problems.append(f"{where}: a job must be a JSON object")
        return None
    before = len(problems)
    problems.extend(f"{where}: {k}: unknown key" for k in value if k not in JOB_KEYS)
    problems.extend(f"{where}: {k}: required" for k in JOB_KEYS if k not in value)
    job_id, step = value.get("id"), value.get("step")
    if "id" in value and not (isinstance(job_id, str) and ID_RE.match(job_id)):
        problems.append(
            f"{where}: id: {job_id!r} is not a job id (letters, digits, `_.-`, "
            "starting with a letter or digit, at most 128 characters)"
        )
    if "step" in value and step not in STEP_MODULES:
        problems.append(f"{where}: step: {unknown_step(step)}")
    workspace = (
        _workspace(value["workspace"], where, base, problems) if "workspace" in value else None
    )
    inputs = _inputs(value["inputs"], where, base, docs, problems) if "inputs" in value else None
    if len(problems) > before or workspace is None or inputs is None:
        return None
    definition = {"step": step, "workspace": value["workspace"], "inputs": inputs}
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
    return Job(
        id=str(job_id),
        step=str(step),
        line=line,
        workspace=workspace,
        inputs=inputs,
        fingerprint=f"sha256:{digest}",
    )


def _workspace(value: Any, where: str, base: Path, problems: list[str]) -> Path | GitSource | None:
    if isinstance(value, str) and value:
        path = (base / os.path.expanduser(value)).resolve()
        if not path.is_dir():
            problems.append(f"{where}: workspace: not a directory: {value}")
            return None
        return path
    if not isinstance(value, dict):
        problems.append(f'{where}: workspace: a folder PATH or {{"git": URL, "ref": REF}}')
        return None
    before = len(problems)
    problems.extend(f"{where}: workspace.{k}: unknown key" for k in value if k not in GIT_KEYS)
    url, ref = value.get("git"), value.get("ref")
    if not isinstance(url, str) or not url or url.startswith("-") or "\n" in url:
        problems.append(f"{where}: workspace.git: a repository URL is required")
    if ref is not None and not (isinstance(ref, str) and REF_RE.match(ref)):
        problems.append(f"{where}: workspace.ref: {ref!r} is not a branch, tag or commit name")
    if len(problems) > before:
        return None
    return GitSource(url=str(url), ref=None if ref is None else str(ref))


def _inputs(
    value: Any, where: str, base: Path, docs: dict[Path, Any], problems: list[str]
) -> dict[str, Any] | None:
    doc = value
    if isinstance(value, str) and value.startswith("@") and len(value) > 1:
        path = (base / os.path.expanduser(value[1:])).resolve()
        if path not in docs:
            try:
                docs[path] = load_document(f"@{path}", what="inputs")
            except InputError as exc:
                docs[path] = exc
        doc = docs[path]
        if isinstance(doc, InputError):
            problems.extend(f"{where}: {p}" for p in doc.problems)
            return None
    elif not isinstance(value, dict):
        problems.append(f'{where}: inputs: an object or "@PATH"')
        return None
    if not isinstance(doc, dict):
        problems.append(f"{where}: inputs: must be a JSON object")
        return None
    if "workspace" in doc:
        problems.append(f"{where}: inputs.workspace: the job's workspace is used; remove this key")
        return None
    return doc
