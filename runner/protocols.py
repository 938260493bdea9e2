"""The `<protocols>` element of a test (docs/protocols.md): besides the usual measurement, each
query of the test is timed over the named interfaces of both servers, phase by phase
(connect, first byte, full transfer, bytes received), in pairs per protocol.

    <protocols runs="10">native http</protocols>

The order of the executions is here, pure; runner/protocol_runs.py executes it.

Format history: 1 -- first version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from runner.protocol_clients import PROTOCOLS
from runner.schedule import Slot, run_pair
from runner.testxml import Element, ElementError

ELEMENT = "protocols"
# Pairs per protocol and query. The paired statistic (compare/blocked.py) can call a change
# from 6 pairs (smallest p 0.0093); 10 pairs (5 blocks) give 0.00026, room for a few noisy
# pairs. 40 bounds a test's time: a large result takes 0.1-1 s an execution.
DEFAULT_RUNS = 10
MIN_RUNS = 6
MAX_RUNS = 40


@dataclass(frozen=True)
class ProtocolSpec:
    protocols: tuple[str, ...]  # in the order written, without repeats
    runs: int  # pairs per protocol and query
    line: int  # of the <protocols> element


class ProtocolsDefError(ElementError):
    """A bad <protocols> element."""


def parse_protocols(path: Path, root: Element) -> ProtocolSpec | None:
    """The test's <protocols> element, None without one; ProtocolsDefError when it is bad."""
    found = [child for child in root.children if child.tag == ELEMENT]
    if not found:
        return None
    element = found[0]
    if len(found) > 1:
        raise ProtocolsDefError(
            found[1].line, "a second <protocols> element", "name every protocol in one element"
        )
    if element.children:
        raise ProtocolsDefError(
            element.line,
            f"<protocols> has a child element <{element.children[0].tag}>",
            "write the protocols as text: <protocols>native http</protocols>",
        )
    unknown = sorted(set(element.attrs) - {"runs"})
    if unknown:
        raise ProtocolsDefError(
            element.line, f"<protocols> has an unknown attribute {unknown[0]}", "only runs=N"
        )
    return ProtocolSpec(_names(element), _runs(element), element.line)


def _names(element: Element) -> tuple[str, ...]:
    words = [w for w in re.split(r"[\s,]+", element.text.strip().lower()) if w]
    known = ", ".join(PROTOCOLS)
    if not words:
        raise ProtocolsDefError(
            element.line, "<protocols> names no protocol", f"name one or more of {known}"
        )
    for word in words:
        if word not in PROTOCOLS:
            raise ProtocolsDefError(
                element.line, f"unknown protocol {word!r} in <protocols>", f"known: {known}"
            )
    if len(set(words)) != len(words):
        raise ProtocolsDefError(
            element.line, "<protocols> names a protocol twice", "name each protocol once"
        )
    return tuple(words)


def _runs(element: Element) -> int:
    raw = element.attrs.get("runs")
    if raw is None:
        return DEFAULT_RUNS
    hint = f"pairs per protocol and query, {MIN_RUNS} to {MAX_RUNS} (default {DEFAULT_RUNS})"
    if not re.fullmatch(r"\s*[0-9]{1,4}\s*", raw) or not MIN_RUNS <= int(raw) <= MAX_RUNS:
        raise ProtocolsDefError(element.line, f"<protocols runs={raw!r}> is out of range", hint)
    return int(raw)


@dataclass(frozen=True)
class ProtocolSlot:
    run: int
    protocol: str
    side: str


def run_order(
    run: int, protocols: tuple[str, ...], sides: dict[str, list[str]]
) -> list[ProtocolSlot]:
    """The executions of pair `run`: each protocol's pair (runner/schedule.py), the
    protocols rotated by one each run so that none always goes first. `sides`: the sides
    each protocol is still measured on."""
    shift = run % len(protocols) if protocols else 0
    rotated = protocols[shift:] + protocols[:shift]
    return [
        ProtocolSlot(run, protocol, slot.side)
        for protocol in rotated
        for slot in _pair(run, sides.get(protocol, []))
    ]


def _pair(run: int, sides: list[str]) -> tuple[Slot, ...]:
    return run_pair(run, sides) if sides else ()
