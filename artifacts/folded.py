"""The folded-stack format of `OUT/profiles/*.folded` (inferno's and flamegraph.pl's): one
`frame;frame;...;frame count` line per distinct stack, root first, count in samples.

Which frames name a function: a symbolizer that finds no name leaves the module instead
(perf and inferno-collapse-perf: `[libfoo.so]`, with --addrs `[libfoo.so <1a2b>]`; chperf's
trace_log query: `[libfoo.so]`), nothing at all (`[unknown]`), or a raw address (`0x7f01..`).

History: counts were perf's sample periods (nanoseconds) before run.json profiles had
`sample_ns`; since, they are samples of every kind.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

UNKNOWN_FRAME = "[unknown]"
_RAW_ADDRESS = re.compile(r"^0x[0-9a-fA-F]+$")
_UNKNOWN = re.compile(r"^\[unknown(?: <[0-9a-fA-F]+>)?\]$")
_MODULE = re.compile(r"^\[([^\]<>]+?)(?: <[0-9a-fA-F]+>)?\]$")  # "[libfoo.so <1a2b>]"
# Markers chperf itself writes in place of frames that did have names.
NAMED_MARKERS = frozenset({"[thread start]"})


@dataclass(frozen=True)
class FoldedLine:
    frames: tuple[str, ...]
    count: int


def parse_lines(lines: Iterable[str]) -> Iterator[FoldedLine | None]:
    """Each non-blank line as its frames and count; None for a line that is not a stack."""
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, _, number = line.rpartition(" ")
        if not stack or not number.isdigit():
            yield None
            continue
        yield FoldedLine(tuple(stack.split(";")), int(number))


def unnamed_module(frame: str) -> str | None:
    """The module of a frame without a function name (`[libfoo.so <1a2b>]` -> libfoo.so);
    "" for an unnamed frame of no known module; None for a named frame."""
    frame = frame.strip()
    if not frame or _UNKNOWN.match(frame) or _RAW_ADDRESS.match(frame):
        return ""
    if frame in NAMED_MARKERS:
        return None
    module = _MODULE.match(frame)
    return module.group(1) if module else None


@dataclass(frozen=True)
class FrameNames:
    """Sampled frames (each frame of each sample counts once), named or not, by module."""

    frames: int
    named: int
    unnamed_by_module: tuple[tuple[str, int], ...]  # most frames first; "" = no module

    @property
    def named_share(self) -> float | None:
        return self.named / self.frames if self.frames else None


def frame_names(lines: Iterable[str], *, thread_first: bool = False) -> FrameNames:
    """thread_first: each stack starts with its thread's name (perf's folded stacks), which
    is not a sampled frame and is not counted."""
    frames = named = 0
    unnamed: Counter[str] = Counter()
    for parsed in parse_lines(lines):
        if parsed is None:
            continue
        for frame in parsed.frames[1:] if thread_first else parsed.frames:
            frames += parsed.count
            module = unnamed_module(frame)
            if module is None:
                named += parsed.count
            else:
                unnamed[module] += parsed.count
    return FrameNames(frames, named, tuple(unnamed.most_common()))
