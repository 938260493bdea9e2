"""What one run measures and how: the runner's options, parsed by the CLI."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from compare.paired import PAIRED
from compare.stopping import StopRule
from compare.verdict import Thresholds
from runner.budget import Limits
from runner.pinning import AUTO, Pinning, PinRequest
from runner.profiler import ProfileOptions
from runner.server import ServerSpec


@dataclass(frozen=True)
class ShardSelection:
    """The test files of one shard of a check, chosen before the run (ci/shard.py)."""

    label: str  # K/N, e.g. 2/4
    count: int  # N: the merged run has about N times this shard's queries
    files: tuple[Path, ...]
    weights_source: str | None = None  # the weights file that balanced the shards


@dataclass(frozen=True)
class RunOptions:
    reference: ServerSpec
    patched: ServerSpec
    tests: tuple[Path, ...]
    out: Path
    test_names: frozenset[str] = frozenset()  # empty: every test
    query_indices: frozenset[int] = frozenset()  # empty: every query
    runs: int = 15
    processes: int = 2  # server processes per side (runner/servers.started_server_sets)
    renew_set: bool = False  # the last process set starts afresh before each test but the first
    long: bool = False
    limits: Limits = dataclasses.field(default_factory=Limits)
    stop_rule: StopRule | None = None  # adaptive run counts; None: exactly `runs` runs
    profile: ProfileOptions = dataclasses.field(default_factory=ProfileOptions)
    thresholds: Thresholds = dataclasses.field(default_factory=Thresholds)
    method: str = PAIRED  # compare/statistics.py: the interim verdicts' method
    keep_servers_dir: bool = False
    servers_dir: Path | None = None
    force: bool = False
    shard: ShardSelection | None = None  # None: every test
    pin: PinRequest = AUTO  # --pin-cpu; `run` resolves it into the server specs' cpus
    pinning: Pinning | None = None  # how `pin` was resolved (set by `run`)
    redraw_progress: bool = False
    check_results: bool = True  # hash every prewarm's result (runner/results.py)

    def manifest_options(self) -> dict[str, object]:
        return {
            "tests": [str(p) for p in self.tests],
            "test_names": sorted(self.test_names),
            "query_indices": sorted(self.query_indices),
            "runs": self.runs if self.stop_rule is None else "adaptive",
            "processes": self.processes,
            "renew_set": self.renew_set,
            "check_results": self.check_results,
            "pin_cpus": list(self.reference.cpus),
            "pin": self.pinning.reason if self.pinning else None,
            "long": self.long,
            "max_query_seconds": self.limits.run_seconds,
            "limits": self.limits.as_json(),
            "adaptive": (
                {
                    **dataclasses.asdict(self.stop_rule),
                    "extended_runs": self.stop_rule.extended_runs,
                }
                if self.stop_rule
                else None
            ),
            "profile": dataclasses.asdict(self.profile),
            "min_effect": self.thresholds.min_effect,
            "unstable_threshold": self.thresholds.unstable_threshold,
            "method": self.method,
            "shard": self.shard.label if self.shard else None,
            "shard_weights": self.shard.weights_source if self.shard else None,
        }
