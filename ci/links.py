"""Where the PR comment, the job summary and the annotations point: the report artifact, the
hosted report with each query's detail page, and the CI run.

An artifact is a zip to download, so nothing can point inside it; a query's own link needs the
merged directory served somewhere (`--hosted-report URL`, the URL of the directory that holds
report.html). Without one, the links lead to the artifact and name the page to open.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

from artifacts.errors import ChperfError
from report import display

REPORT_PAGE = "report.html"
_SCHEMES = ("https", "http")
# Kept as they are in a URL; everything else (spaces, parentheses, quotes, <, >) is
# percent-encoded so that the URL stays one Markdown link target and one word.
_URL_SAFE = ":/?#[]@!$&'*+,;=%~-._"


@dataclass(frozen=True)
class ReportLinks:
    artifact_url: str = ""  # the chperf-report artifact
    hosted_url: str = ""  # the served merged directory, ending in "/"
    run_url: str = ""  # the workflow run

    @property
    def report(self) -> str:
        """The report page itself when it is served, else ""."""
        return self.hosted_url + REPORT_PAGE if self.hosted_url else ""

    def query(self, test: str, query_index: int) -> str:
        """A query's detail page when the report is served, else ""."""
        if not self.hosted_url:
            return ""
        return self.hosted_url + display.detail_href(test, query_index)


def report_links(artifact_url: str = "", hosted_url: str = "", run_url: str = "") -> ReportLinks:
    """Checked links: each "" or an http(s) URL. The hosted URL names a directory; a trailing
    /report.html is taken off, so either form may be passed."""
    hosted = _url(hosted_url, "--hosted-report")
    if hosted.endswith("/" + REPORT_PAGE):
        hosted = hosted[: -len(REPORT_PAGE)]
    if hosted and not hosted.endswith("/"):
        hosted += "/"
    return ReportLinks(
        artifact_url=_url(artifact_url, "--report-url"),
        hosted_url=hosted,
        run_url=_url(run_url, "--run-url"),
    )


def _url(text: str, flag: str) -> str:
    text = text.strip()
    if not text:
        return ""
    parsed = urllib.parse.urlsplit(text)
    if parsed.scheme not in _SCHEMES or not parsed.netloc:
        raise ChperfError(
            f"{flag} {text!r}: expected an http:// or https:// URL",
            hint="pass the URL of the artifact, the served report directory or the run",
        )
    return urllib.parse.quote(text, safe=_URL_SAFE)
