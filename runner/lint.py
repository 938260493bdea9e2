"""`chperf lint`: reject performance tests that are unstable by design. Static checks run on
the expanded statements (CHECKS per test) and report each problem once per source line, however
many expansions share it; the checks that read a run's artifacts (`--timings`, `--measure`) are
in runner/lintruns.py."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from runner.datasets import DATASET
from runner.sqltext import unquoted
from runner.testdef import Location, Statement, TestDef


@dataclass(frozen=True)
class LintProblem:
    location: Location
    message: str
    remedy: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message} (remedy: {self.remedy})"


SETUP_KINDS = ("create_query", "fill_query")
# Name prefixes of aggregate functions: a top-level call means the result is one row per group.
_AGGREGATE = re.compile(
    r"\b(count|sum|avg|min|max|any|uniq|quantile|median|group|topK|arg|var|stddev|covar|corr|"
    r"entropy|histogram|sequence|windowFunnel|retention|simpleLinearRegression|bitmap|"
    r"skewness|kurtosis|first_value|last_value|boundingRatio|categoricalInformationValue|"
    r"theilsU|cramersV|contingency|mannWhitney|studentTTest|welchTTest|kolmogorov|"
    r"deltaSum|exponential|largestTriangle|sparkbar|flameGraph|rankCorr)\w*\s*\(",
    re.IGNORECASE,
)
_CREATE = re.compile(
    r"^\s*CREATE\s+(?:MATERIALIZED\s+)?(TABLE|VIEW|DICTIONARY|DATABASE)\s+"
    r"(?:IF\s+NOT\s+EXISTS\s+)?([\w.`\"]+)",
    re.IGNORECASE,
)
_DROP = re.compile(
    r"^\s*DROP\s+(TABLE|VIEW|DICTIONARY|DATABASE)\s+(?:IF\s+EXISTS\s+)?([\w.`\"]+)",
    re.IGNORECASE,
)
_MERGETREE = re.compile(r"\bENGINE\s*=\s*\w*MergeTree\b", re.IGNORECASE)
_INSERT_INTO = re.compile(r"^\s*INSERT\s+INTO\s+(?:TABLE\s+)?([\w.`\"]+)", re.IGNORECASE)
_SETTLED = re.compile(
    r"^\s*(?:OPTIMIZE\s+TABLE\s+([\w.`\"]+).*\bFINAL\b|SYSTEM\s+STOP\s+MERGES\s+([\w.`\"]+))",
    re.IGNORECASE | re.DOTALL,
)
_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`\\]|\\.)*`", re.DOTALL)
_NESTED = re.compile(r"\([^()]*\)")


def _without_literals(sql: str) -> str:
    return _LITERAL.sub("''", sql)


def _top_level(sql: str) -> str:
    """The statement with literals blanked and the inside of every parenthesis removed."""
    text = _without_literals(sql)
    while True:
        emptied = _NESTED.sub("<>", text)
        if emptied == text:
            return text.replace("<>", "()")
        text = emptied


def _problem(statement: Statement, message: str, remedy: str) -> LintProblem:
    return LintProblem(statement.location, message, remedy)


def _check_nondeterminism(test: TestDef) -> Iterable[LintProblem]:
    single_threaded = _single_threaded(test.settings)
    views = _ordered_views(test)
    for statement in test.statements:
        code = _without_literals(statement.sql)
        if statement.kind != "drop_query" and _unordered_limit(code, single_threaded, views):
            yield _problem(
                statement,
                f"LIMIT without ORDER BY over a table read by several threads in "
                f"<{statement.kind}>: which rows it takes, and so the data it works on, "
                "depend on thread scheduling",
                "add an ORDER BY on a unique key before the LIMIT, or read with max_threads 1",
            )


# Sources whose rows cost the same whichever ones a LIMIT takes: generated numbers, zeros,
# constants, random data (a load generator such as numbers_mt(N) LIMIT k is fine).
_GENERATOR = re.compile(
    r"^(numbers|numbers_mt|zeros|zeros_mt|system\.numbers|system\.numbers_mt|system\.zeros|"
    r"system\.zeros_mt|system\.one|values|generateRandom|generate_series|range|null|input)$",
    re.IGNORECASE,
)
_SOURCE = re.compile(r"\b(?:FROM|JOIN)\s+([\w.`\"{}]+|\()", re.IGNORECASE)
_LIMIT = re.compile(r"\bLIMIT\s+(\d+)(?:\s*,\s*(\d+))?(\s+BY\b)?", re.IGNORECASE)
_CREATE_VIEW_AS = re.compile(
    r"^\s*CREATE\s+(?:MATERIALIZED\s+)?VIEW\s+(?:IF\s+NOT\s+EXISTS\s+)?([\w.`\"]+).*?\bAS\b(.*)$",
    re.IGNORECASE | re.DOTALL,
)


def _single_threaded(settings: Sequence[tuple[str, str]]) -> bool:
    return dict(settings).get("max_threads", "").strip() == "1"


def _ordered_views(test: TestDef) -> set[str]:
    """Views the test creates whose own query orders its rows."""
    found = set()
    for statement in test.statements:
        match = _CREATE_VIEW_AS.match(_without_literals(statement.sql))
        if match and re.search(r"\bORDER\s+BY\b", _top_level(match.group(2)), re.I):
            found.add(unquoted(match.group(1)))
    return found


def _levels(code: str) -> Iterator[str]:
    """The statement and each parenthesized part of it, with the inside of their own nested
    parentheses removed: one SELECT level at a time."""
    yield _top_level(code)
    depth, start = 0, 0
    for i, char in enumerate(code):
        if char == "(":
            if depth == 0:
                start = i + 1
            depth += 1
        elif char == ")" and depth:
            depth -= 1
            if depth == 0:
                yield from _levels(code[start:i])


def _unordered_limit(code: str, single_threaded: bool, ordered_views: set[str]) -> bool:
    """Some SELECT level takes a LIMIT (not LIMIT 0, not LIMIT ... BY) of the rows a table
    gives, without ORDER BY or GROUP BY at that level, read by more than one thread: which
    rows it takes varies from run to run and between the servers."""
    if single_threaded or re.search(r"\bmax_threads\s*=\s*1\b", code, re.I):
        return False
    for level in _levels(code):
        limits = [m for m in _LIMIT.finditer(level) if not m.group(3)]
        if not any(int(m.group(2) or m.group(1)) > 0 for m in limits):
            continue
        if re.search(r"\b(ORDER|GROUP)\s+BY\b", level, re.I):
            continue
        for source in (m.group(1) for m in _SOURCE.finditer(level)):
            if source == "(":
                continue  # a subquery: its own level says whether its rows are ordered
            name = unquoted(source)
            if not _GENERATOR.match(name) and name not in ordered_views:
                return True
    return False


def _check_duplicates(test: TestDef) -> Iterable[LintProblem]:
    seen: dict[str, int] = {}
    for query in test.queries:
        normalized = " ".join(query.sql.split())
        if normalized in seen:
            yield LintProblem(
                query.location,
                f"query {query.index} repeats query {seen[normalized]} after substitution",
                "remove the duplicate, or make the substitution values differ",
            )
        else:
            seen[normalized] = query.index


# A result of this many rows takes the client long enough to blur the server's time.
LARGE_RESULT_ROWS = 1_000_000
_NUMBERS = re.compile(r"\b(?:numbers|numbers_mt)\s*\(\s*(?:\d+\s*,\s*)?(\d+)\s*\)", re.I)


def _filled_rows(test: TestDef) -> dict[str, int]:
    """Rows the test's setup writes into each table, where they come from numbers(N)."""
    rows: dict[str, int] = {}
    for statement in test.statements:
        if statement.kind not in SETUP_KINDS:
            continue
        target = _INSERT_INTO.match(statement.sql) or _CREATE.match(statement.sql)
        count = _NUMBERS.search(statement.sql)
        if target and count:
            name = unquoted(target.group(target.lastindex or 1))
            rows[name] = rows.get(name, 0) + int(count.group(1))
    return rows


