"""One timed execution of a query over each of a server's two interfaces, on a fresh
connection: the native protocol (clickhouse-driver, the TCP port) and HTTP (http.client, the
HTTP port). Each gives the same phases (docs/protocols.md):

- connect: opening the connection; native includes the Hello exchange, HTTP has none;
- first_byte: from sending the query to the first result data: native, the first data block
  that holds rows; HTTP, the first byte of the response body;
- transfer: from sending the query to the end of the result (native: EndOfStream; HTTP: the
  end of the body), everything read and decoded as the client does (native: clickhouse-driver
  decodes each block into columns; HTTP: the body is read in chunks and discarded);
- bytes: what the client's socket received between sending the query and the end of the
  result, as the kernel counts it (TCP_INFO tcpi_bytes_received): headers, framing and
  compression included, the same for both interfaces.
"""

from __future__ import annotations

import contextlib
import gc
import http.client
import math
import re
import socket
import struct
import time
import urllib.parse
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from clickhouse_driver import Client
from clickhouse_driver.errors import Error as DriverError
from clickhouse_driver.protocol import ServerPacketTypes

from runner.executor import EXCEPTION_TAG_HEADER, READ_CHUNK, client_timeout, late_error
from runner.serverconfig import LISTEN_HOST

NATIVE = "native"
HTTP = "http"
PROTOCOLS = (NATIVE, HTTP)

# Common HTTP clients (curl --compressed, browsers, language drivers) offer compressed
# responses: whether the result travels compressed is then the server's decision
# (enable_http_compression), which is what a patch or a config change may alter.
ACCEPT_ENCODING = "gzip, deflate"
COMPRESSED = ("gzip", "deflate")
CONNECT_TIMEOUT_S = 10.0
# struct tcp_info (linux/tcp.h): tcpi_bytes_received is the u64 at this offset (kernel >= 4.1).
_TCP_INFO_BYTES_RECEIVED = 128
_TCP_INFO_SIZE = 256
_CODE = re.compile(rb"Code: (\d+)")
# A server that fails after the status line ends the body with its error (runner/executor.py
# late_error): looked for in the last bytes of an uncompressed body.
MAX_ERROR_BYTES = 4096


@dataclass(frozen=True)
class Timing:
    connect: float  # seconds
    first_byte: float  # seconds from sending the query
    transfer: float  # seconds from sending the query to the end of the result
    bytes: int  # received on the socket for the query; -1 when the kernel does not say
    blocks: int  # native: data blocks with rows; HTTP: 0


@dataclass(frozen=True)
class ProtocolOutcome:
    timing: Timing | None  # None when the execution failed
    error_code: int = 0  # ClickHouse's error code, 0 if none
    message: str = ""
    unreachable: bool = False  # the interface did not accept a connection

    @property
    def ok(self) -> bool:
        return self.timing is not None


def received_bytes(sock: socket.socket | None) -> int:
    """Bytes the kernel has received on this TCP socket; -1 when it does not say."""
    if sock is None:
        return -1
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_SIZE)
    except OSError:
        return -1
    end = _TCP_INFO_BYTES_RECEIVED + 8
    if len(info) < end:
        return -1
    return int(struct.unpack_from("<Q", info, _TCP_INFO_BYTES_RECEIVED)[0])


def _difference(before: int, after: int) -> int:
    return after - before if before >= 0 and after >= 0 else -1


def run_native(
    port: int, sql: str, query_id: str, settings: Mapping[str, str], limit: float
) -> ProtocolOutcome:
    """One execution over the native protocol on a new connection, closed afterwards."""
    client = Client(
        host=LISTEN_HOST,
        port=port,
        connect_timeout=CONNECT_TIMEOUT_S,
        send_receive_timeout=client_timeout(limit),
        sync_request_timeout=CONNECT_TIMEOUT_S,
        # bytes, not str: the client decodes no more than it must
        settings={**settings, "max_execution_time": _whole_seconds(limit), "strings_as_bytes": 1},
    )
    connection = client.connection
    try:
        start = time.perf_counter()
        try:
            connection.connect()
        except (OSError, DriverError) as e:
            return ProtocolOutcome(None, message=_driver_message(e), unreachable=True)
        connected = time.perf_counter()
        with _no_collection():
            return _native_query(connection, sql, query_id, connected - start)
    except (OSError, DriverError, EOFError) as e:
        return ProtocolOutcome(None, getattr(e, "code", 0) or 0, _driver_message(e))
    except Exception as e:  # the driver's decoders on a type they do not read, say
        return ProtocolOutcome(None, message=f"clickhouse-driver: {_driver_message(e)}")
    finally:
        client.disconnect()


