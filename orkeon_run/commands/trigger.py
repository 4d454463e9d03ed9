"""The action's trusted-trigger check (docs/ci.md#who-may-start-a-run): run by `action.yml`
with the installed orkeon's Python (`python -m orkeon_run.commands.trigger`) before the
run, it reads its inputs from the environment (the action's step sets them; there is no
command line) and exits 0 to let the run go on, or 2 with one `::error` annotation.

The rules, in order:
1. `allowed-bots` and `allowed-actors` hold logins (separated by commas, spaces or
   newlines; a bot as `name` or `name[bot]`): an entry that is not one is exit 2 naming it.
2. A `pull_request_target` event from a fork (the head repository is not this one) is
   refused unless `allow-fork-pull-requests` is `true`.
3. Each actor (`GITHUB_ACTOR`, and `GITHUB_TRIGGERING_ACTOR` when it differs, the one who
   re-ran the job): a `[bot]` login runs only when listed in `allowed-bots` (or
   `allowed-actors`); a login in `allowed-actors` runs; any other needs `admin`, `maintain`
   or `write` permission on the repository, asked of the REST API with the job's token
   (`GET /repos/{owner}/{repo}/collaborators/{actor}/permission`).
4. A question the API does not answer (no token, HTTP errors, no answer) refuses the run:
   the check fails closed."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from typing import IO

from ..github_api import GitHub, GitHubError

# GitHub's logins: letters, digits and single hyphens, at most 39 characters; an app's
# bot account adds `[bot]`.
LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")
BOT = "[bot]"
WRITERS = frozenset({"admin", "maintain", "write"})
EXIT_REFUSED = 2


def escape_data(value: str) -> str:
    """GitHub's escaping of an annotation's text (as report/github.py's; not imported from
    there, so the check loads no report code)."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


class Refused(Exception):
    """The run may not start: the message is the annotation's text."""


def logins(field: str, text: str, *, bots: bool) -> frozenset[str]:
    """The logins of an `allowed-*` input, lower-cased (GitHub's logins ignore case);
    bots always with their `[bot]`. An entry that is no login is `Refused` naming FIELD."""
    found = set()
    for entry in re.split(r"[\s,]+", text.strip()):
        if not entry:
            continue
        name = entry[: -len(BOT)] if entry.endswith(BOT) else entry
        if not LOGIN.fullmatch(name):
            raise Refused(f"{field}: {entry!r} is not a GitHub login (letters, digits and hyphens, at most 39, optionally ending in [bot])")  # fmt: skip
        found.add((name + BOT if bots or entry.endswith(BOT) else name).lower())
    return frozenset(found)


def _event(environ: Mapping[str, str]) -> dict[str, object]:
    path = environ.get("GITHUB_EVENT_PATH", "")
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise Refused(f"cannot read the event (GITHUB_EVENT_PATH): {e}") from None
    return doc if isinstance(doc, dict) else {}


def _from_fork(event: Mapping[str, object], repo: str) -> bool:
    pr = event.get("pull_request")
    head = pr.get("head") if isinstance(pr, dict) else None
    head_repo = head.get("repo") if isinstance(head, dict) else None
    name = head_repo.get("full_name") if isinstance(head_repo, dict) else None
    # A deleted fork has no head repository: it is not this one either.
    return not isinstance(name, str) or name.lower() != repo.lower()


def check(environ: Mapping[str, str]) -> str:
    """Why the run may start (one line); `Refused` when it may not."""
    bots = logins("allowed-bots", environ.get("INPUT_ALLOWED_BOTS", ""), bots=True)
    actors = logins("allowed-actors", environ.get("INPUT_ALLOWED_ACTORS", ""), bots=False)
    forks = environ.get("INPUT_ALLOW_FORK_PULL_REQUESTS", "false").strip().lower()
    if forks not in ("true", "false"):
        raise Refused(f"allow-fork-pull-requests: {forks!r} is neither 'true' nor 'false'")
    repo = environ.get("GITHUB_REPOSITORY", "")
    if "/" not in repo:
        raise Refused("GITHUB_REPOSITORY is not set: the trigger cannot be checked")
    target = environ.get("GITHUB_EVENT_NAME", "") == "pull_request_target"
    if target and forks != "true" and _from_fork(_event(environ), repo):
        raise Refused("a pull_request_target event from a fork: the run would hold this repository's secrets; set allow-fork-pull-requests: true to allow it")  # fmt: skip
    who = [environ.get("GITHUB_ACTOR", "")]
    again = environ.get("GITHUB_TRIGGERING_ACTOR", "")
    if again and again.lower() != who[0].lower():
        who.append(again)
    if not who[0]:
        raise Refused("GITHUB_ACTOR is not set: the trigger cannot be checked")
    reasons = [_one(actor, bots, actors, environ, repo) for actor in who]
    return "; ".join(reasons)


def _one(
    actor: str, bots: frozenset[str], actors: frozenset[str], environ: Mapping[str, str], repo: str
) -> str:
    key = actor.lower()
    if key.endswith(BOT):
        if key in bots or key in actors:
            return f"{actor} is listed in allowed-bots"
        raise Refused(f"{actor} is a bot not listed in allowed-bots")
    if key in actors:
        return f"{actor} is listed in allowed-actors"
    token = environ.get("GITHUB_TOKEN", "")
    if not token:
        raise Refused(f"no github-token to check {actor}'s permission on {repo}")
    try:
        level = GitHub.from_env(environ, token).permission(actor)
    except GitHubError as e:
        raise Refused(f"cannot check {actor}'s permission on {repo}: {e}") from None
    if level not in WRITERS:
        raise Refused(f"{actor} has {level} permission on {repo}, not write (add them to allowed-actors to allow it)")  # fmt: skip
    return f"{actor} has {level} permission on {repo}"


def main(environ: Mapping[str, str], out: IO[str], err: IO[str]) -> int:
    try:
        why = check(environ)
    except Refused as e:
        err.write(f"::error title=orkeon: run refused::{escape_data(str(e))}\n")
        return EXIT_REFUSED
    out.write(f"orkeon: the trigger is trusted: {why}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(os.environ, sys.stdout, sys.stderr))
