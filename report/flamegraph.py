"""Flame graphs from the folded stacks the runner saved (run.json "profiles").

Frames that differ between two builds for no reason are normalized away, then inferno renders
each side and a differential graph in both directions: reference -> patched has the patched
profile's shape, patched -> reference (with --negate) the reference's, so code that disappeared
is visible too; in both, red means more samples in patched.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from artifacts.tables import PATCHED, REFERENCE
from report import display
from report.inputs import Profile
from report.model import Link

FLAMEGRAPH_DIR = "flamegraphs"
FLAMEGRAPH = "inferno-flamegraph"
DIFF_FOLDED = "inferno-diff-folded"
# The repository's project-local tool directory (`make inferno` installs there).
REPO_TOOLS = Path(__file__).resolve().parents[1] / "tools" / "bin"
# Rendering a profile of a few MB takes well under a second; this only guards against hangs.
TOOL_TIMEOUT_SECONDS = 120

THREAD_START = "[thread start]"
# Frames that start a thread: which of them appear depends on glibc and the unwinder, not on
# the code under test, so they are merged into one.
_THREAD_START_FRAMES = frozenset(
    {
        "clone",
        "clone3",
        "__clone",
        "__clone3",
        "__clone_internal",
        "__GI___clone",
        "__GI___clone3",
        "__GI___clone_internal",
        "start_thread",
        "thread_start",
        "__start_thread",
    }
)
_RAW_ADDRESS = re.compile(r"^0x[0-9a-fA-F]+$")  # an unsymbolized frame
_UNKNOWN = re.compile(r"^\[unknown(?: <[0-9a-fA-F]+>)?\]$")
_MODULE_ADDRESS = re.compile(r"^\[(.+) <[0-9a-fA-F]+>\]$")  # perf: "[libfoo.so <1a2b>]"
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")  # "func+0x1f"
_LLVM_SUFFIX = re.compile(r"\.llvm\.\d+")  # LTO clones: "foo.llvm.1234567"


def find_tool(name: str) -> Path | None:
    """The repository's tools/bin first (pinned by the Makefile), then PATH."""
    local = REPO_TOOLS / name
    if local.is_file():
        return local
    found = shutil.which(name)
    return Path(found) if found else None


def normalize_frame(frame: str) -> str | None:
    """The frame as it should compare across builds, or None to drop it."""
    frame = _LLVM_SUFFIX.sub("", frame.strip())
    frame = _OFFSET.sub("", frame)
    if not frame or _UNKNOWN.match(frame) or _RAW_ADDRESS.match(frame):
        return None
    if frame in _THREAD_START_FRAMES:
        return THREAD_START
    module = _MODULE_ADDRESS.match(frame)
    return f"[{module.group(1)}]" if module else frame


def normalize_stack(stack: str) -> str:
    frames: list[str] = []
    for raw in stack.split(";"):
        frame = normalize_frame(raw)
        if frame is None or (frame == THREAD_START and frames and frames[-1] == THREAD_START):
            continue
        frames.append(frame)
    # A sample whose every frame was noise still took time: keep it, under one frame.
    return ";".join(frames) or "[unknown]"


@dataclass(frozen=True)
class Folded:
    stacks: tuple[tuple[str, int], ...]  # sorted by stack
    bad_lines: int

    def text(self) -> str:
        return "".join(f"{stack} {n}\n" for stack, n in self.stacks)


def normalize_folded(lines: Iterable[str]) -> Folded:
    counts: Counter[str] = Counter()
    bad = 0
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, _, number = line.rpartition(" ")
        try:
            value = int(number)
        except ValueError:
            bad += 1
            continue
        if not stack or value < 0:
            bad += 1
            continue
        counts[normalize_stack(stack)] += value
    return Folded(tuple(sorted(counts.items())), bad)


@dataclass(frozen=True)
class FlameGraphs:
    links: dict[tuple[str, int], tuple[Link, ...]]
    problems: tuple[str, ...]
    # Per query, why a side has no flame graph (the profiler recorded no samples): a note in
    # the report, not a problem of the report.
    unavailable: dict[tuple[str, int], tuple[str, ...]] = field(default_factory=dict)


class _ToolFailed(Exception):
    pass


