"""The server's error text as chperf records it (runner/executor.py)."""

from __future__ import annotations

from runner.executor import explained, late_error

# 26.9's answer to remote('127.0.0.{2,3}', ...) when nothing listens on 127.0.0.2.
MODERN = (
    "Code: 519. DB::NetException: All attempts to get table structure failed. Log: \n\n"
    "Code: 279. DB::NetException: All connection tries failed. Log: \n\n"
    "Code: 210. DB::NetException: Connection refused (127.0.0.2:38865). (NETWORK_ERROR) "
    "(version 26.9.2.1)\nCode: 210. DB::NetException: Connection refused (127.0.0.3:38865). "
    "(NETWORK_ERROR) (version 26.9.2.1)\n"
)


def test_a_refused_connection_to_another_loopback_address_says_why() -> None:
    message = explained(MODERN)
    assert message.startswith(
        "the query connects to 127.0.0.2, 127.0.0.3, and chperf's servers listen on "
        "127.0.0.1 only (remote() to another loopback address cannot reach them): Code: 519."
    )
    assert message.endswith(MODERN)  # the server's own text, whole


def test_other_errors_are_kept_as_the_server_wrote_them() -> None:
    own = "Code: 210. DB::NetException: Connection refused (127.0.0.1:9000). (NETWORK_ERROR)"
    assert explained(own) == own  # chperf's own address: nothing to explain
    other = "Code: 60. DB::Exception: Table default.t does not exist. (UNKNOWN_TABLE)"
    assert explained(other) == other
    assert explained("") == ""


TAG = "ljwmmgaaytyfegyj"
TIMEOUT = (
    "Code: 159. DB::Exception: Timeout exceeded: elapsed 302.332 ms, maximum: 300.000 ms. "
    "(TIMEOUT_EXCEEDED) (version 26.9.2.1)"
)


def test_a_late_error_framed_by_the_exception_tag_is_found() -> None:
    """26.9's body after a time limit fired mid-result (the connection then closes)."""
    body = f"1767311000\n1767312000\n\r\n__exception__\r\n{TAG}\r\n{TIMEOUT}\n125 {TAG}\r\n"
    assert late_error(body.encode() + b"__exception__\r\n", TAG) == (159, TIMEOUT)
    # Cut before the closing tag: the error as far as it came.
    cut = f"1767312000\n\r\n__exception__\r\n{TAG}\r\n{TIMEOUT}\n"
    assert late_error(cut.encode(), TAG) == (159, TIMEOUT)


def test_with_an_exception_tag_only_the_tag_marks_an_error() -> None:
    """A result row that reads like an error is data when the server frames its errors."""
    row = b"1\nCode: 60. DB::Exception: Table default.t does not exist.\n"
    assert late_error(row, TAG) is None
    other = f"1\n__exception__\r\nabcdefghabcdefgh\r\n{TIMEOUT}\n".encode()
    assert late_error(other, TAG) is None


def test_a_server_without_the_tag_appends_the_error_as_the_last_line() -> None:
    old = (
        "Code: 159, e.displayText() = DB::Exception: Timeout exceeded: elapsed 1.208000056 "
        "seconds, maximum: 1, e.what() = DB::Exception"
    )
    assert late_error(f"1834999000\n1835000000\n{old}\n".encode(), None) == (159, old)
    newer = "Code: 395. DB::Exception: Value passed to 'throwIf' function is non-zero"
    assert late_error(f"899999\t0\n{newer}\n".encode(), None) == (395, newer)
    assert late_error(b"1\n2\n3\n", None) is None
    # Not the last line: an error text inside the result is data.
    assert late_error(f"1\n{old}\n2\n".encode(), None) is None
