"""Placeholder expansion of test statements (docs/tests.md): each `{name}` expands over the
cartesian product of its declared values, names sorted, the last varying fastest (as
ClickHouse's perf.py), so query indices stay stable when a test gains an unrelated
substitution. `{{` and `}}` are literal braces (ClickHouse uses str.format); a lone brace that
is not `{identifier}` (a map literal, `{name:Type}`) stays as written.

How many statements an expansion makes, and how long they are, follows from the sizes of the
substitutions alone: `expansion_size` computes both before anything is expanded, so that a
test over the limits is an error naming its element instead of gigabytes of memory.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Queries (of every kind: create, fill, measured, drop) one test may expand to. Each measured
# query runs dozens of times a side, so even 1,000 is hours of measurement; ClickHouse's own
# tests expand to a few hundred at most. 10,000 expansions of one test took 2.87 GB of memory.
MAX_QUERIES_PER_TEST = 1000
# The expanded SQL of one test, in characters: a placeholder used many times in a long
# statement multiplies like an XML entity does, within the query limit.
MAX_EXPANDED_CHARS = 64 * 1024 * 1024

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def placeholders(template: str) -> list[tuple[str, int]]:
    """(name, offset) of each {name} in the template, escapes skipped."""
    return [(m.group(1), m.start()) for m in _TOKEN.finditer(template) if m.group(1)]


def render(template: str, values: Mapping[str, str]) -> str:
    """The template with every placeholder replaced; each must be in `values`."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return match.group(0)[0]  # "{{" -> "{", "}}" -> "}"
        return values[name]

    return _TOKEN.sub(replace, template)


def render_name(template: str, values: Mapping[str, str]) -> str:
    """A tag's placeholders filled in; one no substitution declares stays as written."""
    return _TOKEN.sub(
        lambda m: values.get(m.group(1), m.group(0)) if m.group(1) else m.group(0)[0],
        template,
    )


def combinations(template: str, substitutions: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """The values of each expansion of a template: cartesian product over its declared
    placeholders, names sorted, the last varying fastest."""
    names = sorted({name for name, _ in placeholders(template) if name in substitutions})
    combos = itertools.product(*(substitutions[name] for name in names))
    return [dict(zip(names, combo, strict=True)) for combo in combos]


def expand(template: str, substitutions: Mapping[str, Sequence[str]]) -> list[str]:
    """All expansions of a template. Every placeholder must be declared in `substitutions`
    (the test parser checks this first)."""
    return [render(template, values) for values in combinations(template, substitutions)]


@dataclass(frozen=True)
class ExpansionSize:
    """What expanding one template makes, computed without expanding it."""

    count: int  # expansions: the product of the sizes of the substitutions it uses
    chars: int  # their total length, at most (an escaped brace counts as two)
    factors: tuple[tuple[str, int], ...]  # (substitution, number of values), sorted

    def describe(self) -> str:
        """ "a: 100 values × b: 100 values", or "no substitutions"."""
        return " × ".join(f"{name}: {size:,} values" for name, size in self.factors) or (
            "no substitutions"
        )


def expansion_size(template: str, substitutions: Mapping[str, Sequence[str]]) -> ExpansionSize:
    used = [name for name, _ in placeholders(template) if name in substitutions]
    factors = tuple((name, len(substitutions[name])) for name in sorted(set(used)))
    count = math.prod(size for _, size in factors)
    # Each expansion keeps the text around the placeholders; each occurrence of {name} takes
    # each of its values in count / len(values) of the expansions.
    chars = count * (len(template) - sum(len(name) + 2 for name in used))
    for name, occurrences in Counter(used).items():
        values = substitutions[name]
        if values:
            chars += occurrences * (count // len(values)) * sum(len(v) for v in values)
    return ExpansionSize(count, chars, factors)


def over_limits(
    kind: str, size: ExpansionSize, queries_before: int, chars: int, max_queries: int
) -> str:
    """Why an element of `size` takes its test over the limits ("" when it does not), with
    `queries_before` expanded before it and `chars` of SQL in all, this element's included."""
    queries = queries_before + size.count
    before = f", {queries_before:,} before it" if queries_before else ""
    if queries > max_queries:
        return (
            f"<{kind}> expands to {size.count:,} queries ({size.describe()}{before}): over the "
            f"limit of {max_queries:,} queries per test"
        )
    if chars > MAX_EXPANDED_CHARS:
        return (
            f"<{kind}> expands to {size.count:,} queries ({size.describe()}) and the test to "
            f"{chars:,} characters of SQL: over the limit of {MAX_EXPANDED_CHARS:,}"
        )
    return ""