def render_flamegraphs(out: Path, profiles: Sequence[Profile]) -> FlameGraphs:
    if not profiles:
        return FlameGraphs({}, ())
    tools = {name: find_tool(name) for name in (FLAMEGRAPH, DIFF_FOLDED)}
    problems: list[str] = []
    absent = [name for name, path in tools.items() if path is None]
    if absent:
        problems.append(
            f"{' and '.join(absent)} not found in {REPO_TOOLS} or PATH: {len(profiles)} "
            "profiles not rendered; run `make inferno`, then `chperf report` again"
        )
    directory = out / FLAMEGRAPH_DIR
    directory.mkdir(exist_ok=True)
    by_query: dict[tuple[str, int], dict[str, Profile]] = {}
    for p in profiles:
        by_query.setdefault((p.test, p.query_index), {})[p.side] = p
    links: dict[tuple[str, int], tuple[Link, ...]] = {}
    unavailable: dict[tuple[str, int], tuple[str, ...]] = {}
    for key, sides in by_query.items():
        notes: list[str] = []
        found = _render_query(directory, key, sides, tools, problems, notes)
        if found:
            links[key] = found
        if notes:
            unavailable[key] = tuple(notes)
    return FlameGraphs(links, tuple(problems), unavailable)


def _render_query(
    directory: Path,
    key: tuple[str, int],
    sides: dict[str, Profile],
    tools: dict[str, Path | None],
    problems: list[str],
    notes: list[str],
) -> tuple[Link, ...]:
    test, index = key
    name = display.ident(test, index)
    folded: dict[str, Path] = {}
    for side in (REFERENCE, PATCHED):
        if side in sides:
            target = directory / f"{name}.{side}.folded"
            path = _normalize_file(sides[side], target, problems, notes)
            if path is not None:
                folded[side] = path
    flamegraph, diff = tools[FLAMEGRAPH], tools[DIFF_FOLDED]
    if flamegraph is None:
        return ()
    title = f"{test} query {index}"
    jobs: list[tuple[str, str, list[list[str]], list[str]]] = []
    for side, path in folded.items():
        jobs.append((side, f"{name}.{side}.svg", [], [f"--title={title}: {side}", str(path)]))
    if diff is not None and len(folded) == 2:
        ref, pat = str(folded[REFERENCE]), str(folded[PATCHED])
        head = f"--title={title}: patched vs reference (red: more samples in patched)"
        jobs.append(("diff", f"{name}.diff.svg", [[str(diff), ref, pat]], [head]))
        head = f"--title={title}: reference vs patched (red: more samples in patched)"
        jobs.append(
            (
                "diff, reverse",
                f"{name}.diff-reverse.svg",
                [[str(diff), pat, ref]],
                [head, "--negate"],
            )
        )
    links: list[Link] = []
    for label, file, before, args in jobs:
        try:
            _run_pipeline(before, [str(flamegraph), "--deterministic", *args], directory / file)
        except _ToolFailed as e:
            problems.append(f"flame graph '{label}' of {title}: {e}")
            continue
        links.append(Link(label, f"{FLAMEGRAPH_DIR}/{file}"))
    return tuple(links)


def _normalize_file(
    profile: Profile, target: Path, problems: list[str], notes: list[str]
) -> Path | None:
    where = f"profile of {profile.test} query {profile.query_index} ({profile.side})"
    try:
        with profile.folded.open(encoding="utf-8", errors="replace") as f:
            folded = normalize_folded(f)
    except OSError as e:
        problems.append(f"{where}: cannot read {profile.folded}: {e.strerror or e}")
        return None
    if folded.bad_lines:
        problems.append(f"{where}: {folded.bad_lines} malformed lines in {profile.folded}")
    if not folded.stacks:
        source = {"perf": "perf recorded", "trace_log": "the query profiler wrote"}.get(
            profile.kind, "the profiler recorded"
        )
        notes.append(f"{profile.side}: not available: {source} no samples")
        return None
    target.write_text(folded.text(), encoding="utf-8")
    return target


def _run_pipeline(before: list[list[str]], last: list[str], target: Path) -> None:
    """Run `before[0] | last > target` (or just `last`), without a shell."""
    data: bytes | None = None
    for command in [*before, last]:
        try:
            # Fixed tool paths and an argument list: no shell ever parses a test name.
            done = subprocess.run(
                command, input=data, capture_output=True, timeout=TOOL_TIMEOUT_SECONDS
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise _ToolFailed(f"{Path(command[0]).name}: {e}") from e
        if done.returncode != 0:
            err = done.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
            raise _ToolFailed(
                f"{Path(command[0]).name} exited with code {done.returncode}: {' / '.join(err)}"
            )
        data = done.stdout
    target.write_bytes(data or b"")
