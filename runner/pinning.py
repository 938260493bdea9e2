"""Which CPUs the servers run on (`chperf run --pin-cpu`). Pure and tested.

On a VM the host can slow one vCPU at a time, and a server's query thread tends to stay on
one vCPU for seconds. When the reference and the patched server sit on different vCPUs, the
runs of a pair differ for as long as that lasts, and a one-sided stretch looks like a change.
Pinned to one CPU, the two servers of a pair share whatever that CPU goes through.

`auto` (the default) pins every server to one CPU, the highest this process may use, when
that cannot change what a query measures: every selected test runs its queries with
`max_threads` 1, and the machine gives chperf at least two CPUs (chperf's client, chDB and
the OS are not pinned: the scheduler may put them on any CPU, the servers' included; whether
keeping them off it helps is not measured). A test with several threads would
run them all on one CPU, so then nothing is pinned, and run.json says which test decided.
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
    """The test sets max_threads 1 for its queries (its <settings>)."""
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
    multi = [t.name for t in tests if not single_threaded(t)]
    if multi:
        more = f" and {len(multi) - 1} more" if len(multi) > 1 else ""
        return Pinning(
            (),
            AUTO,
            f"not pinned: test {multi[0]}{more} does not set max_threads 1, and its queries "
            "would share one CPU",
        )
    cpu = available[-1]
    return Pinning(
        (cpu,),
        AUTO,
        f"pinned to CPU {cpu}: every test runs with max_threads 1, so both servers of a "
        "pair share one CPU and a host slowing one vCPU slows both alike",
    )
