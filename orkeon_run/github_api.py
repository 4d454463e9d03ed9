"""A small client for GitHub's REST API (docs/ci.md): the base address is `GITHUB_API_URL`
(GitHub sets it; `https://api.github.com` otherwise, GitHub Enterprise's own on a GHES
runner), the token the job's (`GITHUB_TOKEN`, given to the action as `github-token`).

Only what orkeon asks: a collaborator's permission (the action's trigger check) and one
pull-request comment created, found and edited (`--github-comment`). Every failure is a
`GitHubError` naming the request and the HTTP status (0 when nothing answered), never the
token. Standard library only, so the trigger check loads nothing else."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_API = "https://api.github.com"
TIMEOUT = 30.0  # seconds for one request: GitHub answers in well under one


class GitHubError(Exception):
    """A request that failed: `status` is the HTTP status, 0 when no answer came."""

    def __init__(self, what: str, status: int, detail: str = "") -> None:
        self.status = status
        tail = f": {detail}" if detail else ""
        super().__init__(f"{what}: {'HTTP ' + str(status) if status else 'no answer'}{tail}")


@dataclass(frozen=True)
class GitHub:
    """One repository's API (`repo` is `OWNER/NAME`)."""

    api: str
    token: str
    repo: str
    timeout: float = TIMEOUT

    @classmethod
    def from_env(cls, environ: Mapping[str, str], token: str) -> GitHub:
        api = (environ.get("GITHUB_API_URL") or DEFAULT_API).rstrip("/")
        return cls(api=api, token=token, repo=environ.get("GITHUB_REPOSITORY", ""))

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """The decoded JSON answer of METHOD PATH (None for an empty body)."""
        what = f"{method} {path}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.api + path, data=data, method=method)
        req.add_header("Accept", "application/vnd.github+json")
        req.add_header("X-GitHub-Api-Version", "2022-11-28")
        req.add_header("User-Agent", "orkeon")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as e:
            raise GitHubError(what, e.code, _message(e)) from None
        except (OSError, ValueError) as e:
            raise GitHubError(what, 0, str(e)) from None
        try:
            return json.loads(raw) if raw.strip() else None
        except ValueError:
            raise GitHubError(what, 200, "the answer is not JSON") from None

    def _repo_path(self) -> str:
        owner, _, name = self.repo.partition("/")
        return f"/repos/{urllib.parse.quote(owner, safe='')}/{urllib.parse.quote(name, safe='')}"

    def permission(self, login: str) -> str:
        """`admin`, `write`, `read` or `none`: LOGIN's permission on the repository (a login
        that is no collaborator is `none`; GitHub answers 404 for it)."""
        path = f"{self._repo_path()}/collaborators/{urllib.parse.quote(login, safe='')}/permission"
        try:
            answer = self.request("GET", path)
        except GitHubError as e:
            if e.status == 404:
                return "none"
            raise
        found = answer.get("permission") if isinstance(answer, dict) else None
        if not isinstance(found, str):
            raise GitHubError(f"GET {path}", 200, "the answer has no `permission`")
        return found

    def comments(self, issue: int) -> list[dict[str, Any]]:
        """The pull request's (an issue's) comments, every page."""
        found: list[dict[str, Any]] = []
        page = 1
        while True:
            path = f"{self._repo_path()}/issues/{issue}/comments?per_page=100&page={page}"
            batch = self.request("GET", path)
            if not isinstance(batch, list):
                raise GitHubError(f"GET {path}", 200, "the answer is not a list")
            found += [c for c in batch if isinstance(c, dict)]
            if len(batch) < 100:
                return found
            page += 1

    def create_comment(self, issue: int, body: str) -> int:
        """Post a comment on the pull request; its id."""
        answer = self.request(
            "POST", f"{self._repo_path()}/issues/{issue}/comments", {"body": body}
        )
        return _id(answer, "POST comment")

    def edit_comment(self, comment: int, body: str) -> None:
        self.request("PATCH", f"{self._repo_path()}/issues/comments/{comment}", {"body": body})


def _id(answer: Any, what: str) -> int:
    found = answer.get("id") if isinstance(answer, dict) else None
    if not isinstance(found, int):
        raise GitHubError(what, 200, "the answer has no `id`")
    return found


def _message(e: urllib.error.HTTPError) -> str:
    try:
        doc = json.loads(e.read() or b"{}")
    except (OSError, ValueError):
        return ""
    msg = doc.get("message") if isinstance(doc, dict) else None
    return str(msg)[:200] if msg else ""
