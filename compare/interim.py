"""Verdicts while the run goes on, from client times only, with compare's own statistics
and rules: used to choose which queries get profile runs. The final verdicts always come
from `chperf compare` over the artifacts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from compare.blocked import MARGIN_LOG, critical_rank, structure_of
from compare.engine import SqlEngine
from compare.paired import PAIRED
from compare.randomization import Samples, SeriesStats
from compare.statistics import QueryStatistics, interim_paired
from compare.verdict import MIN_RUNS, QueryEvidence, Thresholds, Verdict, classify

QueryKey = tuple[str, int]


class InterimJudge:
    def __init__(
        self, thresholds: Thresholds, method: str = PAIRED, margin_log: float = MARGIN_LOG
    ) -> None:
        self.thresholds = thresholds
        self.margin_log = margin_log  # the paired test's (compare/blocked.py)
        self._engine = SqlEngine()
        self._statistics = QueryStatistics(self._engine, method)

    def close(self) -> None:
        self._engine.close()

    def prepare(self, sizes: Iterable[int]) -> None:
        """Tabulate the paired statistic's null distributions of these pair counts before any
        run, not during a look. Pooled splits are built on first use."""
        if self._statistics.method == PAIRED:
            for pairs in sizes:
                critical_rank(structure_of(pairs))

    def stats(self, samples: Samples) -> SeriesStats | None:
        """One look of the stop rule. The paired statistic in numpy (microseconds; the same
        numbers as compare's chDB query); the pooled one in chDB."""
        if self._statistics.method == PAIRED:
            return interim_paired(samples, self.margin_log)
        return self._statistics.statistics({0: samples}).get(0)

    def verdicts(
        self, test: str, max_ignored_relative_change: float | None, samples: Mapping[int, Samples]
    ) -> dict[int, Verdict]:
        """Verdicts of the queries of `test` measured on both sides with enough runs."""
        usable = {
            index: s
            for index, s in samples.items()
            if min(len(s.reference), len(s.patched)) >= MIN_RUNS
        }
        stats = self._statistics.statistics(usable)
        return {
            index: classify(
                QueryEvidence(
                    test=test,
                    query_index=index,
                    query="",
                    max_ignored_relative_change=max_ignored_relative_change,
                    runs_reference=s.runs_reference,
                    runs_patched=s.runs_patched,
                    stats=s,
                ),
                self.thresholds,
            ).verdict
            for index, s in stats.items()
        }