def _returns_large_result(sql: str, table_rows: dict[str, int]) -> bool:
    """Conservative: a top-level SELECT of one row per source row (no WHERE, JOIN, DISTINCT,
    LIMIT, GROUP BY, FORMAT or aggregate anywhere in its select list) from a source known to
    hold at least LARGE_RESULT_ROWS rows: numbers(N), a table the test fills from numbers(N),
    or one of ClickHouse's hits datasets. Anything else gets the benefit of the doubt."""
    code = _without_literals(sql)
    top = _top_level(sql)
    if not re.match(r"\s*SELECT\b", top, re.I):
        return False
    if re.search(
        r"\bFORMAT\s+\w+|\bLIMIT\b|\bGROUP\s+BY\b|\bWHERE\b|\bPREWHERE\b|\bHAVING\b|"
        r"\bJOIN\b|\bDISTINCT\b|\bARRAY\s+JOIN\b",
        top,
        re.I,
    ):
        return False
    parts = re.split(r"\bFROM\b", code, maxsplit=1, flags=re.I)
    if len(parts) != 2 or _AGGREGATE.search(parts[0]):
        return False
    source = re.match(r"\s*([\w.`\"]+)\s*(\()?", parts[1])
    if source is None:
        return False
    name = unquoted(source.group(1))
    if source.group(2):
        count = _NUMBERS.match(parts[1].strip())
        return count is not None and int(count.group(1)) >= LARGE_RESULT_ROWS
    rows = table_rows.get(name)
    # ClickHouse's test datasets hold millions of rows
    return rows >= LARGE_RESULT_ROWS if rows is not None else bool(DATASET.match(name))


