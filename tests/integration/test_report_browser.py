"""The report in a real browser: headless Chromium over the DevTools protocol.

Loads report.html from disk (file://, as a CI artifact is opened), fails on any console error
or uncaught exception, sorts and filters the all-queries table by clicking and typing, and
saves a screenshot in the test's temporary directory.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from report import render_report, synthetic

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
STARTUP_SECONDS = 30
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
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
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
