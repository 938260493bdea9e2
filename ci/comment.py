"""One PR comment per check: found again by its hidden marker and updated, never duplicated.
`GitHubApi` is narrow so that the find-or-create logic is tested without a network.

A token that may not comment (a pull request from a fork gets a read-only one) is not a
failure of the check: the caller writes the comment into the job summary instead.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Protocol

from artifacts.console import console_text
from artifacts.errors import InfrastructureError
from ci.check import markdown_cell

PAGE_SIZE = 100
MAX_PAGES = 30  # 3,000 comments: beyond that we stop looking and post a new one
TIMEOUT_S = 30
# 401: no or a bad token; 403: a token without write access (forks, `permissions:`);
# 404: GitHub's answer for a private repository the token cannot see.
PERMISSION_CODES = frozenset({401, 403, 404})
MAX_ERROR_CHARS = 300  # of GitHub's answer, in the message


class NoPermission(InfrastructureError):
    """The token may not read or write the PR's comments; `status` is GitHub's answer, 0
    when there is no token."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


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
                "Content-Type": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as e:
            answer = console_text(_error_text(e), MAX_ERROR_CHARS)
            message = f"GitHub API {method} {path}: HTTP {e.code} {answer}".rstrip()
            if e.code in PERMISSION_CODES:
                raise NoPermission(message, e.code) from e
            raise InfrastructureError(message) from e
        except (OSError, ValueError) as e:
            raise InfrastructureError(f"GitHub API {method} {path} failed: {e}") from e


def _error_text(error: urllib.error.HTTPError) -> str:
    """GitHub's `message` from the error's body, else the HTTP reason."""
    try:
        document = json.loads(error.read() or b"null")
    except (OSError, ValueError):
        document = None
    if isinstance(document, dict) and isinstance(document.get("message"), str):
        return str(document["message"])
    return str(error.reason or "")


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


def fallback_summary(body: str, reason: str) -> str:
    """The job summary's text when the comment could not be posted."""
    return f"> The PR comment was not posted: {markdown_cell(reason)}. It says:\n\n{body}"
