"""README.md's "Run" examples run as written: each line of its shell block, in order, in one
bash session started in the checkout, with `orkeon` on PATH; each line exits 0 unless its
comment says `# exit N`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kit import ROOT


def run_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Run\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "README.md: no sh block under ## Run"
    return [line for line in block.group(1).splitlines() if line.strip()]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_readme_run_examples_run_as_written(tmp_path: Path) -> None:
    bash = "/bin/bash"
    if not Path(bash).exists():
        pytest.skip("no /bin/bash here")
    lines = run_block()
    expected = []
    script = ["cd " + str(ROOT)]
    for n, line in enumerate(lines):
        found = re.search(r"#\s*exit (\d+)", line)
        expected.append(int(found.group(1)) if found else 0)
        script += [line, f'echo "@@ {n} $?" >&3']
    env = {k: v for k, v in os.environ.items() if not k.lower().startswith(("orkeon", "github"))}
    env |= {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "ORKEON_CONFIG_DIR": str(tmp_path / "config"),
    }
    codes = tmp_path / "codes"
    proc = subprocess.run(
        [bash, "--norc", "--noprofile", "-c", f"exec 3>{codes}\n" + "\n".join(script)],
        capture_output=True, text=True, env=env, timeout=280,
    )  # fmt: skip
    got = [int(line.split()[2]) for line in codes.read_text().splitlines()]
    report = "\n".join(f"{c} {line}" for c, line in zip(got, lines, strict=False))
    assert got == expected, (
        f"{report}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    )
    # What the lines promise: the whole pipeline on one page, the runs kept out of git.
    (ws,) = [p for p in tmp_path.iterdir() if p.name.startswith("tmp.")]  # mktemp -d
    assert (ws / "demo.html").is_file()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ws,
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "calc/__init__.py" in status and ".orkeon/runs/" not in status
