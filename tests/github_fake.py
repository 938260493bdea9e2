"""GitHub's issue-comment API on 127.0.0.1, for the PR comment tests: list (paginated),
create, update; or GitHub's refusal of every write (403 to a fork's read-only token)."""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "test-token"
_LIST = re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$")
_ONE = re.compile(r"^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$")
# GitHub's answers: 403 to a read-only token (a fork's pull request), 502 when it is down.
_REFUSALS = {403: "Resource not accessible by integration", 502: "Server Error"}


@dataclass
class FakeGitHub:
    refuse_writes: int = 0  # an HTTP status every create and update gets instead; 0: none
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # by PR number
    requests: list[tuple[str, str]] = field(default_factory=list)
    url: str = ""
    _next_id: int = 1000

    def add(self, pr: int, body: str) -> int:
        self._next_id += 1
        self.comments.setdefault(pr, []).append({"id": self._next_id, "body": body})
        return self._next_id

    def answer(self, method: str, target: str, auth: str, body: Any) -> tuple[int, Any]:
        self.requests.append((method, target))
        if auth != f"Bearer {TOKEN}":
            return 401, {"message": "Bad credentials"}
        path, _, query = target.partition("?")
        listing, one = _LIST.match(path), _ONE.match(path)
        if method == "GET" and listing:
            params = urllib.parse.parse_qs(query)
            size, page = int(params["per_page"][0]), int(params["page"][0])
            found = self.comments.get(int(listing.group(2)), [])
            return 200, found[(page - 1) * size : page * size]
        if self.refuse_writes and method in ("POST", "PATCH"):
            return self.refuse_writes, {"message": _REFUSALS.get(self.refuse_writes, "Error")}
        if method == "POST" and listing:
            comment_id = self.add(int(listing.group(2)), body["body"])
            return 201, {"id": comment_id, "body": body["body"]}
        if method == "PATCH" and one:
            for comment in (c for cs in self.comments.values() for c in cs):
                if comment["id"] == int(one.group(2)):
                    comment["body"] = body["body"]
                    return 200, comment
        return 404, {"message": "Not Found"}


@contextmanager
def serving(github: FakeGitHub) -> Iterator[FakeGitHub]:
    """Serve `github` on a free port of 127.0.0.1 until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            auth = self.headers.get("Authorization", "")
            status, document = github.answer(self.command, self.path, auth, body)
            data = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _handle

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the test reads `requests`, not the log

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    github.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield github
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