def _check_large_results(test: TestDef) -> Iterable[LintProblem]:
    if test.protocols is not None:
        return  # timing the transfer is what a <protocols> test is for (docs/protocols.md)
    table_rows = _filled_rows(test)
    for query in test.queries:
        if _returns_large_result(query.sql, table_rows):
            yield LintProblem(
                query.location,
                f"query {query.index} returns one row per row of a large source: the client "
                "would time the transfer, not the server",
                "end it with FORMAT Null, or aggregate the result away (SELECT count() FROM (...))",
            )


def _created(test: TestDef) -> list[tuple[str, Statement]]:
    found = []
    for statement in test.statements:
        match = _CREATE.match(statement.sql)
        if statement.kind in SETUP_KINDS and match:
            found.append((unquoted(match.group(2)), statement))
    return found


# A view holds no data and runs nothing in the background: leaving one behind is harmless.
_PLAIN_VIEW = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\b", re.IGNORECASE)


def _unqualified_in_default(name: str) -> str:
    """`default.t` as `t`: an unqualified name is in the default database, which chperf's
    servers start in."""
    return name.removeprefix("default.")


def _check_drops(test: TestDef) -> Iterable[LintProblem]:
    drops = [m for m in (_DROP.match(sql) for sql in test.drop_queries) if m is not None]
    dropped = {_unqualified_in_default(unquoted(m.group(2))) for m in drops}
    # DROP DATABASE db takes every table, view and dictionary db.name with it.
    databases = {unquoted(m.group(2)) for m in drops if m.group(1).upper() == "DATABASE"}
    for name, statement in _created(test):
        database, dot, _ = name.rpartition(".")
        if _unqualified_in_default(name) in dropped or (dot and database in databases):
            continue
        if _PLAIN_VIEW.match(statement.sql):
            continue
        created = _CREATE.match(statement.sql)
        kind = created.group(1).upper() if created else "TABLE"
        yield _problem(
            statement,
            f"{name} is created but no <drop_query> drops it",
            f"add <drop_query>DROP {kind} IF EXISTS {name}</drop_query>",
        )


# ClickHouse's max_insert_block_size: one INSERT ... SELECT of at most this many rows writes
# one part (per partition) that no merge will touch.
ONE_PART_ROWS = 1_048_576


def _check_settled_parts(test: TestDef) -> Iterable[LintProblem]:
    """A MergeTree table filled by several inserts, or by one too large for a single part,
    and neither OPTIMIZE ... FINAL nor SYSTEM STOP MERGES after it: how far the background
    merges got when the runs start differs between the servers."""
    mergetree = {name for name, s in _created(test) if _MERGETREE.search(s.sql)}
    pending: dict[str, Statement] = {}
    inserts: dict[str, list[Statement]] = {}
    stopped: set[str] = set()  # "" stands for every table
    for statement in test.statements:
        if statement.kind not in SETUP_KINDS:
            continue
        filled = _filled_table(statement.sql)
        settled = _SETTLED.match(statement.sql)
        stop = _STOP_MERGES.match(statement.sql)
        if stop:
            stopped.add(unquoted(stop.group(1) or ""))
        if filled in mergetree:
            name = filled
            inserts.setdefault(name, []).append(statement)
            if _many_parts(inserts[name]) and not stopped & {name, ""}:
                pending.setdefault(name, inserts[name][0])
        elif settled or stop:
            target = settled.group(1) or settled.group(2) if settled else stop and stop.group(1)
            if target:
                pending.pop(unquoted(target), None)
            else:
                pending.clear()
    for name, statement in pending.items():
        yield _problem(
            statement,
            f"MergeTree table {name} is filled without OPTIMIZE TABLE {name} FINAL: its parts "
            "depend on background merge timing and may differ between the servers",
            f"add <fill_query>OPTIMIZE TABLE {name} FINAL</fill_query> after the inserts, or "
            f"SYSTEM STOP MERGES {name} before them when the test measures many parts",
        )


