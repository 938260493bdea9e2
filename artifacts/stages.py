"""What each stage that judges a run writes, and the files derived from those: a stage removes
them all before it starts, so a stage that fails, or reruns with other options, never leaves
an earlier result in place looking current (`chperf compare` with new thresholds takes the
report.html of the old verdicts away with it)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from artifacts.calibration import CALIBRATION_FILE
from artifacts.files import WriteFailed
from artifacts.status import STATUS_JSON, SUMMARY_MD
from artifacts.summary import SUMMARY_FILE
from artifacts.verdicts import METRICS_FILE, VERDICTS_FILE

REPORT_FILE = "report.html"
DETAILS_DIR = "details"  # the queries' details pages, next to report.html

REPORT_OUTPUTS = (REPORT_FILE, DETAILS_DIR)
# The report shows the verdicts; ci's status.json and summary.md restate summary.json.
COMPARE_OUTPUTS = (
    VERDICTS_FILE, METRICS_FILE, SUMMARY_FILE, *REPORT_OUTPUTS, STATUS_JSON, SUMMARY_MD,
)  # fmt: skip
# Only with --aa, which rewrites it: otherwise it is an A/A run's result, maybe an input.
AA_OUTPUTS = (CALIBRATION_FILE,)


def remove_previous(out: Path, outputs: tuple[str, ...]) -> tuple[str, ...]:
    """Remove a stage's previous `outputs` from `out`; the names of those that were there."""
    removed = []
    for name in outputs:
        path = out / name
        if not os.path.lexists(path):
            continue  # unlink would say "read-only file system" even of a file not there
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            continue
        except OSError as e:
            hint = f"a stage removes its previous outputs before it starts: make {out} writable"
            raise WriteFailed(path, e, hint=hint, action="remove") from e
        removed.append(name)
    return tuple(removed)
