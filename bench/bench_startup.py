"""Cold start (issue 7, item 4): `orkeon --version` against `python -c pass` (target ≤ 2.5×)
and `orkeon validate` (target under 250 ms), and `validate --bare` against `validate` (for
information), each a median of fresh processes."""

from __future__ import annotations

import tempfile

from .common import PY, command_seconds, header, row


def main() -> None:
    repeat = 15
    base = command_seconds([PY, "-c", "pass"], repeat)
    version = command_seconds([PY, "-m", "orkeon_run", "--version"], repeat)
    with tempfile.TemporaryDirectory() as ws:
        validate = command_seconds(
            [
                PY,
                "-m",
                "orkeon_run",
                "validate",
                "--inputs",
                '{"budget": {"seconds": 60}}',
                "--workspace",
                ws,
            ],
            repeat,
            env={"ORKEON_CONFIG_DIR": ws, "PATH": "/usr/bin:/bin"},
        )
        # --bare (issue 26, item 3): the same check, reading no configuration folder and
        # listing what a normal run would read.
        bare = command_seconds(
            [PY, "-m", "orkeon_run", "validate", "--bare", "--inputs",
             '{"budget": {"seconds": 60}}', "--workspace", ws],
            repeat,
            env={"ORKEON_CONFIG_DIR": ws, "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
    header()
    row(
        "orkeon --version",
        f"{version * 1000:.1f} ms",
        f"{base * 1000:.1f} ms",
        version / base,
        "≤ 2.5×",
        version / base <= 2.5,
    )
    row(
        "orkeon validate",
        f"{validate * 1000:.1f} ms",
        f"{base * 1000:.1f} ms",
        validate / base,
        "< 250 ms",
        validate < 0.25,
    )
    row(
        "orkeon validate --bare",
        f"{bare * 1000:.1f} ms",
        f"{validate * 1000:.1f} ms",
        bare / validate,
        "≈ validate",
        None,  # for information: the two differ by less than this machine's noise
    )
