"""One PR comment per check: found again by its hidden marker and updated, never duplicated.
`GitHubApi` is narrow so that the find-or-create logic is tested without a network."""

from __future__ import annotations

import json
import urllib.request
from typing import Any, Protocol

from artifacts.errors import InfrastructureError

PAGE_SIZE = 100
MAX_PAGES = 30  # 3,000 comments: beyond that we stop looking and post a new one
TIMEOUT_S = 30


class GitHubApi(Protocol):
    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any: ...


class UrllibGitHub:
    def __init__(self, api_url: str, token: str) -> None:
        self.api_url = api_url.rstrip("/")
        self._token = token

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.api_url + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self._token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                return json.loads(response.read() or b"null")
        except OSError as e:
            raise InfrastructureError(f"GitHub API {method} {path} failed: {e}") from e


def find_comment(api: GitHubApi, repository: str, pr_number: int, marker: str) -> int | None:
    for page in range(1, MAX_PAGES + 1):
        path = f"/repos/{repository}/issues/{pr_number}/comments?per_page={PAGE_SIZE}&page={page}"
        comments = api.request("GET", path)
        for comment in comments or []:
            if marker in str(comment.get("body", "")):
                return int(comment["id"])
        if not comments or len(comments) < PAGE_SIZE:
            return None
    return None


def upsert_comment(api: GitHubApi, repository: str, pr_number: int, body: str, marker: str) -> str:
    """Update the comment holding `marker`, or create it; returns "updated" or "created"."""
    if marker not in body:
        body = f"{marker}\n{body}"
    existing = find_comment(api, repository, pr_number, marker)
    if existing is not None:
        api.request("PATCH", f"/repos/{repository}/issues/comments/{existing}", {"body": body})
        return "updated"
    api.request("POST", f"/repos/{repository}/issues/{pr_number}/comments", {"body": body})
    return "created"
