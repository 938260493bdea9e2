"""Setup and teardown statements (create, fill, drop) on every server of a run, in
parallel, and the wait for background merges before a test's queries are measured."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from artifacts.tables import SIDES, STAGE_SETUP, STAGE_TEARDOWN, WHOLE_TEST, ErrorRow
from runner.executor import HttpExecutor, QueryOutcome
from runner.servers import ServerPair, Side
from runner.settle import (
    CANNOT_ASSIGN_OPTIMIZE,
    OPTIMIZE_ATTEMPTS,
    SETTLE_TIMEOUT_S,
    THROW_IF_NOOP,
    Settled,
    is_optimize,
    layout_differences,
    running_merges,
    settle,
    wait_for_merges,
)
from runner.testdef import Statement, TestDef

# Create/fill queries may load a lot of data: they get more time than a measured query.
SETUP_TIMEOUT_S = 600.0
SETUP_KINDS = ("create_query", "fill_query")  # run in document order, as written
DROP_KINDS = ("drop_query",)

Server = tuple[int, str]  # (process set, side)


@dataclass(frozen=True)
class Outcome:
    """Of one server: its first failure (None when all ran, or failures are ignored) and, when
    the server did not answer, the outcome that says so (the caller restarts it)."""

    server: Server
    error: ErrorRow | None
    gone: QueryOutcome | None


def statements(test: TestDef, kinds: Sequence[str]) -> tuple[Statement, ...]:
    return tuple(s for s in test.statements if s.kind in kinds)


def every_server(sets: Sequence[ServerPair]) -> list[Server]:
    return [(process, side) for process in range(len(sets)) for side in SIDES]


def on_every_server(
    sets: Sequence[ServerPair],
    test: TestDef,
    queries: tuple[Statement, ...],
    stage: str | None,
    limit: float = SETUP_TIMEOUT_S,
) -> list[Outcome]:
    """Run the statements on every server in parallel, each under `limit` seconds (what the
    budgets leave, at most SETUP_TIMEOUT_S). With stage None, failures are ignored (drops
    before the setup may find nothing)."""
    if not queries:
        return []
    servers = every_server(sets)

    def run_on(server: Server) -> Outcome:
        process, side = server
        return Outcome(server, *_run_statements(sets[process], side, test, queries, stage, limit))

    with ThreadPoolExecutor(max_workers=len(servers)) as pool:
        return list(pool.map(run_on, servers))


def missing_tables(sets: Sequence[ServerPair], tables: Sequence[str]) -> str:
    """The first table of a test's <preconditions> that some server lacks, said in words;
    "" when every server has them all. "db.name", or "name" in the default database."""
    for table in tables:
        database, _, name = table.rpartition(".")
        for process, side in every_server(sets):
            server = sets[process].side(side)
            rows = server.control.execute(
                "SELECT count() FROM system.tables WHERE database = "
                + ("%(database)s" if database else "currentDatabase()")
                + " AND name = %(name)s",
                {"database": database, "name": name},
            )
            if not rows or not rows[0][0]:
                return f"table {table} does not exist on {server.process.describe()}"
    return ""


def settle_all(
    sets: Sequence[ServerPair], test: TestDef, timeout: float = SETTLE_TIMEOUT_S
) -> list[str]:
    """Wait until no server is merging (at most `timeout` seconds); warnings for servers still
    merging, unreachable, or holding tables that differ in layout."""
    servers = every_server(sets)

    def on(server: Server) -> Settled | Exception:
        process, side = server
        try:
            return settle(sets[process].side(side).control, timeout)
        except Exception as e:  # a dead server shows in the measured runs; say why here
            return e

    with ThreadPoolExecutor(max_workers=len(servers)) as pool:
        results = list(pool.map(on, servers))
    warnings = []
    parts: dict[str, dict[str, int]] = {}
    for (process, side), result in zip(servers, results, strict=True):
        name = side if process == 0 else f"{side} #{process + 1}"
        if isinstance(result, Exception):
            warnings.append(f"{test.name}: could not check merges on the {name} server: {result}")
            continue
        if not result.merges_done:
            warnings.append(
                f"{test.name}: the {name} server was still merging {timeout:.0f} s "
                "after the setup; its queries are measured anyway"
            )
        parts[name] = result.parts
    warnings.extend(
        f"{test.name}: {line}. The servers' data differ in layout, which can make "
        "queries differ where the patch did not; fill the tables deterministically "
        "(OPTIMIZE TABLE ... FINAL after the inserts)"
        for line in layout_differences(parts)
    )
    return warnings


def _run_statements(
    pair: ServerPair,
    side: str,
    test: TestDef,
    queries: tuple[Statement, ...],
    stage: str | None,
    limit: float = SETUP_TIMEOUT_S,
) -> tuple[ErrorRow | None, QueryOutcome | None]:
    """Setup stops at its first failure (what follows needs what failed). Teardown runs every
    drop, then once more each that failed: a drop listed before the drop of what depends on it
    (a dictionary before the table that reads it) works after it."""
    executor = HttpExecutor(pair.side(side).process.ports.http, limit)
    settings = dict(test.settings)

    def error(statement: Statement, outcome: QueryOutcome) -> ErrorRow:
        where = f"{statement.location}: <{statement.kind}>"
        number = pair.side(side).process.process
        name = side if number == 0 else f"{side} #{number + 1}"
        message = f"{where} failed on the {name} server: {outcome.message}"
        return ErrorRow(test.name, WHOLE_TEST, side, stage or "", outcome.error_code, message)

    failed: list[Statement] = []
    try:
        for number, statement in enumerate(queries):
            qid = f"{test.name}.{stage or 'drop'}{number}"
            if stage == STAGE_SETUP and is_optimize(statement.sql):
                outcome = _optimize(executor, pair.side(side), statement.sql, qid, settings)
            else:
                outcome = executor.execute(statement.sql, qid, settings)
            if outcome.ok:
                continue
            gone = outcome if outcome.server_gone else None
            if stage is None:
                if gone:
                    return None, gone
                continue
            if stage == STAGE_TEARDOWN and gone is None:
                failed.append(statement)
                continue
            return error(statement, outcome), gone
        for number, statement in enumerate(failed):
            qid = f"{test.name}.{stage}.again{number}"
            outcome = executor.execute(statement.sql, qid, settings)
            if not outcome.ok:
                return error(statement, outcome), outcome if outcome.server_gone else None
    finally:
        executor.close()
    return None, None


def _optimize(
    executor: HttpExecutor, server: Side, sql: str, qid: str, settings: dict[str, str]
) -> QueryOutcome:
    """A setup OPTIMIZE that really merges (runner/settle.py). "Can't OPTIMIZE" with nothing
    merging means nothing to do: it runs once more as written, as ClickHouse itself would."""
    wait_for_merges(server.control)
    if not server.capabilities.optimize_throw_if_noop:
        return executor.execute(sql, qid, settings)
    strict = {**settings, THROW_IF_NOOP: "1"}
    for attempt in range(OPTIMIZE_ATTEMPTS):
        outcome = executor.execute(sql, f"{qid}.try{attempt}", strict)
        if outcome.error_code != CANNOT_ASSIGN_OPTIMIZE or running_merges(server.control) == 0:
            break
        wait_for_merges(server.control)
    if outcome.error_code != CANNOT_ASSIGN_OPTIMIZE:
        return outcome
    return executor.execute(sql, qid, settings)
