"""Test queries over HTTP, timed. HTTP because settings travel as URL parameters (old and new
servers parse them alike) and the body is read in large chunks and discarded, so no row becomes
a Python object: client overhead stays well under 1 ms (bench/bench_harness.py)."""

from __future__ import annotations

import dataclasses
import http.client
import math
import re
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from runner.serverconfig import LISTEN_HOST

READ_CHUNK = 1 << 20
# Slack on top of max_execution_time before the client gives up on a silent server: the
# server checks the limit between blocks, so a query may overrun it by a block's time.
MIN_CLIENT_TIMEOUT_SLACK_S = 5.0
MAX_CLIENT_TIMEOUT_SLACK_S = 15.0


def client_timeout(max_query_seconds: float) -> float:
    slack = min(MAX_CLIENT_TIMEOUT_SLACK_S, max(MIN_CLIENT_TIMEOUT_SLACK_S, max_query_seconds))
    return max_query_seconds + slack


_CODE = re.compile(rb"Code: (\d+)")
# After its 200 status line a server can still fail (a time limit, a memory limit, a bad
# value in a later block): it ends the body with the error instead of the rest of the result.
# A server that sends this header frames the error with its random tag,
# "__exception__\r\nTAG\r\n<error>\n<size> TAG\r\n__exception__\r\n", and may close the
# connection without ending the body; no result row can forge the tag.
EXCEPTION_TAG_HEADER = "X-ClickHouse-Exception-Tag"
EXCEPTION_MARK = b"__exception__\r\n"
# Servers without the header append the error as the body's last line, in their own words
# ("Code: 159, e.displayText() = DB::Exception: ..." or "Code: 159. DB::Exception: ...").
# There a result whose last row is such a line reads as that error.
_TRAILING_ERROR = re.compile(
    rb"(?:\A|\n)(Code: \d+(?:, e\.displayText\(\) = |\. )DB::Exception: [^\n]*)\n?\Z"
)
# How much of a body's end is kept to find such an error in: more than any error text.
TAIL_BYTES = 1 << 16
# A query's own connection (remote('127.0.0.{2,3}', ...)) to a loopback address other than
# the one chperf's servers listen on.
_REFUSED = re.compile(r"Connection refused \((127\.\d+\.\d+\.\d+):\d+\)")


@dataclass(frozen=True)
class QueryOutcome:
    elapsed: float  # seconds from sending the query to the last byte of the result
    error_code: int = 0  # ClickHouse error code; 0 when the query succeeded
    message: str = ""
    server_gone: bool = False  # refused, reset or timed out: the server may be dead or hung
    stale: bool = False  # failed before the server could have read the query
    timed_out: bool = False  # the client gave up waiting (its timeout, beyond the server's)
    limit: float = 0.0  # the time limit the execution ran under

    @property
    def ok(self) -> bool:
        return not self.message and not self.server_gone


class HttpExecutor:
    """One keep-alive HTTP connection to one server."""

    def __init__(self, port: int, max_query_seconds: float) -> None:
        self.port = port
        self.max_query_seconds = max_query_seconds
        self._connection: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _connect(self) -> http.client.HTTPConnection:
        if self._connection is None:
            self._connection = http.client.HTTPConnection(
                LISTEN_HOST, self.port, timeout=client_timeout(self.max_query_seconds)
            )
        return self._connection

    def execute(
        self,
        sql: str,
        query_id: str,
        settings: Mapping[str, str],
        limit: float | None = None,
        sink: Callable[[bytes], None] | None = None,
    ) -> QueryOutcome:
        """Run one statement under `limit` seconds (default: this executor's), enforced by the
        server (max_execution_time, whole seconds) and by the client's receive timeout.
        `sink` gets each chunk of a successful result as it arrives (runner/results.py)."""
        seconds = self.max_query_seconds if limit is None else limit
        params = {
            **settings,
            "query_id": query_id,
            "max_execution_time": str(max(1, math.ceil(seconds))),
        }
        target = "/?" + urllib.parse.urlencode(params)
        body = sql.encode("utf-8")
        reused = self._connection is not None
        outcome = self._attempt(target, body, seconds, sink)
        if outcome.server_gone and reused and outcome.stale:
            # The server closed an idle keep-alive connection before it saw this query:
            # the query never ran, so sending it again on a new connection is safe.
            outcome = self._attempt(target, body, seconds, sink)
        return outcome

    def _attempt(
        self, target: str, body: bytes, limit: float, sink: Callable[[bytes], None] | None = None
    ) -> QueryOutcome:
        connection = self._connect()
        timeout = client_timeout(limit)
        connection.timeout = timeout
        if connection.sock is not None:
            connection.sock.settimeout(timeout)
        start = time.perf_counter()
        sent = False
        try:
            connection.request("POST", target, body=body)
            sent = True
            response = connection.getresponse()
            tail, cut = _drain(response, sink if response.status == 200 else None)
            elapsed = time.perf_counter() - start
            failed = _failed_mid_result(tail, response) if response.status == 200 else None
            if cut is not None and failed is None:
                raise cut
        except (OSError, http.client.HTTPException) as e:
            self.close()
            stale = not sent or isinstance(e, http.client.RemoteDisconnected)
            return QueryOutcome(
                time.perf_counter() - start,
                message=f"{type(e).__name__}: {e}",
                server_gone=True,
                stale=stale,
                timed_out=sent and isinstance(e, TimeoutError),
                limit=limit,
            )
        if failed is not None:
            self.close()  # the server may close it anyway: the next query opens a new one
            return dataclasses.replace(failed, elapsed=elapsed, limit=limit)
        if response.status != 200:
            return dataclasses.replace(_error_outcome(elapsed, tail, response), limit=limit)
        return QueryOutcome(elapsed, limit=limit)


