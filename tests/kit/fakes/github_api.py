"""A fake of GitHub's REST API on 127.0.0.1 (`GITHUB_API_URL`): a collaborator's
permission, and a pull request's comments, created, listed and edited as the real API
does (a wrong token is 401; an unknown path 404). Tests set `permissions` (login →
level; a login not there is no collaborator: 404) and read `comments` and `edits`
(every PATCH, in order); `wait_for(pred)` blocks until a recorded state satisfies it."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

from .server import FakeServer, Recorded, Reply

PERMISSION = re.compile(r"/repos/([^/]+)/([^/]+)/collaborators/([^/]+)/permission")
COMMENTS = re.compile(r"/repos/([^/]+)/([^/]+)/issues/(\d+)/comments")
COMMENT = re.compile(r"/repos/([^/]+)/([^/]+)/issues/comments/(\d+)")


class GitHubFake(FakeServer):
    def __init__(self, token: str = "ghs_test", repo: str = "acme/app") -> None:
        super().__init__(check=self._answer)
        self.token, self.repo = token, repo
        self.permissions: dict[str, str] = {}
        self.comments: dict[int, dict[str, Any]] = {}  # id → {"issue", "body"}
        self.edits: list[tuple[int, str]] = []
        self.creates: list[tuple[int, str]] = []
        self.written: list[float] = []  # time.monotonic() of each create and edit, received
        self.fail_status = 0  # answer every request with this status (a broken API)
        self._changed = threading.Condition()
        self._next = 1000

    def add_comment(self, issue: int, body: str) -> int:
        with self._changed:
            self._next += 1
            self.comments[self._next] = {"issue": issue, "body": body}
            return self._next

    def wait_for(self, pred: Callable[[GitHubFake], bool], timeout: float = 60.0) -> None:
        # The timeout only ends a test that failed; a passing one returns at the event.
        with self._changed:
            assert self._changed.wait_for(lambda: pred(self), timeout), "not seen in time"

    def _answer(self, req: Recorded) -> Reply:
        if self.fail_status:
            return Reply(self.fail_status, {"message": "Server Error"})
        if req.headers.get("authorization") != f"Bearer {self.token}":
            return Reply(401, {"message": "Bad credentials"})
        path = req.path.split("?")[0]
        owner_repo = "/".join(path.split("/")[2:4])
        if owner_repo != self.repo:
            return Reply(404, {"message": "Not Found"})
        with self._changed:
            try:
                return self._route(req, path)
            finally:
                self._changed.notify_all()

    def _route(self, req: Recorded, path: str) -> Reply:
        if (m := PERMISSION.fullmatch(path)) and req.method == "GET":
            level = self.permissions.get(m.group(3))
            if level is None:
                return Reply(404, {"message": "Not Found"})
            return Reply(200, {"permission": level, "user": {"login": m.group(3)}})
        if (m := COMMENTS.fullmatch(path)) and req.method == "GET":
            issue = int(m.group(3))
            mine = [{"id": i, "body": c["body"]} for i, c in sorted(self.comments.items())
                    if c["issue"] == issue]  # fmt: skip
            return Reply(200, mine)
        if (m := COMMENTS.fullmatch(path)) and req.method == "POST":
            self._next += 1
            self.comments[self._next] = {"issue": int(m.group(3)), "body": req.body["body"]}
            self.creates.append((self._next, req.body["body"]))
            self.written.append(time.monotonic())
            return Reply(201, {"id": self._next, "body": req.body["body"]})
        if (m := COMMENT.fullmatch(path)) and req.method == "PATCH":
            cid = int(m.group(3))
            if cid not in self.comments:
                return Reply(404, {"message": "Not Found"})
            self.comments[cid]["body"] = req.body["body"]
            self.edits.append((cid, req.body["body"]))
            self.written.append(time.monotonic())
            return Reply(200, {"id": cid, "body": req.body["body"]})
        return Reply(404, {"message": "Not Found"})
