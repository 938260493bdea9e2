"""How a vCPU's speed moves, and whether two vCPUs move together: the noise that chperf's
pairs have to cancel, measured without ClickHouse.

A workload (`mem`: random reads over 128 MB, as a hash table of a GROUP BY does; `alu`:
arithmetic over 32 KB) runs in chunks of about 10 ms, back to back, in a process pinned to
one CPU. Printed:
  speed     the standard deviation of ln(chunk time) and its autocorrelation at lags of
            1 to 100 chunks: how fast the CPU's speed changes
  runs      chunks summed into "runs" of 4, 16 and 32 chunks and paired with the next run:
            the robust spread (1.4826 x MAD) and standard deviation of ln(run / next run),
            the noise of a pair of back-to-back runs that long
  together  two processes that take turns on one CPU (as chperf's servers do) against two
            that run at the same moment on two CPUs: the correlation of their chunk times
            and the spread of ln(A / B). If the vCPUs slowed down together, running both
            sides at once would cancel the noise better than taking turns.

Usage: .venv/bin/python bench/cpu_speed.py [--seconds S] [--workload mem|alu] [--cpus A B]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Barrier
from pathlib import Path

# Run as a script (`python bench/<name>.py`): the repository root holds the `bench` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np

from bench.noise_sources import robust_spread

LAGS = (1, 2, 5, 10, 25, 50, 100)
RUN_CHUNKS = (4, 16, 32)
ROUNDS = 200


def workload(kind: str, seed: int) -> Callable[[], float]:
    """A function that runs one chunk and returns its wall time."""
    rng = np.random.default_rng(seed)
    if kind == "mem":
        data = rng.integers(0, 100, 16_000_000)
        index = rng.integers(0, len(data), 600_000)

        def chunk() -> object:
            return data[index].sum()

    else:
        values = rng.random(4096)

        def chunk() -> object:
            return sum(float(np.sin(values).sum()) for _ in range(40))

    def timed() -> float:
        start = time.perf_counter()
        chunk()
        return time.perf_counter() - start

    for _ in range(5):
        timed()
    return timed


def autocorrelation(logs: Sequence[float], lag: int) -> float:
    x = np.asarray(logs, dtype=np.float64)
    return float(np.corrcoef(x[:-lag], x[lag:])[0, 1])


def run_pair_spread(chunks: Sequence[float], per_run: int) -> tuple[float, float]:
    """Chunks summed into runs of `per_run`, each run paired with the next: the robust spread
    and the standard deviation of ln(run / next run)."""
    runs = len(chunks) // per_run // 2 * 2
    totals = np.asarray(chunks[: runs * per_run]).reshape(runs, per_run).sum(axis=1)
    diffs = np.log(totals[1::2] / totals[0::2])
    return robust_spread(diffs.tolist()), float(np.std(diffs))


def _record(kind: str, cpu: int, seconds: float, out: Connection) -> None:
    os.sched_setaffinity(0, {cpu})
    chunk = workload(kind, cpu)
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        times.append(chunk())
    out.send(times)


def _turns(kind: str, cpu: int, seed: int, orders: Connection) -> None:
    """Runs a chunk each time it is told to, on `cpu`, and answers with its time."""
    os.sched_setaffinity(0, {cpu})
    chunk = workload(kind, seed)
    orders.send(0.0)
    while orders.recv():
        orders.send(chunk())


def _together(kind: str, cpu: int, rounds: int, barrier: Barrier, out: Connection) -> None:
    os.sched_setaffinity(0, {cpu})
    chunk = workload(kind, cpu)
    times = []
    for _ in range(rounds):
        barrier.wait()
        times.append(chunk())
    out.send(times)


def taking_turns(kind: str, cpu: int, rounds: int = ROUNDS) -> tuple[list[float], list[float]]:
    """Two processes on one CPU, chunk for chunk in chperf's order (A B, B A, B A, A B)."""
    ends = [multiprocessing.Pipe() for _ in range(2)]
    workers = [
        multiprocessing.Process(target=_turns, args=(kind, cpu, seed, ends[seed][1]))
        for seed in range(2)
    ]
    for w in workers:
        w.start()
    for mine, _ in ends:
        mine.recv()
    times: list[list[float]] = [[], []]
    try:
        for round_ in range(rounds):
            for who in (0, 1) if round_ % 4 in (0, 3) else (1, 0):
                ends[who][0].send(True)
                times[who].append(ends[who][0].recv())
    finally:
        for mine, _ in ends:
            mine.send(False)
        for w in workers:
            w.join()
    return times[0], times[1]


def at_once(
    kind: str, cpus: tuple[int, int], rounds: int = ROUNDS
) -> tuple[list[float], list[float]]:
    """One process on each CPU, every chunk started at the same moment."""
    barrier = multiprocessing.Barrier(2)
    ends = [multiprocessing.Pipe(duplex=False) for _ in cpus]
    workers = [
        multiprocessing.Process(target=_together, args=(kind, cpu, rounds, barrier, ends[i][1]))
        for i, cpu in enumerate(cpus)
    ]
    for w in workers:
        w.start()
    results = [ends[i][0].recv() for i in range(len(cpus))]
    for w in workers:
        w.join()
    return results[0], results[1]


def _describe_together(name: str, a: Sequence[float], b: Sequence[float]) -> str:
    la, lb = np.log(a), np.log(b)
    diffs = (la - lb).tolist()
    return (
        f"{name}: median {np.median(a) * 1000:.1f} / {np.median(b) * 1000:.1f} ms, "
        f"correlation {np.corrcoef(la, lb)[0, 1]:+.2f}, ln(A / B) robust spread "
        f"{robust_spread(diffs):.3f}, sd {np.std(diffs):.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--workload", choices=("mem", "alu"), default="mem")
    parser.add_argument("--cpus", type=int, nargs=2, default=(0, 1), metavar=("A", "B"))
    args = parser.parse_args()
    cpus = (args.cpus[0], args.cpus[1])
    mine, theirs = multiprocessing.Pipe(duplex=False)
    recorder = multiprocessing.Process(
        target=_record, args=(args.workload, cpus[1], args.seconds, theirs)
    )
    recorder.start()
    chunks = mine.recv()
    recorder.join()
    logs = np.log(chunks)
    print(f"speed of CPU {cpus[1]} ({args.workload}, {len(chunks)} chunks of "
          f"{np.median(chunks) * 1000:.1f} ms): sd of ln(time) {np.std(logs):.3f}; "
          "autocorrelation " + ", ".join(
              f"lag {lag} {autocorrelation(logs.tolist(), lag):+.2f}" for lag in LAGS
              if lag < len(chunks) // 2))  # fmt: skip
    for per_run in RUN_CHUNKS:
        spread, sd = run_pair_spread(chunks, per_run)
        print(f"runs of {per_run} chunks (~{per_run * np.median(chunks) * 1000:.0f} ms), "
              f"back to back: ln(run / next) robust spread {spread:.3f}, sd {sd:.3f}")  # fmt: skip
    turns = taking_turns(args.workload, cpus[1])
    print(_describe_together(f"taking turns on CPU {cpus[1]}", *turns))
    together = at_once(args.workload, cpus)
    print(_describe_together(f"at once on CPUs {cpus[0]} and {cpus[1]}", *together))


if __name__ == "__main__":
    main()