def _drain(
    response: http.client.HTTPResponse, sink: Callable[[bytes], None] | None = None
) -> tuple[bytes, http.client.IncompleteRead | None]:
    """Read the whole body in large chunks, keeping only its last TAIL_BYTES or more (for
    error text), and how it was cut short if the connection closed inside it."""
    previous = last = b""
    try:
        while chunk := response.read(READ_CHUNK):
            if sink is not None:
                sink(chunk)
            previous, last = last, chunk
    except http.client.IncompleteRead as e:
        return previous[-TAIL_BYTES:] + last + e.partial, e
    return previous[-TAIL_BYTES:] + last, None


def _failed_mid_result(tail: bytes, response: http.client.HTTPResponse) -> QueryOutcome | None:
    """The error a server put at the end of a 200 response, as an outcome."""
    late = late_error(tail, response.getheader(EXCEPTION_TAG_HEADER))
    if late is None:
        return None
    code, message = late
    return QueryOutcome(
        0.0, error_code=code, message=explained(f"{message} (after part of the result was sent)")
    )


def late_error(tail: bytes, tag: str | None) -> tuple[int, str] | None:
    """The error code and text a server put at the end of a 200 response's body `tail` in
    place of the rest of the result, or None when the body ends with the result. `tag`: the
    response's EXCEPTION_TAG_HEADER."""
    if tag:
        opening = EXCEPTION_MARK + tag.encode() + b"\r\n"
        at = tail.rfind(opening)
        if at < 0:
            return None
        text = tail[at + len(opening) :]
        closing = text.find(b" " + tag.encode() + b"\r\n")
        if closing >= 0:  # drop the size before the closing tag
            text = text[:closing].rstrip(b"0123456789")
    else:
        match = _TRAILING_ERROR.search(tail)
        if match is None:
            return None
        text = match.group(1)
    code = _CODE.search(text)
    return int(code.group(1)) if code else 0, text.decode("utf-8", errors="replace").strip()


def _error_outcome(elapsed: float, body: bytes, response: http.client.HTTPResponse) -> QueryOutcome:
    header = response.getheader("X-ClickHouse-Exception-Code")
    match = _CODE.search(body)
    code = int(header) if header and header.isdigit() else int(match.group(1)) if match else 0
    message = body.decode("utf-8", errors="replace").strip() or f"HTTP {response.status}"
    return QueryOutcome(elapsed, error_code=code, message=explained(message))


def explained(message: str) -> str:
    """A server's error, with why when the query itself connected to another loopback address
    (ClickHouse's distributed tests read remote('127.0.0.{2,3}', ...) to go over the network):
    chperf's servers listen on LISTEN_HOST only."""
    refused = {m.group(1) for m in _REFUSED.finditer(message)} - {LISTEN_HOST}
    if not refused:
        return message
    where = ", ".join(sorted(refused))
    return (
        f"the query connects to {where}, and chperf's servers listen on {LISTEN_HOST} only "
        f"(remote() to another loopback address cannot reach them): {message}"
    )
