"""The report in a real browser: headless Chromium over the DevTools protocol.

Loads report.html and its details pages from disk (file://, as a CI artifact is opened), fails
on any console error or uncaught exception, sorts and filters the all-queries table by clicking
and typing. On the reports of two real runs (the installed server against itself with the
max_block_size overlay, and an A/A run) it checks that the answer is in the first 1366x768
viewport, that every link and anchor of every page resolves and that every query has its
details page; the first viewport of the run with changes is saved as a screenshot.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from report import render_report, synthetic
from tests.conftest import DATA, REPO, engine_binary, run_chperf

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
STARTUP_SECONDS = 30
VIEWPORT = (1366, 768)  # the first screen of a laptop: the answer has to be in it
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


class DevTools:
    """A minimal Chrome DevTools protocol client for one page."""

    def __init__(self, websocket: ClientConnection) -> None:
        self._ws = websocket
        self._ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        number = next(self._ids)
        self._ws.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv(timeout=STARTUP_SECONDS))
            if message.get("id") == number:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def wait_for(self, method: str) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                return event
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            message: dict[str, Any] = json.loads(self._ws.recv(timeout=STARTUP_SECONDS))
            self.events.append(message)
            if message.get("method") == method:
                return message
        raise AssertionError(f"no {method} within {STARTUP_SECONDS} s")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, path: Path) -> None:
        """Load a page from disk and wait until it is loaded."""
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        self.call("Page.navigate", url=path.as_uri())
        self.wait_for("Page.loadEventFired")

    def errors(self) -> list[str]:
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(json.dumps(params["exceptionDetails"]))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(json.dumps(params.get("args")))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append(params["entry"].get("text", ""))
        return found


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[DevTools]:
    assert CHROMIUM is not None
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    # Chromium's own scratch directories (org.chromium.Chromium.*) outlive it in /tmp, so it
    # gets a TMPDIR of its own, removed after it. Short: Chromium aborts when its socket
    # paths there pass the 108-byte limit, as they do under tmp_path.
    scratch = Path(tempfile.mkdtemp(prefix="chperf-chromium-"))
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--remote-debugging-port=0",  # Chromium picks a free port, written to a file below
        "--window-size=1400,1000",
        "about:blank",
    ]
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    try:
        port = _devtools_port(profile / "DevToolsActivePort", process)
        url = _page_websocket(port)
        with connect(url, max_size=None, open_timeout=STARTUP_SECONDS) as websocket:
            yield DevTools(websocket)
    finally:
        # Chromium's helper processes share its process group, started for it alone.
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        shutil.rmtree(scratch, ignore_errors=True)


def _devtools_port(path: Path, process: subprocess.Popen[bytes]) -> int:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"chromium exited with code {process.returncode}")
        if path.exists() and path.read_text().strip():
            return int(path.read_text().splitlines()[0])
        time.sleep(0.1)
    raise AssertionError(f"chromium did not write {path} within {STARTUP_SECONDS} s")


def _page_websocket(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
        targets = json.loads(response.read())
    pages = [t for t in targets if t.get("type") == "page"]
    assert pages, f"no page target in {targets}"
    return str(pages[0]["webSocketDebuggerUrl"])


DIFF_COLUMN = """
(() => {
  const table = document.getElementById("all-table");
  const index = [...table.tHead.rows[0].cells].findIndex(c => c.textContent.trim() === "Diff");
  return [...table.tBodies[0].rows].map(r => r.cells[index].getAttribute("data-sort"));
})()
"""
CLICK_DIFF = """
[...document.getElementById("all-table").tHead.rows[0].cells]
  .find(c => c.textContent.trim() === "Diff").click()
"""
FILTER = """
(() => {
  const box = document.getElementById("filter-text");
  box.value = "numbers_mt";
  box.dispatchEvent(new Event("input"));
  const rows = [...document.getElementById("all-table").tBodies[0].rows];
  return [rows.filter(r => !r.hidden).length, document.getElementById("filter-count").textContent];
})()
"""


def _numbers(column: list[str]) -> list[float]:
    return [float(v) for v in column if v]


def test_report_loads_from_disk_without_console_errors_and_its_table_sorts(
    tmp_path: Path, browser: DevTools
) -> None:
    out = tmp_path / "out"
    synthetic.write_small_run(out)
    report = render_report(out).path
    browser.call("Runtime.enable")
    browser.call("Log.enable")
    browser.call("Page.enable")
    browser.call("Page.navigate", url=report.as_uri())
    browser.wait_for("Page.loadEventFired")

    assert browser.evaluate("document.querySelectorAll('#all-table tbody tr').length") == 7
    before = browser.evaluate(DIFF_COLUMN)
    assert _numbers(before) != sorted(_numbers(before))  # the test would prove nothing else
    browser.evaluate(CLICK_DIFF)
    ascending = browser.evaluate(DIFF_COLUMN)
    assert _numbers(ascending) == sorted(_numbers(before))
    assert ascending[-2:] == ["", ""]  # partial and error have no diff: sorted last
    browser.evaluate(CLICK_DIFF)
    descending = _numbers(browser.evaluate(DIFF_COLUMN))
    assert descending == sorted(_numbers(before), reverse=True)

    shown, label = browser.evaluate(FILTER)
    assert (shown, label) == (1, "1 of 7 queries")

    shot = browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    png = base64.b64decode(shot["data"])
    (tmp_path / "report.png").write_bytes(png)
    assert png.startswith(b"\x89PNG")
    assert browser.errors() == []


@pytest.fixture(scope="module")
def change_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The installed server against itself with max_block_size 8192 on the patched side:
    filters over a MergeTree table get 10-15% slower (tests/data/report_browser); profiled,
    so that the pages link flame graphs. Adaptive run counts: a fixed 15 left a +11% change
    short of its level on one server process set on a busy machine, the stop rule runs such a
    query on (up to 24 runs a side)."""
    return _real_run(
        tmp_path_factory.mktemp("change") / "out",
        "--patched-config", str(REPO / "overlays" / "max_block_size_8192"),
        "--profile-all", "--profile-seconds", "1",
    )  # fmt: skip


