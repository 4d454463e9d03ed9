"""GitHub Actions: what `orkeon run` leaves for the workflow when `GITHUB_ACTIONS=true`
(docs/ci.md).

- the Markdown report appended to `$GITHUB_STEP_SUMMARY`;
- `status`, `exit_code`, `run_dir`, `cost_usd` (and a task's `output`, its answer as JSON
  for `fromJSON()`, `null` when there is none) appended to `$GITHUB_OUTPUT`, each in the
  `NAME<<DELIMITER` form with a random delimiter that the value does not contain (a run
  directory may hold any character, a newline included);
- a review's findings as `::error`/`::warning`/`::notice` on their file and lines;
- `::error` for failed audits (and for a failed run with no failed audit), `::warning` for
  refused calls, on stderr (stdout carries only what `--output` promises), with `file=`
  where the path lies inside `$GITHUB_WORKSPACE`. Data and properties are escaped by
  GitHub's rules; at most `MAX_EACH` of each kind (GitHub shows 10 per step), the last
  saying how many more there were.

Publishing never changes the run's exit code: a file that cannot be written is a warning
on stderr.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from .. import logs
from .load import load
from .markdown import markdown
from .model import RunView

MAX_EACH = 10
MESSAGE_CAP = 4000


def active(environ: Mapping[str, str]) -> bool:
    return environ.get("GITHUB_ACTIONS") == "true"


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, **props: str) -> str:
    """One workflow command line: `::kind prop=value,…::message`."""
    given = ",".join(f"{k}={escape_property(v)}" for k, v in props.items() if v)
    return f"::{kind}{' ' + given if given else ''}::{escape_data(message[:MESSAGE_CAP])}\n"


def output_lines(values: Mapping[str, str]) -> str:
    """`values` in `$GITHUB_OUTPUT`'s multiline form."""
    out = []
    for name, value in values.items():
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        while delimiter in value:  # never, short of a value that guessed a UUID
            delimiter = f"ghadelimiter_{uuid.uuid4()}"
        out.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(out)


def publish(
    run_dir: Path, result: Mapping[str, Any], environ: Mapping[str, str], stderr: IO[str]
) -> None:
    """Write the summary, the outputs and the annotations for the run in `run_dir` whose
    result document is `result`. Never raises: the run's outcome stands."""
    try:
        _publish(run_dir, result, environ, stderr)
    except Exception as exc:  # a report bug must not turn a finished run into exit 1
        logs.warn(f"GitHub Actions: could not publish the run: {type(exc).__name__}: {exc}")


def _publish(
    run_dir: Path, result: Mapping[str, Any], environ: Mapping[str, str], stderr: IO[str]
) -> None:
    view = load(run_dir)
    usd = (result.get("budget") or {}).get("usd")
    values = {
        "status": str(result.get("status", "")),
        "exit_code": str(result.get("exit_code", "")),
        "run_dir": str(run_dir),
        "cost_usd": "" if usd is None else str(round(float(usd), 6)),
    }
    if "output" in result:
        values["output"] = json.dumps(result["output"], ensure_ascii=False)
    if isinstance(result.get("patch"), dict):  # --patch: the file written
        values["patch"] = str(result["patch"].get("path", ""))
    for name, text in (
        ("GITHUB_STEP_SUMMARY", markdown(view) + "\n"),
        ("GITHUB_OUTPUT", output_lines(values)),
    ):
        target = environ.get(name)
        if not target:
            continue
        try:
            with open(target, "a", encoding="utf-8", errors="backslashreplace") as f:
                f.write(text)
        except OSError as exc:
            logs.warn(f"{name}: cannot append to {target}: {exc.strerror or exc}")
    for line in check_commands(view, environ.get("GITHUB_WORKSPACE")):
        stderr.write(line)
    for line in workflow_commands(view, environ.get("GITHUB_WORKSPACE")):
        stderr.write(line)
    stderr.flush()


def workflow_commands(view: RunView, repo_root: str | None) -> Iterator[str]:
    """The `::error` and `::warning` lines for the run, capped."""
    errors = list(_errors(view, repo_root))
    warnings = list(_warnings(view, repo_root))
    yield from _capped("error", errors, "failed audits")
    yield from _capped("warning", warnings, "refused calls")


def check_commands(view: RunView, repo_root: str | None) -> Iterator[str]:
    """A review's findings as annotations on their lines (report/checks.py), at most
    MAX_EACH in all (GitHub shows 10 per step; the job summary has every one)."""
    from .checks import finding_annotations

    found = list(finding_annotations(view.checks, lambda p: _file(view, p, repo_root)))
    for kind, message, props in found[: MAX_EACH if len(found) <= MAX_EACH else MAX_EACH - 1]:
        yield command(kind, message, **props)
    if len(found) > MAX_EACH:
        more = len(found) - MAX_EACH + 1
        yield command("warning", f"{more} more findings: see the job summary", title="orkeon")


def _capped(kind: str, items: list[tuple[str, str, str]], what: str) -> Iterator[str]:
    shown = items if len(items) <= MAX_EACH else items[: MAX_EACH - 1]
    for title, message, file in shown:
        yield command(kind, message, file=file, title=title)
    if len(items) > len(shown):
        more = len(items) - len(shown)
        yield command(kind, f"{more} more {what}: see the job summary", title="orkeon")


def _errors(v: RunView, root: str | None) -> Iterator[tuple[str, str, str]]:
    """The last attempt's: a resumed run does not annotate again what its earlier attempts
    did (their job already did)."""
    step = v.step or "run"
    for a in v.failed_audits:
        if a.attempt != v.attempts:
            continue
        title = f"orkeon {step}: the audit of batch {a.batch} failed"
        if a.outside_roots:
            for path in a.outside_roots:
                yield (
                    title,
                    f"changed outside the roots of batch {a.batch}: {path}",
                    _file(v, path, root),
                )
        else:
            yield title, f"{a.what_failed}\n{a.output_tail[-2000:]}", ""
    if v.status != "succeeded" and not any(a.attempt == v.attempts for a in v.failed_audits):
        word = v.status if v.finished else "unfinished"
        if v.error_kind == "provider":  # exit 4: nothing wrong with the work
            word = "the model provider failed (exit 4): run the job again later"
        yield f"orkeon {step}: {word}", v.error or word, ""


def _warnings(v: RunView, root: str | None) -> Iterator[tuple[str, str, str]]:
    for c in v.refused_calls:
        if c.attempt != v.attempts:  # an earlier attempt's: annotated by its own job
            continue
        path = c.input.get("file_path") or c.input.get("path")
        file = _file(v, path, root) if isinstance(path, str) else ""
        title = f"orkeon: {c.role} {c.tool} refused by {c.stage}"
        yield title, c.result, file


def _file(v: RunView, path: str, root: str | None) -> str:
    """`path` (as the run wrote it: workspace-relative or absolute) relative to the
    repository's root, when it lies inside it; else ""."""
    if not root or not v.workspace or not path or "\x00" in path:
        return ""
    full = os.path.normpath(os.path.join(v.workspace, path))
    base = os.path.normpath(root)
    try:
        if os.path.commonpath([full, base]) != base or full == base:
            return ""
    except ValueError:  # a relative GITHUB_WORKSPACE
        return ""
    return Path(os.path.relpath(full, base)).as_posix()
