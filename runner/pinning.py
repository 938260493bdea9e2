"""Which CPUs the servers run on (`--pin-cpu`). Pinned to one CPU, the reference and the patched
server share whatever the VM's host does to that vCPU. `auto` pins only when every selected test
sets max_threads 1 (a multi-threaded query would run on one CPU) and chperf may use two or more
CPUs; chperf's client, chDB and the OS stay unpinned. See docs/run.md "CPU pinning (`--pin-cpu`)".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from runner.testdef import TestDef

AUTO = "auto"
NONE = "none"

PinRequest = str | tuple[int, ...]  # AUTO, NONE, or explicit CPUs


@dataclass(frozen=True)
class Pinning:
    cpus: tuple[int, ...]  # (): the servers may run on any CPU
    mode: str  # auto, none or explicit: how it was chosen
    reason: str  # one sentence for run.json and the report


def single_threaded(test: TestDef) -> bool:
    return any(name == "max_threads" and value.strip() == "1" for name, value in test.settings)


def resolve(request: PinRequest, tests: Sequence[TestDef], allowed: Iterable[int]) -> Pinning:
    if request == NONE:
        return Pinning((), NONE, "not pinned (--pin-cpu none)")
    if isinstance(request, tuple):
        cpus = ",".join(map(str, request))
        return Pinning(request, "explicit", f"pinned to CPU {cpus} (--pin-cpu {cpus})")
    available = sorted(set(allowed))
    if len(available) < 2:
        return Pinning((), AUTO, "not pinned: chperf may use only one CPU")
    # Load tests (docs/load.md) follow the per-query tests: alone they measure how a server
    # shares all its cores between clients; in a pinned suite they run on its CPU.
    measured = [t for t in tests if t.load is None]
    if tests and not measured:
        return Pinning((), AUTO, "not pinned: only load tests, whose clients share every CPU")
    multi = [t.name for t in measured if not single_threaded(t)]
    if multi:
        who, whose = f"test {multi[0]} does", "its"
        if len(multi) > 1:
            who, whose = f"tests {multi[0]} and {len(multi) - 1} more do", "their"
        return Pinning(
            (),
            AUTO,
            f"not pinned: {who} not set max_threads 1, and {whose} queries would share one CPU",
        )
    cpu = available[-1]
    return Pinning(
        (cpu,),
        AUTO,
        f"pinned to CPU {cpu}: every test runs with max_threads 1, so both servers of a "
        "pair share one CPU and a host slowing one vCPU slows both alike",
    )
