"""One block of a load test: N client threads, each with its own keep-alive HTTP connection
(runner/executor.py), run the query mix against one server for a fixed time.

Every client starts at its own place in the mix (client i at query i) and goes round it, so
both servers get the same mix at every concurrency. A client starts no query after the
block's deadline; the queries in flight then finish and count: the block lasts from the start
to the last client's last answer, and its throughput is completed queries over that time.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runner.executor import HttpExecutor, QueryOutcome


@dataclass(frozen=True)
class BlockMeasure:
    start_time: float  # wall clock (Unix seconds)
    seconds: float
    latencies: tuple[float, ...]  # completed queries, in no particular order
    errors: int
    first_error: str
    server_gone: bool  # a query found the server dead or hung: the caller checks it
    harness_cpu: float  # chperf's CPU time during the block over its wall time, in cores

    @property
    def queries(self) -> int:
        return len(self.latencies)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank q-quantile (0 < q <= 1) of `values`; None when empty. Nearest rank, not
    interpolation: p99 of 150 latencies is a latency that happened."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


class ClientPool:
    """The connections of one level on one server; reused across its blocks."""

    def __init__(self, clients: int, query_seconds: float) -> None:
        self.clients = clients
        self.query_seconds = query_seconds
        self._executors: list[HttpExecutor] = []
        self._port = 0

    def executors(self, port: int) -> list[HttpExecutor]:
        """The clients' executors for `port` (new ones after a server restart changed it)."""
        if port != self._port:
            self.close()
            self._executors = [HttpExecutor(port, self.query_seconds) for _ in range(self.clients)]
            self._port = port
        return self._executors

    def close(self) -> None:
        for executor in self._executors:
            executor.close()
        self._executors = []


@dataclass
class _ClientLog:
    latencies: list[float]
    errors: int = 0
    first_error: str = ""
    gone: bool = False

    def record(self, outcome: QueryOutcome) -> None:
        if outcome.ok:
            self.latencies.append(outcome.elapsed)
            return
        self.errors += 1
        self.gone = self.gone or outcome.server_gone
        self.first_error = self.first_error or outcome.message


def run_block(
    executors: Sequence[HttpExecutor],
    mix: Sequence[str],
    settings: Mapping[str, str],
    seconds: float,
    query_id_prefix: str,
) -> BlockMeasure:
    """Run the mix on every executor at once for `seconds`; see the module docstring."""
    logs = [_ClientLog([]) for _ in executors]
    go = threading.Event()
    deadline = [0.0]

    def client(number: int) -> None:
        executor, log = executors[number], logs[number]
        go.wait()
        k = 0
        while time.perf_counter() < deadline[0]:
            sql = mix[(number + k) % len(mix)]
            outcome = executor.execute(sql, f"{query_id_prefix}.{number}.{k}", settings)
            log.record(outcome)
            k += 1
            if outcome.server_gone:
                return  # a dead server: the caller restarts it after the block

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(len(logs))]
    for thread in threads:
        thread.start()
    wall, cpu = time.time(), time.process_time()
    start = time.perf_counter()
    deadline[0] = start + seconds
    go.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    harness = (time.process_time() - cpu) / elapsed if elapsed > 0 else 0.0
    errors = sum(log.errors for log in logs)
    first = next((log.first_error for log in logs if log.first_error), "")
    latencies = tuple(v for log in logs for v in log.latencies)
    gone = any(log.gone for log in logs)
    return BlockMeasure(wall, elapsed, latencies, errors, first, gone, harness)
