"""Flame graphs from the folded stacks the runner saved (run.json "profiles").

Frames that differ between two builds for no reason are normalized away, each side's samples
become CPU time per profiled run (report/flamediff.py), then inferno renders each side and a
differential graph in both directions: reference -> patched has the patched profile's shape,
patched -> reference (with --negate) the reference's, so code that disappeared is visible too;
in both, red means more CPU per run in patched, blue less, and stacks unchanged within
sampling noise are pale. A side without samples, and a differential without both sides, get a
"no samples: <reason>" note instead of an empty graph; why frames have no names (a stripped
module) is said once for the report.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from artifacts.folded import frame_names
from artifacts.tables import PATCHED, REFERENCE
from report import display
from report.flamediff import COUNT_NAME, SideScale, mark_unchanged, scaled
from report.inputs import Profile
from report.model import Link

FLAMEGRAPH_DIR = "flamegraphs"
FLAMEGRAPH = "inferno-flamegraph"
DIFF_FOLDED = "inferno-diff-folded"
# The repository's project-local tool directory (`make inferno` installs there).
REPO_TOOLS = Path(__file__).resolve().parents[1] / "tools" / "bin"
# Rendering a profile of a few MB takes well under a second; this only guards against hangs.
TOOL_TIMEOUT_SECONDS = 120
# Profile runs under this many sampling periods in all may well leave no sample: "too short".
SHORT_PROFILE_PERIODS = 3
SIDE_LABELS = {REFERENCE: "reference", PATCHED: "patched"}

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
        # Repeats of a frame without a name ([thread start], [libfoo.so]) cannot be told
        # apart: how many a stack has depends on the unwinder, not on the code.
        if frame is None or (frame.startswith("[") and frames and frames[-1] == frame):
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
    # Per query, why a side or the differential has no flame graph, each note
    # "<reference|patched|diff>: no samples: <reason>": a note, not a problem of the report.
    unavailable: dict[tuple[str, int], tuple[str, ...]] = field(default_factory=dict)
    # For the whole report, once: why some frames have no names (a stripped module).
    notes: tuple[str, ...] = ()


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
    return FlameGraphs(links, tuple(problems), unavailable, unnamed_frames_notes(profiles))


def unnamed_frames_notes(profiles: Sequence[Profile]) -> tuple[str, ...]:
    """Why frames have no names, once per reason, with the sides it applies to."""
    sides: dict[str, set[str]] = {}
    for p in profiles:
        for reason in p.unnamed:
            sides.setdefault(reason, set()).add(p.side)
    return tuple(
        f"Frames without names ({', '.join(s for s in (REFERENCE, PATCHED) if s in found)}): "
        f"{reason}."
        for reason, found in sides.items()
    )


def no_samples_reason(profile: Profile) -> str:
    """Why a profiled side has no samples, from what the runner recorded."""
    if profile.failure:
        return f"the query failed in a profile run: {profile.failure}"
    runs = f"the {profile.runs} profile runs" if profile.runs else "the profile runs"
    took = f" ({display.duration(profile.seconds)} in all)" if profile.seconds else ""
    period = profile.sample_ns / 1e9
    if period and 0 < profile.seconds < SHORT_PROFILE_PERIODS * period:
        return (
            f"the query ran shorter than the sampling period: {runs} took "
            f"{display.duration(profile.seconds)} in all, and the profiler takes a sample "
            f"every {display.duration(period)} of CPU time"
        )
    if profile.kind == "trace_log":
        return f"system.trace_log has no CPU samples of {runs}{took}"
    if profile.kind == "perf":
        return f"perf recorded no samples of the server during {runs}{took}"
    return f"the profiler recorded no samples of {runs}{took}"


@dataclass(frozen=True)
class _Side:
    samples: dict[str, int]  # normalized stacks
    scale: SideScale
    path: Path  # the per-run folded file inferno draws
    subtitle: str


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
    drawn: dict[str, _Side] = {}
    for side in (REFERENCE, PATCHED):
        if side in sides:
            target = directory / f"{name}.{side}.folded"
            found = _read_side(sides[side], target, problems, notes)
            if found is not None:
                drawn[side] = found
    flamegraph, diff = tools[FLAMEGRAPH], tools[DIFF_FOLDED]
    if flamegraph is None:
        return ()
    title = f"{test} query {index}"
    jobs: list[tuple[str, str, list[list[str]], list[str], _Marker | None]] = []
    for side, found in drawn.items():
        head = [f"--title={title}: {side}", f"--subtitle={found.subtitle}"]
        jobs.append((side, f"{name}.{side}.svg", [], [*head, str(found.path)], None))
    diff_note = _diff_unavailable(sides, drawn)
    if diff_note:
        notes.append(f"diff: no samples: {diff_note}")
    elif diff is not None:
        ref, pat = drawn[REFERENCE], drawn[PATCHED]
        marker = _Marker(ref, pat)
        for label, file, order, extra in (
            ("diff", f"{name}.diff.svg", (ref, pat), []),
            ("diff, reverse", f"{name}.diff-reverse.svg", (pat, ref), ["--negate"]),
        ):
            widths = "patched" if order[1] is pat else "reference"
            head = [f"--title={title}: patched against reference (widths: {widths})"]
            before = [[str(diff), str(order[0].path), str(order[1].path)]]
            jobs.append((label, file, before, [*head, *extra], marker))
    links: list[Link] = []
    for label, file, before, args, mark in jobs:
        command = [str(flamegraph), "--deterministic", f"--countname={_count_name(drawn)}"]
        try:
            _run_pipeline(before, [*command, *args], directory / file, mark)
        except _ToolFailed as e:
            problems.append(f"flame graph '{label}' of {title}: {e}")
            continue
        links.append(Link(label, f"{FLAMEGRAPH_DIR}/{file}"))
    return tuple(links)


class _Marker:
    """Between inferno-diff-folded and inferno-flamegraph: unchanged stacks drawn pale, and
    the subtitle says how many stacks changed which way."""

    def __init__(self, reference: _Side, patched: _Side) -> None:
        self.reference, self.patched = reference, patched

    def __call__(self, diff_output: bytes) -> tuple[bytes, list[str]]:
        marked = mark_unchanged(
            diff_output.decode("utf-8", "replace").splitlines(),
            self.reference.samples,
            self.patched.samples,
            (self.reference.scale, self.patched.scale),
        )
        subtitle = (
            f"red: more CPU per run in patched ({marked.slower} stacks), blue: less "
            f"({marked.faster}), pale: unchanged within sampling noise ({marked.unchanged})"
        )
        if not marked.slower and not marked.faster:
            subtitle += "; more --profile-seconds would resolve smaller changes"
        return marked.text.encode("utf-8"), [f"--subtitle={subtitle}"]


def _count_name(drawn: dict[str, _Side]) -> str:
    per_run = drawn and all(side.scale.per_run for side in drawn.values())
    return COUNT_NAME if per_run else "samples"


def _diff_unavailable(sides: dict[str, Profile], drawn: dict[str, _Side]) -> str:
    """Why there is no differential graph ("" when there is one)."""
    if len(drawn) == 2:
        return ""
    absent = [s for s in (REFERENCE, PATCHED) if s not in sides]
    if absent:
        return f"the {absent[0]} side was not profiled"
    empty = [s for s in (REFERENCE, PATCHED) if s not in drawn]
    if len(empty) == 2:
        return "neither side has samples"
    return f"the {empty[0]} side has none"


def _read_side(
    profile: Profile, target: Path, problems: list[str], notes: list[str]
) -> _Side | None:
    """The side's normalized stacks, written per run to target; None (and why) without."""
    where = f"profile of {profile.test} query {profile.query_index} ({profile.side})"
    try:
        text = profile.folded.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        problems.append(f"{where}: cannot read {profile.folded}: {e.strerror or e}")
        return None
    lines = text.splitlines()
    folded = normalize_folded(lines)
    if folded.bad_lines:
        problems.append(f"{where}: {folded.bad_lines} malformed lines in {profile.folded}")
    if not folded.stacks:
        notes.append(f"{profile.side}: no samples: {no_samples_reason(profile)}")
        return None
    samples = dict(folded.stacks)
    scale = SideScale(profile.runs, profile.sample_ns)
    per_run = scaled(samples, scale)
    target.write_text("".join(f"{stack} {n}\n" for stack, n in per_run.items()), "utf-8")
    return _Side(samples, scale, target, _subtitle(profile, scale, samples, lines))


def _subtitle(profile: Profile, scale: SideScale, samples: dict[str, int], lines: list[str]) -> str:
    share = frame_names(lines, thread_first=profile.kind == "perf").named_share
    named = (
        f"; {display.percent(share, signed=False)} of sampled frames named"
        if share is not None
        else ""
    )
    total = sum(samples.values())
    if not scale.per_run:
        return f"{total} samples ({profile.kind}; not per run: run.json has no run counts){named}"
    cpu = display.duration(scale.value(total) / 1e6)
    period = display.duration(profile.sample_ns / 1e9)
    return (
        f"{cpu} of CPU per run over {profile.runs} profile runs ({profile.kind}, a sample "
        f"every {period} of CPU){named}"
    )


def _run_pipeline(
    before: list[list[str]],
    last: list[str],
    target: Path,
    mark: Callable[[bytes], tuple[bytes, list[str]]] | None = None,
) -> None:
    """Run `before[0] | [mark] | last > target` (or just `last`), without a shell; `mark`
    rewrites the data between them and adds arguments to `last`."""
    data: bytes | None = None
    for number, command in enumerate([*before, last]):
        if mark is not None and number == len(before) and data is not None:
            data, extra = mark(data)
            command = [*command, *extra]
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
