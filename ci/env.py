"""The only place that reads CI environment variables, once, into a frozen `CiContext`."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_PULL_REF = re.compile(r"^refs/pull/(\d+)/")


@dataclass(frozen=True)
class CiContext:
    in_actions: bool = False
    repository: str = ""
    server_url: str = "https://github.com"
    api_url: str = "https://api.github.com"
    run_id: str = ""
    run_attempt: str = ""
    sha: str = ""
    ref: str = ""
    event_name: str = ""
    pr_number: int | None = None
    head_sha: str = ""
    base_sha: str = ""
    step_summary: Path | None = None
    output: Path | None = None
    history_url: str = ""
    token: str = field(default="", repr=False)

    @property
    def run_url(self) -> str:
        if not (self.repository and self.run_id):
            return ""
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"

    def upload_labels(self) -> dict[str, str]:
        labels = {
            "repository": self.repository,
            "event": self.event_name,
            "ref": self.ref,
            "sha": self.sha,
            "head_sha": self.head_sha,
            "base_sha": self.base_sha,
            "run_url": self.run_url,
            "pr": str(self.pr_number) if self.pr_number is not None else "",
        }
        return {k: v for k, v in labels.items() if v}


def from_environ(environ: Mapping[str, str]) -> CiContext:
    event = _event_payload(environ.get("GITHUB_EVENT_PATH", ""))
    pull = event.get("pull_request") if isinstance(event.get("pull_request"), dict) else {}
    assert isinstance(pull, dict)
    ref = environ.get("GITHUB_REF", "")
    return CiContext(
        in_actions=environ.get("GITHUB_ACTIONS") == "true",
        repository=environ.get("GITHUB_REPOSITORY", ""),
        server_url=environ.get("GITHUB_SERVER_URL", "https://github.com"),
        api_url=environ.get("GITHUB_API_URL", "https://api.github.com"),
        run_id=environ.get("GITHUB_RUN_ID", ""),
        run_attempt=environ.get("GITHUB_RUN_ATTEMPT", ""),
        sha=environ.get("GITHUB_SHA", ""),
        ref=ref,
        event_name=environ.get("GITHUB_EVENT_NAME", ""),
        pr_number=_pr_number(pull, ref),
        head_sha=str((pull.get("head") or {}).get("sha") or ""),
        base_sha=str((pull.get("base") or {}).get("sha") or ""),
        step_summary=_path(environ.get("GITHUB_STEP_SUMMARY", "")),
        output=_path(environ.get("GITHUB_OUTPUT", "")),
        history_url=environ.get("CHPERF_HISTORY_URL", ""),
        token=environ.get("GITHUB_TOKEN", ""),
    )


def _pr_number(pull: Mapping[str, Any], ref: str) -> int | None:
    number = pull.get("number")
    if isinstance(number, int):
        return number
    match = _PULL_REF.match(ref)
    return int(match.group(1)) if match else None


def _event_payload(path: str) -> dict[str, Any]:
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}  # no payload: the values derived from it stay empty
    return data if isinstance(data, dict) else {}


def _path(text: str) -> Path | None:
    return Path(text) if text else None
