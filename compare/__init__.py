"""compare: per-query verdicts, metrics and the check status from `chperf run` artifacts.

Public entry point for the CLI: `compare_directory(out, CompareOptions(...)) -> CompareResult`.
File formats: compare/FORMATS.md.
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
