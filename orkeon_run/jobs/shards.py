"""Shards: `--shard I/N` (I from 1 to N) holds the jobs whose id hashes to I.

A job's shard is sha256 of its id, as a number, modulo N, plus 1: the same list splits
the same way on every machine and in every order, and adding or removing a job moves no
other job. The shards are as even as the hash makes them, not exactly even.
"""

from __future__ import annotations

import hashlib
import re

from ..errors import InputError

# GitHub Actions runs at most 256 jobs from one matrix, GitLab at most 200 from one
# `parallel:matrix`; a Kubernetes Indexed Job takes up to 100,000 completions.
MAX_SHARDS = 100_000
_SHARD = re.compile(r"^([1-9][0-9]*)/([1-9][0-9]*)$")


def shard_of(job_id: str, shards: int) -> int:
    """The shard (1..shards) that holds the job `job_id`."""
    digest = hashlib.sha256(job_id.encode("utf-8")).digest()
    return int.from_bytes(digest, "big") % shards + 1


def parse_shard(text: str) -> tuple[int, int]:
    """`"3/8"` -> (3, 8). InputError naming --shard for anything else."""
    m = _SHARD.match(text.strip())
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)) <= MAX_SHARDS:
        raise InputError(
            f"--shard: {text!r} is not I/N with 1 <= I <= N <= {MAX_SHARDS} (e.g. 1/8)"
        )
    return int(m.group(1)), int(m.group(2))


def check_count(shards: int) -> int:
    if not 1 <= shards <= MAX_SHARDS:
        raise InputError(f"--shards: {shards} is not between 1 and {MAX_SHARDS}")
    return shards
