"""compare: per-query verdicts, metrics and the check status from `chperf run` artifacts.
Entry point: `compare_directory(out, CompareOptions(...)) -> CompareResult`. The method:
docs/method.md; file formats: docs/formats.md.
"""

from compare.compare import CompareOptions, CompareResult, compare_directory
from compare.verdict import MIN_EFFECT, UNSTABLE_THRESHOLD, Verdict

__all__ = [
    "MIN_EFFECT",
    "UNSTABLE_THRESHOLD",
    "CompareOptions",
    "CompareResult",
    "Verdict",
    "compare_directory",
]
