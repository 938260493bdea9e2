"""status.json and summary.md: the PR check's outcome (docs/formats.md "status.json and
summary.md"), each written atomically. Format history of status.json: 1 -- first version."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from artifacts.files import write_atomically

STATUS_SCHEMA_VERSION = 1
STATUS_JSON = "status.json"
SUMMARY_MD = "summary.md"
DESCRIPTION_LIMIT = 140  # GitHub's limit for a commit status description


@dataclass(frozen=True)
class CheckStatus:
    status: str  # success, failure, incomplete, error
    exit_code: int
    description: str
    counts: tuple[tuple[str, int], ...]
    changed: int
    report_url: str
    run_url: str


def write_status(out: Path, status: CheckStatus, markdown: str) -> None:
    write_atomically(out / SUMMARY_MD, markdown)
    document = {
        "schema_version": STATUS_SCHEMA_VERSION,
        "status": status.status,
        "exit_code": status.exit_code,
        "description": status.description[:DESCRIPTION_LIMIT],
        "counts": dict(status.counts),
        "changed": status.changed,
        "report_url": status.report_url,
        "run_url": status.run_url,
    }
    text = json.dumps(document, indent=2, ensure_ascii=False)
    write_atomically(out / STATUS_JSON, text + "\n")
