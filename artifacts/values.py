"""What a number in an artifact may be. A value no measurement gives (inf, nan, a negative or
absurd time) is not damage a crash leaves, like a torn line, which a reader records and reads
past: no writer of ours produces one, and it would be read as a measurement, so the readers
refuse the file with file:line (exit 2)."""

from __future__ import annotations

import math
from pathlib import Path

from artifacts.errors import ChperfError

# The longest time a run, a query_log entry or a median of them can hold: 1e6 s (11.6 days) is
# far beyond any limit of a run (a query's is minutes, a suite budget hours); more is a unit
# mistake or damage that would pass for a measurement.
MAX_SECONDS = 1e6
# The field metadata of a time column (runs.tsv client_time, query_log.tsv server_time).
SECONDS = {"unit": "seconds"}


class ImpossibleValue(ValueError):
    """A well-formed number no measurement gives (see the module's docstring)."""


IMPOSSIBLE_HINT = (
    "chperf never writes such a value: the file was edited or damaged; restore it, or rerun "
    "the stage that wrote it"
)


def seconds(text: str, column: str = "time") -> float:
    """A time in seconds, 0 to MAX_SECONDS; ImpossibleValue otherwise."""
    value = float(text)
    if not 0 <= value <= MAX_SECONDS:  # also false for nan
        raise ImpossibleValue(f"{column} {text} is not a time in seconds (0 to {MAX_SECONDS:g})")
    return value


def measure(text: str, column: str, low: float = -math.inf) -> float:
    """A finite number of at least `low`; ImpossibleValue otherwise."""
    value = float(text)
    if not (math.isfinite(value) and value >= low):
        expected = "a finite number" if low == -math.inf else f"a finite number >= {low:g}"
        raise ImpossibleValue(f"{column} {text} is not {expected}")
    return value


def impossible(path: Path, line: int, error: ImpossibleValue) -> ChperfError:
    return ChperfError(f"{path}:{line}: {error}", hint=IMPOSSIBLE_HINT)
