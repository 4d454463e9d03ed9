"""A review of a 2,000-line change with 5 checks (issue 25): orkeon's own time, against
the whole run's.

The change: 20 files of 150 lines on a branch, 100 lines of each changed (2,000 lines
added, 2,000 removed), reviewed with `review.base: main` and 5 checks, one answer each
(every check passes, with one finding on a changed line). Two runs of the same review,
each a fresh `orkeon run review` process, alternating:

- the scripted model: it answers at once, so the process's whole time is orkeon's own
  (start-up, reading and parsing the diff, 5 conversations, the answers' schema checks,
  the findings against the diff, the records): shown for information;
- the loopback Anthropic fake answering each request after MODEL_SECONDS (a fast model:
  a real one reading a 2,000-line diff takes longer to answer), one check at a time
  (`concurrency` 1), with the answer as the forced tool call: the run. orkeon's own time
  is the process's time less the model's (the result's `budget.model_seconds`, the time
  spent waiting on it). The step's own work, without the process's start (Python, the
  imports, the inputs' checks), is the scripted run's `budget.used_seconds`: reading and
  parsing the diff, the 5 conversations, the schema checks, the findings.

Target: orkeon's own time under 5 % of the run. Nearly all of it is the process's start,
which does not grow with the change or the checks (the step's own work is milliseconds).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.kit import git
from tests.kit.fakes import anthropic_api
from tests.kit.fakes.server import Reply

from .common import PY, header, row, run_environ

FILES, LINES, CHANGED = 20, 150, 100
CHECKS = 5
MODEL_SECONDS = 10.0
REPEAT = 2
KEY = "sk-ant-test"
MODEL = "claude-sonnet-4-6"
VERDICT = {
    "verdict": "pass",
    "summary": "nothing to say",
    "findings": [{"path": "src/f1.py", "line": 5, "severity": "notice", "message": "fine"}],
}


def workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    git(ws, "init", "-q", "-b", "main")
    for i in range(FILES):
        (ws / "src" / f"f{i}.py").write_text("".join(f"line {n}\n" for n in range(LINES)))
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "base")
    git(ws, "checkout", "-q", "-b", "feat")
    for i in range(FILES):
        text = "".join(f"line {n}{' changed' if n < CHANGED else ''}\n" for n in range(LINES))
        (ws / "src" / f"f{i}.py").write_text(text)
    git(ws, "commit", "-q", "-am", "change")
    return ws


def doc(model: dict[str, Any]) -> dict[str, Any]:
    checks = [{"name": f"c{i}", "instructions": f"Check {i}."} for i in range(CHECKS)]
    return {"review": {"base": "main", "checks": checks}, "model": model, "concurrency": 1}


def run(ws: Path, inputs: Path, env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    argv = [PY, "-m", "orkeon_run", "run", "review", "--inputs", f"@{inputs}",
            "--workspace", str(ws), "--output", "json", "--progress", "none"]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    took = time.perf_counter() - start
    result = json.loads(proc.stdout)
    assert result["exit_code"] == 0 and len(result["checks"]) == CHECKS, proc.stderr[-2000:]
    return took, result


def main() -> None:
    scripted: list[float] = []
    own: list[float] = []
    whole: list[float] = []
    step: list[float] = []
    with tempfile.TemporaryDirectory(prefix="orkeon-bench-review-") as tmp:
        root = Path(tmp)
        ws = workspace(root)
        env = run_environ(root, ANTHROPIC_API_KEY=KEY)
        script = {f"reviewer/c{i}": [{"text": json.dumps(VERDICT)}] for i in range(CHECKS)}
        fast = root / "scripted.json"
        fast.write_text(json.dumps(doc({"provider": "scripted", "script": script})))
        with anthropic_api.AnthropicFake(api_key=KEY, models=(MODEL,)) as server:
            answer = anthropic_api.message(calls=[("t1", "final_answer", VERDICT)], model=MODEL)
            server.answer_always(Reply(answer.status, answer.body, delay=MODEL_SECONDS))
            model = {"provider": "anthropic", "model": MODEL, "base_url": server.base_url,
                     "max_retries": 0, "price": {"input_per_mtok": 3, "output_per_mtok": 15}}  # fmt: skip
            slow = root / "anthropic.json"
            slow.write_text(json.dumps(doc(model)))
            run(ws, fast, env)  # warm the page cache
            for _ in range(REPEAT):
                took, result = run(ws, fast, env)
                scripted.append(took)
                step.append(result["budget"]["used_seconds"])
                took, result = run(ws, slow, env)
                whole.append(took)
                own.append(took - result["budget"]["model_seconds"])
    s, o, w, k = (statistics.median(x) for x in (scripted, own, whole, step))
    header()
    row("review, scripted model: the whole process", f"{s:.2f} s", "", None, "", None)
    row(f"review, model {MODEL_SECONDS:.0f} s an answer: the run", f"{w:.2f} s", "", None, "", None)
    row("the step's own work (scripted, no start-up)", f"{k * 1000:.0f} ms", f"{w:.2f} s", k / w,
        "", None)  # fmt: skip
    ratio = o / w
    row("orkeon's own time in that run", f"{o:.2f} s", f"{w:.2f} s", ratio, "< 5 % of the run",
        ratio < 0.05)  # fmt: skip