_STOP_MERGES = re.compile(r"^\s*SYSTEM\s+STOP\s+MERGES\b\s*([\w.`\"]+)?", re.IGNORECASE)
_NO_MERGES = re.compile(r"\bENGINE\s*=\s*(Null|Memory|Log|TinyLog|StripeLog|Set|Join)\b", re.I)


def _check_growing_inserts(test: TestDef) -> Iterable[LintProblem]:
    """A measured INSERT repeats on the same table: the runs do not do the same work when
    other queries read the growing table, or when background merges of the earlier runs'
    parts run during later runs (unless merges are stopped)."""
    engines = {name: statement.sql for name, statement in _created(test)}
    stopped: set[str] = set()
    everything = False
    for statement in test.statements:
        stop = _STOP_MERGES.match(statement.sql)
        if stop and statement.kind != "drop_query":
            everything = everything or not stop.group(1)
            stopped.add(unquoted(stop.group(1) or ""))
    if test.load is not None and test.load.insert_table:
        stopped.add(unquoted(test.load.insert_table))  # truncated before every load block
    for query in test.queries:
        insert = _INSERT_INTO.match(query.sql)
        if not insert:
            continue
        table = unquoted(insert.group(1))
        readers = [
            q.index
            for q in test.queries
            if q.index != query.index
            and not _INSERT_INTO.match(q.sql)
            and re.search(rf"\b{re.escape(table)}\b", _without_literals(q.sql))
        ]
        merging = table in engines and _MERGETREE.search(engines[table]) is not None
        merging = merging and not everything and table not in stopped
        if readers:
            yield LintProblem(
                query.location,
                f"query {query.index} inserts into {table}, which query {readers[0]} reads: "
                "that query's work grows run over run",
                "read a table no measured query writes, or measure the INSERT in its own test",
            )
        elif merging:
            yield LintProblem(
                query.location,
                f"query {query.index} inserts into MergeTree table {table} on every run and "
                "merges are not stopped: background merges of earlier runs' parts compete "
                "with later runs",
                f"add <fill_query>SYSTEM STOP MERGES {table}</fill_query>",
            )


# CREATE TABLE t ... AS SELECT fills t as an INSERT would (not `AS other_table`, a copy of
# its structure, nor `EMPTY AS SELECT`).
_AS_SELECT = re.compile(r"\bAS\s*\(?\s*(?:SELECT|WITH)\b", re.IGNORECASE)
_EMPTY_AS = re.compile(r"\bEMPTY\s+AS\b", re.IGNORECASE)


def _filled_table(sql: str) -> str | None:
    """The table an INSERT INTO or a CREATE TABLE ... AS SELECT writes rows into."""
    insert = _INSERT_INTO.match(sql)
    if insert is not None:
        return unquoted(insert.group(1))
    create = _CREATE.match(sql)
    if create is None or create.group(1).upper() != "TABLE" or _EMPTY_AS.search(sql):
        return None
    return unquoted(create.group(2)) if _AS_SELECT.search(sql, create.end()) else None


def _many_parts(inserts: Sequence[Statement]) -> bool:
    """Several inserts, or one of more than ONE_PART_ROWS rows from numbers(N). An insert of
    unknown size (from another table) gets the benefit of the doubt."""
    if len(inserts) > 1:
        return True
    count = _NUMBERS.search(inserts[0].sql)
    return count is not None and int(count.group(1)) > ONE_PART_ROWS


def _check_warnings(test: TestDef) -> Iterable[LintProblem]:
    """Unknown elements and attributes (typos, mostly). Legacy elements, a <name> other than
    the file's and unused substitutions are only noted by `chperf run`: they do no harm."""
    for warning in test.warnings:
        if not warning.message.startswith(("legacy ", "substitution ", "<name> ")):
            yield LintProblem(warning.location, warning.message, "remove it or fix its spelling")


CHECKS = (
    _check_nondeterminism,
    _check_duplicates,
    _check_large_results,
    _check_drops,
    _check_settled_parts,
    _check_growing_inserts,
    _check_warnings,
)


def lint_test(test: TestDef) -> list[LintProblem]:
    """Each check's problems, once per source line: expansions of one element share a
    problem, and the message says how many of them have it."""
    found: list[LintProblem] = []
    for check in CHECKS:
        by_line: dict[Location, list[LintProblem]] = {}
        for problem in check(test):
            by_line.setdefault(problem.location, []).append(problem)
        for problems in by_line.values():
            first = problems[0]
            if len(problems) > 1:
                first = LintProblem(
                    first.location,
                    f"{first.message} (and {len(problems) - 1} more expansions of this element)",
                    first.remedy,
                )
            found.append(first)
    return sorted(found, key=lambda p: p.location.line)
