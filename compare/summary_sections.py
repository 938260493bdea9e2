"""summary.json's sections about the run as a whole: interference, equivalence, the
false-discovery step, calibration and the machine's noise (docs/formats.md, "summary.json").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from compare.blocked import smallest_p_value as paired_smallest_p_value
from compare.blocked import structure_of
from compare.calibration import CALIBRATED, Calibration
from compare.evidence import Evidence
from compare.fdr import Discoveries, sure_discovery_level
from compare.interference import FOREIGN_CPU, STEAL, Interference
from compare.noise import machine_noise
from compare.paired import PAIRED
from compare.randomization import SAMPLED_SPLITS
from compare.verdict import EQUIVALENT, INCONCLUSIVE, QueryVerdict, Verdict


def interference_summary(
    disturbed: Mapping[tuple[str, int], Interference],
) -> dict[str, Any] | None:
    """summary.json's interference: None when the run has no monitor samples."""
    if not disturbed:
        return None
    hit = [i for i in disturbed.values() if i.disturbed]
    return {
        "queries": len(disturbed),
        "disturbed_queries": len(hit),
        "disturbed_runs": sum(len(i.disturbed) for i in hit),
        "foreign_cpu_max": max(i.foreign_cpu for i in disturbed.values()),
        "steal_max": max(i.steal for i in disturbed.values()),
        "foreign_cpu_threshold": FOREIGN_CPU,
        "steal_threshold": STEAL,
    }


def summary_extra(
    verdicts: Sequence[QueryVerdict], fdr: Discoveries | None, calibration: Calibration | None
) -> dict[str, Any]:
    """summary.json's equivalence, fdr and calibration (docs/formats.md, "summary.json")."""
    unchanged = [v.equivalence for v in verdicts if v.verdict is Verdict.UNCHANGED]
    measured = [v for v in verdicts if v.calibration is not None]
    return {
        "equivalence": {e: unchanged.count(e) for e in (EQUIVALENT, INCONCLUSIVE)},
        "fdr": None
        if fdr is None
        else {
            "q": fdr.q,
            "tests": fdr.tests,
            "discoveries": fdr.count,
            "cutoff": fdr.cutoff,
            "changed": sum(1 for v in verdicts if v.verdict in (Verdict.FASTER, Verdict.SLOWER)),
            "expected_false_discoveries_at_most": fdr.expected_false_at_most,
            "lone_discovery_level": sure_discovery_level(fdr.q, fdr.tests),
            "smallest_p_value": smallest_p_value(verdicts),
        },
        "calibration": None
        if calibration is None
        else {
            "file": calibration.source,
            "calibrated": sum(1 for v in measured if v.calibration == CALIBRATED),
            "not_calibrated": sum(1 for v in measured if v.calibration != CALIBRATED),
        },
    }


def noise_section(evidence: Evidence, verdicts: Sequence[QueryVerdict]) -> dict[str, Any] | None:
    """The machine's noise during the run (compare/noise.py), or None without 7 pairs."""
    thresholds = [v.stats.threshold for v in verdicts if v.stats is not None]
    found = machine_noise(evidence.client_time, thresholds)
    return None if found is None else found.as_json()


def smallest_p_value(verdicts: Sequence[QueryVerdict]) -> float | None:
    """The smallest p-value any measured query could reach at its run count; None when no
    query says (pooled with exact splits). Above q/m, no change alone is a discovery."""
    floors = []
    for v in verdicts:
        s = v.stats
        if s is None:
            continue
        if s.method == PAIRED and s.pairs > 0:
            floors.append(paired_smallest_p_value(structure_of(s.pairs)))
        elif not s.exact:
            floors.append(1 / (SAMPLED_SPLITS + 1))
    return min(floors, default=None)
