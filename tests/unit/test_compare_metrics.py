"""Server metrics of two server versions: only the ProfileEvents both sides report."""

from __future__ import annotations

from pathlib import Path

from artifacts.tables import PROFILE_EVENTS, QUERY_LOG, ProfileEventRow, QueryLogRow
from artifacts.tsv import write_table
from compare.metrics import gather_metrics
from tests.runs import STEADY_7, write_artifacts

Events = dict[int, dict[str, dict[str, int]]]  # query -> side -> event -> count


def _with_events(out: Path, events: Events) -> Path:
    """Test t, 7 runs a side per query; an event's count in run n is its count plus n, so
    that every series varies."""
    write_artifacts(out, dict.fromkeys(events, (STEADY_7, STEADY_7)))
    log, rows = [], []
    for query, sides in events.items():
        for side, counts in sides.items():
            for run, t in enumerate(STEADY_7):
                qid = f"t-{query}-{run}"
                log.append(QueryLogRow("t", query, side, run, qid, t * 0.9, 1, 8, 1))
                rows += [ProfileEventRow(qid, side, e, n + run) for e, n in counts.items()]
    write_table(out, QUERY_LOG, log)
    write_table(out, PROFILE_EVENTS, rows)
    return out


def test_an_event_one_server_never_reports_is_not_compared(tmp_path: Path) -> None:
    sides = {
        "reference": {"SelectedRows": 100, "OldEvent": 5},
        "patched": {"SelectedRows": 300, "NewEvent": 7},
    }
    out = _with_events(tmp_path / "out", {0: sides})
    metrics = {key[2] for key in gather_metrics(out, 7).series}
    assert metrics == {"server_time", "SelectedRows"}


def test_an_event_both_servers_report_counts_zero_on_a_query_where_one_lacks_it(
    tmp_path: Path,
) -> None:
    events: Events = {
        0: {"reference": {"A": 1}, "patched": {"A": 1, "Spilled": 4}},
        1: {"reference": {"Spilled": 2}, "patched": {"Spilled": 2}},
    }
    series = gather_metrics(_with_events(tmp_path / "out", events), 7).series
    spilled = series[("t", 0, "Spilled")]
    assert spilled.reference == (0.0,) * 7
    assert spilled.patched == tuple(float(4 + run) for run in range(7))