@pytest.fixture(scope="module")
def aa_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _real_run(tmp_path_factory.mktemp("aa") / "out", "--runs", "7", "--aa", "--no-profile")


def _real_run(out: Path, *options: str) -> Path:
    server = engine_binary("18.16")
    side: tuple[str, ...] = () if "--aa" in options else ("--patched", str(server))
    result = run_chperf(
        ["run", "--tests", str(DATA / "report_browser"), "--out", str(out),
         "--reference", str(server), *side, *options]
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    return out


PAGE = """
(() => {
  const ids = [...document.querySelectorAll("[id]")].map(e => e.id);
  const links = [...document.querySelectorAll("[href]")].map(e => e.getAttribute("href"));
  const sections = {};
  document.querySelectorAll("article.details").forEach(a => {
    sections[a.id] = a.querySelector("h2").textContent; });
  return {ids: ids, links: links, sections: sections};
})()
"""
FIRST_SCREEN = """
(() => {
  const box = e => { const r = e.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  const row = document.querySelector("#changes-table tbody tr");
  return {
    scroll: window.scrollY, width: window.innerWidth, height: window.innerHeight,
    status: box(document.getElementById("status")),
    counts: box(document.getElementById("counts")),
    changes: box(document.querySelector("#changes h2")),
    row: row ? box(row) : null,
    effect: row ? box(row.cells[2]) : null,
  };
})()
"""
QUERY_ROWS = """
[...document.getElementById("all-table").tBodies[0].rows].map(r => ({
  test: r.cells[0].textContent, index: r.cells[1].querySelector("a").textContent,
  href: r.cells[1].querySelector("a").getAttribute("href")}))
"""


def _within(box: dict[str, float], width: int, height: int) -> bool:
    return (
        box["top"] >= 0 and box["bottom"] <= height and box["left"] >= 0 and box["right"] <= width
    )


def _check_pages(browser: DevTools, report: Path) -> dict[str, Any]:
    """Open the report and every page it links; every link and anchor of each resolves, and
    each query's row leads to its own details page. The report's first screen, measured."""
    report = report.resolve()
    browser.call("Emulation.setDeviceMetricsOverride", width=VIEWPORT[0], height=VIEWPORT[1],
                 deviceScaleFactor=1, mobile=False)  # fmt: skip
    browser.open(report)
    first = browser.evaluate(FIRST_SCREEN)
    rows = browser.evaluate(QUERY_ROWS)
    pages: dict[Path, dict[str, Any]] = {report: browser.evaluate(PAGE)}
    for row in rows:
        target, _, section = row["href"].partition("#")
        page = (report.parent / target).resolve()
        assert page.parent.name == "details" and page.is_file() and section, row
        if page not in pages:
            browser.open(page)
            pages[page] = browser.evaluate(PAGE)
        heading = pages[page]["sections"].get(section, "")
        assert f"{row['test']} · query {row['index']}" in heading, row
    for page, found in pages.items():
        ids = found["ids"]
        assert len(ids) == len(set(ids)), f"{page.name}: duplicate ids"
        for link in found["links"]:
            assert not urllib.parse.urlparse(link).scheme, f"{page.name}: {link} is not local"
            target, _, fragment = link.partition("#")
            file = (page.parent / urllib.parse.unquote(target)).resolve() if target else page
            assert file.is_file(), f"{page.name}: {link}"
            if fragment and file.suffix == ".html":
                assert fragment in pages[file]["ids"], f"{page.name}: {link}"
    assert browser.errors() == []
    return {"first": first, "rows": rows, "pages": len(pages)}


def _check_run(browser: DevTools, run: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """_check_pages over a run's report, with a row in the report for every query of its
    summary.json; the check and the summary."""
    for domain in ("Runtime", "Log", "Page"):
        browser.call(f"{domain}.enable")
    checked = _check_pages(browser, run / "report.html")
    summary: dict[str, Any] = json.loads((run / "summary.json").read_text())
    assert len(checked["rows"]) == len(summary["queries"])
    return checked, summary


def test_real_change_report_leads_with_the_changes_and_every_page_resolves(
    tmp_path: Path, browser: DevTools, change_run: Path
) -> None:
    checked, summary = _check_run(browser, change_run)
    changed = [q for q in summary["queries"] if q["verdict"] in ("slower", "faster")]
    assert changed, "the max_block_size overlay changed no query: nothing to look at"
    first = checked["first"]
    assert first["scroll"] == 0 and (first["width"], first["height"]) == VIEWPORT
    for part in ("status", "counts", "row", "effect"):
        assert _within(first[part], *VIEWPORT), (part, first)

    browser.open(change_run / "report.html")
    shot = browser.call("Page.captureScreenshot", format="png")
    png = base64.b64decode(shot["data"])
    assert png.startswith(b"\x89PNG")
    (tmp_path / "report-first-viewport.png").write_bytes(png)
    assert browser.errors() == []


def test_real_aa_report_says_so_on_the_first_screen_and_every_page_resolves(
    browser: DevTools, aa_run: Path
) -> None:
    checked, _ = _check_run(browser, aa_run)
    first = checked["first"]
    for part in ("status", "counts", "changes"):
        assert _within(first[part], *VIEWPORT), (part, first)
    if first["row"] is not None:  # an A/A may find a change; it is then on the first screen
        assert _within(first["row"], *VIEWPORT), first
