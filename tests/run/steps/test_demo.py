"""The demo (examples/demo/run.sh) runs dev-spec -> dev-plan -> dev-batches with the real
command and shows every stage: a rule-set refusal, a pre-tool hook refusal, a post-tool
hook that fails once, a plan sent back, a roots refusal, two audits."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from kit import ROOT


@pytest.mark.slow
def test_demo_runs_every_stage(tmp_path: Path) -> None:
    work = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if not k.lower().startswith("orkeon")}
    env |= {"ORKEON": f"{shlex.quote(sys.executable)} -m orkeon_run", "PYTHONPATH": str(ROOT),
            "ORKEON_CONFIG_DIR": str(tmp_path / "config"), "PYTHON": sys.executable}  # fmt: skip
    out = subprocess.run(
        [str(ROOT / "examples" / "demo" / "run.sh"), str(work)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout  # each step's `orkeon report`, then its summary
    assert "`writer` call 1 `file_write` `README.md`: refused by **rules**" in text
    assert "[pre-tool hook #1 (python3 .orkeon/hooks/pre_tool.py file_write" in text
    assert (
        "post-tool #2 `python3 .orkeon/hooks/post_tool.py file_write .orkeon/spec.md` | 1 |" in text
    )
    assert "<summary>The plan failed its check 1 time</summary>" in text
    assert "[refused: calc/__init__.py is outside this role's roots (tests/)]" in text
    assert "| `b1` | ✅ passed |" in text and "| `b2` | ✅ passed |" in text and "❌" not in text
    runs = work / ".orkeon" / "runs"
    for step in ("dev-spec", "dev-plan", "dev-batches"):
        result = json.loads((runs / step / "result.json").read_text())
        assert result["status"] == "succeeded", (step, result["error"])
    assert "def div" in (work / "calc" / "__init__.py").read_text()
    assert (work / "calc" / "generated" / "table.py").read_text().startswith("# Generated")
    assert "b1/core" in (runs / "dev-batches.html").read_text()
