"""Unit tests of the byte count of protocol timings (runner/protocol_clients.py): the kernel's
count of what a TCP socket received, on a real loopback connection."""

from __future__ import annotations

import socket

from runner.protocol_clients import received_bytes


def test_the_kernel_counts_every_byte_a_socket_received_and_nothing_it_sent() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        peer, _ = server.accept()
        with client, peer:
            before = received_bytes(client)
            client.sendall(b"x" * 1000)  # sent, not received: not counted
            peer.sendall(b"y" * 300_000)
            got = 0
            while got < 300_000:
                got += len(client.recv(1 << 16))
            assert before >= 0
            assert received_bytes(client) - before == 300_000


def test_a_socket_that_is_not_tcp_or_none_has_no_count() -> None:
    assert received_bytes(None) == -1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        assert received_bytes(udp) == -1