def _native_query(connection: Any, sql: str, query_id: str, connect: float) -> ProtocolOutcome:
    before = received_bytes(connection.socket)
    sent = time.perf_counter()
    connection.send_query(sql, query_id=query_id)
    connection.send_external_tables(None)
    first: float | None = None
    blocks = 0
    while True:
        packet = connection.receive_packet()
        kind = packet.type
        if kind == ServerPacketTypes.EXCEPTION:
            error = packet.exception
            code = int(getattr(error, "code", 0) or 0)
            return ProtocolOutcome(None, code, _driver_message(error))
        if kind == ServerPacketTypes.DATA and packet.block is not None and packet.block.num_rows:
            blocks += 1
            if first is None:
                first = time.perf_counter() - sent
        if kind == ServerPacketTypes.END_OF_STREAM:
            break
    transfer = time.perf_counter() - sent
    after = received_bytes(connection.socket)
    count = _difference(before, after)
    first_byte = transfer if first is None else first
    return ProtocolOutcome(Timing(connect, first_byte, transfer, count, blocks))


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """No garbage collection pause inside a timing: decoding a large result allocates a list
    per column and block, and a collection then lands on a random run."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _driver_message(error: BaseException) -> str:
    """The error's own words, without the server's stack trace (old servers send one)."""
    text = str(getattr(error, "message", "") or error).split("Stack trace:")[0].strip()
    return f"{type(error).__name__}: {text}"


def _whole_seconds(limit: float) -> str:
    """max_execution_time is whole seconds; never 0, which means no limit."""
    return str(max(1, math.ceil(limit)))


def run_http(
    port: int, sql: str, query_id: str, settings: Mapping[str, str], limit: float
) -> ProtocolOutcome:
    """One execution over HTTP on a new connection, closed afterwards."""
    params = {**settings, "query_id": query_id, "max_execution_time": _whole_seconds(limit)}
    target = "/?" + urllib.parse.urlencode(params)
    connection = http.client.HTTPConnection(LISTEN_HOST, port, timeout=CONNECT_TIMEOUT_S)
    try:
        start = time.perf_counter()
        try:
            connection.connect()
        except OSError as e:
            return ProtocolOutcome(None, message=f"{type(e).__name__}: {e}", unreachable=True)
        connect = time.perf_counter() - start
        assert connection.sock is not None  # connect() succeeded
        connection.sock.settimeout(client_timeout(limit))
        with _no_collection():
            return _http_query(connection, target, sql.encode("utf-8"), connect)
    except (OSError, http.client.HTTPException) as e:
        return ProtocolOutcome(None, message=f"{type(e).__name__}: {e}")
    finally:
        connection.close()


def _http_query(
    connection: http.client.HTTPConnection, target: str, body: bytes, connect: float
) -> ProtocolOutcome:
    before = received_bytes(connection.sock)
    sent = time.perf_counter()
    connection.request("POST", target, body=body, headers={"Accept-Encoding": ACCEPT_ENCODING})
    response = connection.getresponse()
    chunk = response.read1(READ_CHUNK)
    first = time.perf_counter() - sent
    tail = b""
    cut: http.client.IncompleteRead | None = None
    try:
        while chunk:
            tail = (tail + chunk)[-MAX_ERROR_BYTES:]
            chunk = response.read1(READ_CHUNK)
    except http.client.IncompleteRead as e:  # a modern server's late error may end it so
        tail, cut = (tail + e.partial)[-MAX_ERROR_BYTES:], e
    transfer = time.perf_counter() - sent
    after = received_bytes(connection.sock)
    if response.status != 200:
        return _http_error(response, tail)
    late = late_error(tail, response.getheader(EXCEPTION_TAG_HEADER))
    if late is not None:  # the server failed after it had sent the status and some rows
        return ProtocolOutcome(None, *late)
    if cut is not None and response.getheader("Content-Encoding", "") in COMPRESSED:
        return ProtocolOutcome(
            None,
            message=f"{type(cut).__name__}: {cut}: the server closed the connection inside a "
            "compressed result: it failed after sending part of it (its error is inside the "
            "compressed body) or it stopped",
        )
    if cut is not None:
        raise cut
    return ProtocolOutcome(Timing(connect, first, transfer, _difference(before, after), 0))


def _http_error(response: http.client.HTTPResponse, body: bytes) -> ProtocolOutcome:
    header = response.getheader("X-ClickHouse-Exception-Code")
    match = _CODE.search(body)
    code = int(header) if header and header.isdigit() else int(match.group(1)) if match else 0
    if response.getheader("Content-Encoding", "") in COMPRESSED:
        with contextlib.suppress(zlib.error):  # the whole short error text, compressed
            body = zlib.decompress(body, zlib.MAX_WBITS | 32)
    message = body.decode("utf-8", errors="replace").strip() or f"HTTP {response.status}"
    return ProtocolOutcome(None, code, message)


RUNNERS = {NATIVE: run_native, HTTP: run_http}


def execute(
    protocol: str, port: int, sql: str, query_id: str, settings: Mapping[str, str], limit: float
) -> ProtocolOutcome:
    return RUNNERS[protocol](port, sql, query_id, settings, limit)
