"""Shared pieces of the fuzz tests (tests/unit/test_fuzz_*.py): hypothesis settings that keep
them fast, a memory cap that turns unbounded memory into a failure, and mutations of valid
files."""

from __future__ import annotations

import contextlib
import resource
from collections.abc import Iterator, Sequence

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Each fuzz test runs in a second or a few; deadline=None because the first examples pay for
# imports and caches. No example database: nothing is written into the checkout.
FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# What one parse or read may allocate beyond what the process holds: a file of a few KB that
# needs more is expanding without bound.
MEMORY_HEADROOM = 1 << 30

# Fragments that mean something to one of the formats: XML markup and entities, placeholders,
# TSV escapes and NULL, numbers a float or an int parser trips on, JSON structure.
TOKENS = (
    b"<", b">", b"</", b"/>", b"&", b"&amp;", b"&#0;", b"&#10;", b"&lt;", b"<![CDATA[", b"]]>",
    b"<!--", b"-->", b"<?xml", b'"', b"'", b"=", b"{", b"}", b"{{", b"}}", b"{x}", b"{a}",
    b"{x:UInt8}", b"\t", b"\n", b"\r", b"\r\n", b"\\", b"\\N", b"\\n", b"\\t", b"\x00",
    b"\xff", b"\xc3", b"\x1b[31m", b"::error::", b"inf", b"-inf", b"nan", b"NaN", b"Infinity",
    b"1e400", b"-1", b"0", b"-0", b"9" * 5000, b"\xd9\xa3", b"[", b"]", b":", b",", b"null",
    b"true", b'{"', b'":', b"[[[[[[[[",
)  # fmt: skip


def _process_memory() -> int:
    """The process's virtual memory size (VmSize), the quantity RLIMIT_AS limits."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmSize in /proc/self/status")


@contextlib.contextmanager
def memory_cap(headroom: int = MEMORY_HEADROOM) -> Iterator[None]:
    """The address space limited to what the process uses now plus `headroom` while the block
    runs: an input that allocates without bound raises MemoryError (a failure of the test)
    instead of taking the machine."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _process_memory() + headroom
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@st.composite
def mutated(draw: st.DrawFn, samples: Sequence[bytes]) -> bytes:
    """One of `samples` with a few edits: a byte changed, a token or random bytes inserted, a
    run deleted, a slice repeated."""
    data = bytearray(draw(st.sampled_from(samples)))
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(data)))
        edit = draw(st.sampled_from(("change", "insert", "delete", "repeat")))
        if edit == "change" and data:
            data[min(at, len(data) - 1)] = draw(st.integers(0, 255))
        elif edit == "insert":
            data[at:at] = draw(st.sampled_from(TOKENS) | st.binary(max_size=8))
        elif edit == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        else:
            piece = bytes(data[at : at + draw(st.integers(1, 200))])
            data[at:at] = piece * draw(st.integers(1, 20))
    return bytes(data)


def tokens(max_size: int = 40) -> st.SearchStrategy[bytes]:
    """Bytes made of TOKENS and a little noise: closer to the formats than random bytes."""
    piece = st.sampled_from(TOKENS) | st.binary(min_size=1, max_size=4)
    return st.lists(piece, max_size=max_size).map(b"".join)
