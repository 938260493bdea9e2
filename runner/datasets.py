"""ClickHouse's performance-test datasets (hits_10m_single, hits_100m_single, test.hits):
tables a test reads without creating them. ClickHouse's CI loads them before any test; a
test that reads one the servers lack is skipped, as if its <preconditions> named it."""

from __future__ import annotations

import re

from runner.sqltext import unquoted, without_strings
from runner.testtypes import TestDef

# A dataset's name, qualified or not: hits_10m_single, hits_100m_single, test.hits,
# datasets.hits_v1.
DATASET = re.compile(r"^(?:\w+\.)?hits(?:_\w+)?$", re.IGNORECASE)
_SOURCE = re.compile(r"\b(?:FROM|JOIN)\s+([\w.`\"]+)", re.IGNORECASE)
# CREATE TABLE t AS other: t takes other's structure, so other must exist.
_COPIED = re.compile(
    r"^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?[\w.`\"]+\s+AS\s+(?!SELECT\b|WITH\b)"
    r"([\w.`\"]+)",
    re.IGNORECASE,
)
_CREATED = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?(?:MATERIALIZED\s+)?"
    r"(?:TABLE|VIEW|DICTIONARY)\s+(?:IF\s+NOT\s+EXISTS\s+)?([\w.`\"]+)",
    re.IGNORECASE,
)


def dataset_tables(test: TestDef) -> tuple[str, ...]:
    """The dataset tables the test's statements and queries read (FROM or JOIN) and do not
    create themselves, in order of first use."""
    texts = [s.sql for s in test.statements] or [
        *test.create_queries,
        *test.fill_queries,
        *(q.sql for q in test.queries),
    ]
    created = {unquoted(m.group(1)) for m in map(_CREATED.match, texts) if m is not None}
    found: dict[str, None] = {}
    for text in texts:
        code = without_strings(text)
        for match in (*filter(None, [_COPIED.match(code)]), *_SOURCE.finditer(code)):
            name = unquoted(match.group(1))
            if DATASET.match(name) and name not in created:
                found.setdefault(name)
    return tuple(found)
