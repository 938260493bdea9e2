"""The numbers behind the flame graphs: each side's samples as CPU time per profiled run, and
which stacks of the differential changed beyond sampling noise. Pure functions.

Per run, because the two sides run the query a different number of times in their profile
seconds (a slower side runs it fewer times): the raw sample counts would compare time spent
profiling, not the cost of one run. The differential draws a stack whose change is within
noise as unchanged (inferno's pale colour for a zero difference), so red and blue mark only
what changed: an A/A profile comes out pale, not half red and half blue.

inferno colours a frame by the change of its own (self) samples, that is by the stacks that
end in it. One stack rarely holds enough samples to tell a change from noise: a change spread
over the call paths of a function (per-block overhead, say) shows only in the function's
total. So a stack keeps its difference when it changed by itself, or when the function it
ends in changed over all its stacks.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

COUNT_NAME = "µs of CPU per run"  # inferno --countname of the per-run graphs
# A stack's change counts when it is at least NOISE_Z standard errors of its sampling noise
# (sample counts are Poisson: a count n has variance n). 3, not 2: a graph has hundreds of
# stacks, and at 2 about one in twenty unchanged ones would be coloured by chance.
NOISE_Z = 3.0
# ... and at least this share of the stack's own cost: the check's default --min-effect, so a
# graph does not colour changes smaller than those the verdicts ignore.
MIN_RELATIVE_CHANGE = 0.05


@dataclass(frozen=True)
class SideScale:
    """How one side's sample counts become CPU microseconds per run."""

    runs: int  # profile runs of the side; 0: unknown (a run.json of an older chperf)
    sample_ns: int  # CPU time a sample stands for; 0: unknown

    @property
    def per_run(self) -> bool:
        return self.runs > 0 and self.sample_ns > 0

    def value(self, samples: float) -> float:
        """Per-run CPU microseconds (samples as they are when the scale is unknown)."""
        if not self.per_run:
            return samples
        return samples * self.sample_ns / 1000 / self.runs


def scaled(stacks: Mapping[str, int], scale: SideScale) -> dict[str, int]:
    """Counts per run, in whole microseconds; a sampled stack never rounds away to 0."""
    return {stack: max(1, round(scale.value(n))) for stack, n in stacks.items() if n > 0}


def changed(reference: int, patched: int, ref: SideScale, pat: SideScale) -> bool:
    """Whether a stack's per-run cost differs between the sides beyond sampling noise and by
    at least MIN_RELATIVE_CHANGE (reference and patched: its samples on each side)."""
    x_ref, x_pat = ref.value(reference), pat.value(patched)
    difference = abs(x_pat - x_ref)
    if difference == 0 or difference < MIN_RELATIVE_CHANGE * max(x_ref, x_pat):
        return False
    # Var(n * k) = n * k^2 for a Poisson count n scaled by k.
    noise = math.sqrt(reference * ref.value(1) ** 2 + patched * pat.value(1) ** 2)
    return difference >= NOISE_Z * noise


def leaf(stack: str) -> str:
    return stack.rpartition(";")[2]


def changed_functions(
    reference: Mapping[str, int], patched: Mapping[str, int], ref: SideScale, pat: SideScale
) -> frozenset[str]:
    """The functions whose own samples, over all the stacks that end in them, `changed`."""
    totals: tuple[Counter[str], Counter[str]] = (Counter(), Counter())
    for side, stacks in zip(totals, (reference, patched), strict=True):
        for stack, n in stacks.items():
            side[leaf(stack)] += n
    functions = set(totals[0]) | set(totals[1])
    return frozenset(f for f in functions if changed(totals[0][f], totals[1][f], ref, pat))


@dataclass(frozen=True)
class MarkedDiff:
    text: str  # inferno-diff-folded lines, unchanged stacks given a zero difference
    slower: int  # stacks drawn red / blue (more / less CPU per run in patched)
    faster: int
    unchanged: int


def mark_unchanged(
    diff_lines: Iterator[str] | list[str],
    reference: Mapping[str, int],
    patched: Mapping[str, int],
    scales: tuple[SideScale, SideScale],
) -> MarkedDiff:
    """Give the stacks that did not change (`changed`, by themselves or as part of their
    function's total) a zero difference in inferno-diff-folded output `stack first second`,
    keeping the second count, which sets the widths. `reference` and `patched` hold each
    side's samples by stack."""
    functions = changed_functions(reference, patched, *scales)
    out: list[str] = []
    slower = faster = unchanged = 0
    for line in diff_lines:
        stack, first, second = _split(line)
        if stack is None:
            continue
        n_ref, n_pat = reference.get(stack, 0), patched.get(stack, 0)
        difference = scales[1].value(n_pat) - scales[0].value(n_ref)
        if difference and (leaf(stack) in functions or changed(n_ref, n_pat, *scales)):
            out.append(f"{stack} {first} {second}\n")
            slower, faster = slower + (difference > 0), faster + (difference < 0)
        else:
            out.append(f"{stack} {second} {second}\n")
            unchanged += 1
    return MarkedDiff("".join(out), slower, faster, unchanged)


def _split(line: str) -> tuple[str | None, str, str]:
    parts = line.rstrip("\n").rsplit(" ", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None, "", ""
    return parts[0], parts[1], parts[2]
