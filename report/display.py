"""How numbers and texts read in the report: durations, ratios, percentages, long texts."""

from __future__ import annotations

import functools
import hashlib
import math
import re

from artifacts.stages import DETAILS_DIR as DETAILS_DIR  # re-exported for ci and the report

MISSING = "—"  # shown where a value does not exist (a side that failed, say)
# A query's text is shown up to here, the whole text is a file next to the report (render.py):
# the page holds each text up to three times, and a 50 MB query made a 157 MB report.
MAX_QUERY_CHARS = 64 * 1024
FULL_QUERIES_DIR = "queries"  # in the --out directory, next to report.html
DETAILS_PER_PAGE = 25  # queries of one test on a details page
# A query's text in the main page's tables, a line that opens on click; its details page has
# it up to MAX_QUERY_CHARS. Keeps a page of thousands of long queries within a few MB.
MAX_ROW_QUERY_CHARS = 300
# A query's name (its tag="..." in the test file) in the tables.
MAX_NAME_CHARS = 200


def duration(seconds: float | None) -> str:
    """0.00123 -> '1.23 ms', 2.5 -> '2.500 s'."""
    if seconds is None or not math.isfinite(seconds):
        return MISSING
    if seconds < 0.001:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1000:.3g} ms" if seconds < 0.1 else f"{seconds * 1000:.0f} ms"
    return f"{seconds:.3f} s"


def wall_time(seconds: float | None) -> str:
    """Longer spans: '45 s', '12 min 3 s', '1 h 02 min'."""
    if seconds is None or not math.isfinite(seconds):
        return MISSING
    total = round(seconds)
    if total < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{total} s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def percent(fraction: float | None, *, signed: bool = True) -> str:
    if fraction is None or not math.isfinite(fraction):
        return MISSING
    value = fraction * 100
    text = f"{value:+.1f}%" if signed else f"{value:.1f}%"
    return text.replace("-", "−")


def ratio(reference: float | None, patched: float | None) -> float | None:
    if reference is None or patched is None or reference <= 0 or patched <= 0:
        return None
    return patched / reference


def ratio_text(value: float | None) -> str:
    """1.32 -> '1.32x slower', 0.5 -> '2.00x faster' (both as times, not as fractions)."""
    if value is None or not math.isfinite(value) or value <= 0:
        return MISSING
    if value >= 1:
        return f"{value:.2f}x slower" if round(value, 2) != 1 else "1.00x"
    return f"{1 / value:.2f}x faster"


def ratio_interval(low: float | None, high: float | None, level: float | None = None) -> str:
    """In the headline's own form: "99% CI 1.25–1.40x slower", "99% CI 1.12–1.19x faster"
    (the speedups as times too), "99% CI 0.97–1.04x" across 1."""
    if low is None or high is None or low <= 0 or high <= 0:
        return ""
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    name = f"{level:.0%} CI" if level is not None else "CI"
    if low > 1:
        return f"{name} {low:.2f}–{high:.2f}x slower"
    if high < 1:
        return f"{name} {1 / high:.2f}–{1 / low:.2f}x faster"
    return f"{name} {low:.2f}–{high:.2f}x"


def change(diff: float | None) -> str:
    """The estimate as a ratio and a percentage from the same number: "1.32x slower (+32.0%)"."""
    if diff is None or not math.isfinite(diff) or diff <= -1:
        return MISSING
    return f"{ratio_text(1 + diff)} ({percent(diff)})"


def count(value: int | None) -> str:
    return MISSING if value is None else str(value)


def shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def cut(text: str, limit: int) -> str:
    """The first `limit` characters, and "…" when there were more."""
    return text if len(text) <= limit else text[:limit] + "…"


def full_query_href(test: str, query_index: int) -> str:
    """Where the whole text of a query longer than MAX_QUERY_CHARS is, relative to the report."""
    return f"{FULL_QUERIES_DIR}/{ident(test, query_index)}.sql"


def query_anchor(test: str, query_index: int) -> str:
    """The id of a query's row in report.html and of its section on its details page."""
    return "q-" + ident(test, query_index)


def detail_file(test: str, query_index: int) -> str:
    """The details page that holds a query, in DETAILS_DIR: one per DETAILS_PER_PAGE query
    indexes of a test, so that a report of thousands of queries is not thousands of files
    (creating one costs ~1 ms on an ext4 disk: 3 s of a 3,000-query report)."""
    return f"{ident(test)}-{max(query_index, 0) // DETAILS_PER_PAGE}.html"


def detail_href(test: str, query_index: int) -> str:
    """A query's details, relative to report.html: its section of its details page."""
    return f"{DETAILS_DIR}/{detail_file(test, query_index)}#{query_anchor(test, query_index)}"


def query_cut(length: int) -> str:
    """What the report shows of a query text of `length` characters, when it cuts it."""
    if length <= MAX_QUERY_CHARS:
        return ""
    return f"the first {MAX_QUERY_CHARS:,} of {length:,} characters"


def sort_key(value: float | None) -> str:
    """The value for the browser's sort: a plain number, or empty (sorted last)."""
    if value is None or not math.isfinite(value):
        return ""
    return f"{value:.6g}"


@functools.lru_cache(maxsize=1 << 16)  # a query's id is asked for by its row, page and links
def ident(*parts: str | int) -> str:
    """A stable id for anchors and file names, safe in URLs; a short hash of the exact parts
    keeps it unique when user-controlled names look alike after cleaning."""
    raw = "\0".join(str(p) for p in parts)
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(str(p) for p in parts))[:60]
    digest = hashlib.sha1(raw.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{readable.strip('._-') or 'x'}-{digest}"
