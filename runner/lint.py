"""`chperf lint`: reject performance tests that are unstable by design. Static checks run on
the expanded statements (CHECKS per test, then tables shared across tests); `--measure` judges
an A/A run of each query against the limits at the end of this file."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from artifacts.errors import ChperfError
from runner.testdef import Location, Statement, TestDef, TestDefError, discover, load_test


@dataclass(frozen=True)
class LintProblem:
    location: Location
    message: str
    remedy: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message} (remedy: {self.remedy})"


SETUP_KINDS = ("create_query", "fill_query")
# Functions whose value differs between calls, servers or days.
NONDETERMINISTIC_FUNCTIONS = (
    "rand|rand32|rand64|randConstant|randUniform|randNormal|randLogNormal|randExponential|"
    "randBernoulli|randBinomial|randPoisson|canonicalRand|randomString|randomFixedString|"
    "randomPrintableASCII|randomStringUTF8|fuzzBits|generateUUIDv4|generateUUIDv7|"
    "generateRandom|now|now64|nowInBlock|today|yesterday|"
    "rowNumberInAllBlocks|rowNumberInBlock|blockNumber|runningDifference|neighbor"
)
_NONDETERMINISTIC = re.compile(rf"\b({NONDETERMINISTIC_FUNCTIONS})\s*\(", re.IGNORECASE)
# Name prefixes of aggregate functions: a top-level call means the result is one row per group.
_AGGREGATE = re.compile(
    r"\b(count|sum|avg|min|max|any|uniq|quantile|median|group|topK|arg|var|stddev|covar|corr|"
    r"entropy|histogram|sequence|windowFunnel|retention|simpleLinearRegression|bitmap|"
    r"skewness|kurtosis|first_value|last_value)\w*\s*\(",
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


def _name(raw: str) -> str:
    return raw.replace("`", "").replace('"', "")


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
    for statement in test.statements:
        code = _without_literals(statement.sql)
        found = _NONDETERMINISTIC.search(code)
        if found and statement.kind in SETUP_KINDS:
            yield _problem(
                statement,
                f"nondeterministic {found.group(1)}() in <{statement.kind}>: "
                "the two servers would hold different data",
                "generate data from numbers() with hash functions of number "
                "(intHash64(number), cityHash64(number), ...)",
            )
        if re.search(r"\bLIMIT\b", code, re.I) and not re.search(r"\bORDER\s+BY\b", code, re.I):
            yield _problem(
                statement,
                f"LIMIT without ORDER BY in <{statement.kind}>: which rows it returns and the "
                "work it does depend on thread scheduling",
                "add an ORDER BY on a unique key before the LIMIT",
            )


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


def _returns_large_result(sql: str) -> bool:
    """Heuristic, conservative: a top-level SELECT ... FROM with no FORMAT, LIMIT, GROUP BY or
    aggregate call returns one row per source row. Anything else is given the benefit of the
    doubt (an aggregate, a LIMIT, a query without FROM, a non-SELECT statement)."""
    top = _top_level(sql)
    if not re.match(r"\s*(SELECT|WITH)\b", top, re.I):
        return False
    if re.search(r"\bFORMAT\s+\w+|\bLIMIT\b|\bGROUP\s+BY\b", top, re.I):
        return False
    select_list = re.split(r"\bFROM\b", top, maxsplit=1, flags=re.I)
    return len(select_list) == 2 and not _AGGREGATE.search(select_list[0])


def _check_large_results(test: TestDef) -> Iterable[LintProblem]:
    for query in test.queries:
        if _returns_large_result(query.sql):
            yield LintProblem(
                query.location,
                f"query {query.index} may return a large result: the client would time the "
                "transfer, not the server",
                "end it with FORMAT Null, or aggregate the result away (SELECT count() FROM (...))",
            )


def _created(test: TestDef) -> list[tuple[str, Statement]]:
    found = []
    for statement in test.statements:
        match = _CREATE.match(statement.sql)
        if statement.kind in SETUP_KINDS and match:
            found.append((_name(match.group(2)), statement))
    return found


def _check_drops(test: TestDef) -> Iterable[LintProblem]:
    dropped = {
        _name(m.group(2)) for m in (_DROP.match(sql) for sql in test.drop_queries) if m is not None
    }
    for name, statement in _created(test):
        if name not in dropped:
            yield _problem(
                statement,
                f"{name} is created but no <drop_query> drops it",
                f"add <drop_query>DROP TABLE IF EXISTS {name}</drop_query>",
            )


def _check_settled_parts(test: TestDef) -> Iterable[LintProblem]:
    mergetree = {name for name, s in _created(test) if _MERGETREE.search(s.sql)}
    pending: dict[str, Statement] = {}
    for statement in test.statements:
        if statement.kind != "fill_query":
            continue
        insert = _INSERT_INTO.match(statement.sql)
        settled = _SETTLED.match(statement.sql)
        if insert and _name(insert.group(1)) in mergetree:
            pending.setdefault(_name(insert.group(1)), statement)
        elif settled:
            pending.pop(_name(settled.group(1) or settled.group(2)), None)
    for name, statement in pending.items():
        yield _problem(
            statement,
            f"MergeTree table {name} is filled without OPTIMIZE TABLE {name} FINAL: its parts "
            "depend on background merge timing and may differ between the servers",
            f"add <fill_query>OPTIMIZE TABLE {name} FINAL</fill_query> after the inserts",
        )


def _check_warnings(test: TestDef) -> Iterable[LintProblem]:
    for warning in test.warnings:
        yield LintProblem(warning.location, warning.message, "remove it or fix its spelling")


CHECKS = (
    _check_nondeterminism,
    _check_duplicates,
    _check_large_results,
    _check_drops,
    _check_settled_parts,
    _check_warnings,
)


def lint_test(test: TestDef) -> list[LintProblem]:
    return [problem for check in CHECKS for problem in check(test)]


def _check_shared_tables(tests: Sequence[TestDef]) -> Iterable[LintProblem]:
    owner: dict[str, str] = {}
    for test in tests:
        for name, statement in _created(test):
            first = owner.setdefault(name, test.name)
            if first != test.name:
                yield _problem(
                    statement,
                    f"table {name} is also created by test {first}: one test's drop queries "
                    "would destroy the other's data",
                    f"prefix table names with the test name ({test.name}_...)",
                )


def lint_paths(paths: Sequence[Path]) -> list[LintProblem]:
    """Lint test files (or directories of them). Raises ChperfError for a missing path or an
    unreadable file; every problem in a readable file is a LintProblem."""
    problems: list[LintProblem] = []
    tests: list[TestDef] = []
    for path in discover(paths):
        if not path.is_file() or not _readable(path):
            raise ChperfError(f"{path}: cannot read test file", hint="check the path and mode")
        try:
            test = load_test(path)
        except TestDefError as e:
            problems.append(LintProblem(e.location, e.reason, e.hint or "fix the test file"))
            continue
        tests.append(test)
        problems += lint_test(test)
    problems += _check_shared_tables(tests)
    return problems


def _readable(path: Path) -> bool:
    try:
        with path.open("rb"):
            return True
    except OSError:
        return False


# --measure: an A/A run of the installed server against itself, with the CI defaults.
MEDIAN_FLOOR_S = 0.010  # below ~10 ms client overhead dominates the time
MEDIAN_CEILING_S = 2.0  # slower queries make the suite too slow to run per commit
AA_THRESHOLD_CEILING = 0.10  # the unstable threshold: T above it cannot see a 10% change


@dataclass(frozen=True)
class MeasuredQuery:
    test: str
    query_index: int
    verdict: str
    reason: str
    reference_median: float | None  # seconds
    threshold: float | None  # T as a fraction of the reference median


def measured_problems(
    measured: Sequence[MeasuredQuery], locations: dict[tuple[str, int], Location]
) -> list[LintProblem]:
    """Pure part of --measure: judge A/A results against the limits above."""
    problems: list[LintProblem] = []
    for m in measured:
        where = locations.get((m.test, m.query_index))
        if where is None:
            continue
        problems += _judge_measured(m, where)
    return problems


def _judge_measured(m: MeasuredQuery, where: Location) -> Iterable[LintProblem]:
    name = f"query {m.query_index}"
    if m.reference_median is None or m.threshold is None:
        yield LintProblem(
            where, f"{name} was not measured: {m.reason}", "make it run on the installed server"
        )
        return
    median_ms = m.reference_median * 1000
    if m.reference_median < MEDIAN_FLOOR_S:
        yield LintProblem(
            where,
            f"{name} runs {median_ms:.1f} ms, below the {MEDIAN_FLOOR_S * 1000:.0f} ms floor: "
            "client overhead dominates",
            "make it heavier (more rows, or a costlier expression)",
        )
    if m.reference_median > MEDIAN_CEILING_S:
        yield LintProblem(
            where,
            f"{name} runs {median_ms:.0f} ms, above the {MEDIAN_CEILING_S:.0f} s ceiling",
            "make it lighter (fewer rows)",
        )
    if m.threshold > AA_THRESHOLD_CEILING:
        yield LintProblem(
            where,
            f"{name} is unstable against itself: A/A threshold T {m.threshold:.1%} is above "
            f"{AA_THRESHOLD_CEILING:.0%}",
            "remove sources of noise (tiny or huge runtimes, memory-bound work, "
            "nondeterministic data) or make the query heavier",
        )
