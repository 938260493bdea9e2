"""The server's error text as chperf records it (runner/executor.py)."""

from __future__ import annotations

from runner.executor import explained

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
