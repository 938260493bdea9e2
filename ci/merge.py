"""`chperf merge`: put the shards of one check back together into one run directory.

All N shards must be there (a missing one would silently drop tests) and must have measured
the same binaries, overlays and options. The result is an ordinary run directory, so compare
and report work on it unchanged; its run id derives from the shards' ids, so merging the
same shards again gives the same id and `chperf upload` does not store it twice.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artifacts.errors import ChperfError
from artifacts.files import RESERVE_FILE
from artifacts.manifest import (
    CHPERF_VERSION,
    MANIFEST,
    identity_keys,
    read_manifest,
    write_manifest,
)
from artifacts.outdir import MARKER
from artifacts.tables import ALL_TABLES, BOTH, ERRORS, SIDES, TESTS, WHOLE_TEST, ErrorRow
from artifacts.tsv import Table, read_table, write_table
from ci.shard import Shard
from report import display

STAGE_MERGE = "merge"  # errors.tsv stage of a problem found while merging
# Options that differ between the shards of one check by design.
SHARD_OPTIONS = ("shard", "shard_weights")
# --pin-cpu auto resolves per shard, and every query compares two servers of one shard placed
# alike, so shards may differ here. The merged options keep a placement all shards agree on,
# else None; each shard's own is in its `shards` entry.
PLACEMENT_OPTIONS = ("pin_cpus", "pin")
# Outputs of later stages: recomputed on the merged run, never copied from a shard.
DERIVED_FILES = frozenset(
    {"verdicts.tsv", "metrics.tsv", "summary.json", "report.html", "status.json", "summary.md"}
)
DERIVED_DIRS = frozenset({"flamegraphs", display.DETAILS_DIR, display.FULL_QUERIES_DIR})
MERGE_NAMESPACE = uuid.UUID("6d1c1f0e-5a9b-4c1e-9f4e-2b7f0c3a8e51")


@dataclass(frozen=True)
class ShardRun:
    directory: Path
    manifest: dict[str, Any]
    shard: Shard


def load_shards(directories: Sequence[Path]) -> list[ShardRun]:
    """Read and check the shards; raise ChperfError (exit 2) on anything inconsistent."""
    shards = sorted((_load_shard(d) for d in directories), key=lambda s: s.shard.index)
    _check_complete_set(shards)
    first = shards[0]
    for other in shards[1:]:
        _check_same_servers(first, other)
        _check_same_options(first, other)
    return shards


def _load_shard(directory: Path) -> ShardRun:
    manifest = read_manifest(directory)
    text = (manifest.get("options") or {}).get("shard")
    if not text:
        raise ChperfError(
            f"{directory / MANIFEST}: not a shard (options.shard is missing)",
            hint="merge the outputs of `chperf run --shard K/N`, one per K",
        )
    if manifest.get("status") != "complete":
        raise ChperfError(
            f"{directory / MANIFEST}: shard {text} has status {manifest.get('status')!r}, "
            "not 'complete'",
            hint="rerun that shard; a merge of an interrupted shard would lose its tests",
        )
    try:
        shard = Shard.parse(str(text))
    except ValueError as e:
        raise ChperfError(f"{directory / MANIFEST}: options.shard {e}") from e
    return ShardRun(directory, manifest, shard)


def _check_complete_set(shards: list[ShardRun]) -> None:
    counts = {s.shard.count for s in shards}
    if len(counts) > 1:
        listing = ", ".join(f"{s.directory} is {s.shard}" for s in shards)
        raise ChperfError(f"the shards come from different splits: {listing}")
    count = counts.pop()
    seen: dict[int, Path] = {}
    for s in shards:
        if s.shard.index in seen:
            raise ChperfError(
                f"shard {s.shard} given twice: {seen[s.shard.index]} and {s.directory}"
            )
        seen[s.shard.index] = s.directory
    missing = [f"{k}/{count}" for k in range(1, count + 1) if k not in seen]
    if missing:
        raise ChperfError(
            f"shard {', '.join(missing)} missing: the merge would drop their tests",
            hint="pass the output directory of every shard of the check",
        )


def _check_same_servers(first: ShardRun, other: ShardRun) -> None:
    for side in SIDES:
        a = first.manifest.get("servers", {}).get(side, {})
        b = other.manifest.get("servers", {}).get(side, {})
        for key in identity_keys(a, b):
            if a.get(key) != b.get(key):
                raise ChperfError(
                    f"shards {first.shard} and {other.shard} ran different {side} servers: "
                    f"{key} {a.get(key)!r} in {first.directory}, {b.get(key)!r} in "
                    f"{other.directory}",
                    hint="all shards of a check must measure the same two binaries",
                )


def _check_same_options(first: ShardRun, other: ShardRun) -> None:
    a = _comparable_options(first.manifest)
    b = _comparable_options(other.manifest)
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            raise ChperfError(
                f"shards {first.shard} and {other.shard} ran with different options: "
                f"{key} = {a.get(key)!r} in {first.directory}, {b.get(key)!r} in "
                f"{other.directory}",
                hint="run every shard with the same chperf run options except --shard",
            )
    if first.manifest.get("chperf_version") != other.manifest.get("chperf_version"):
        raise ChperfError(
            f"shards {first.shard} and {other.shard} were written by different chperf "
            f"versions ({first.manifest.get('chperf_version')}, "
            f"{other.manifest.get('chperf_version')})"
        )


def _comparable_options(manifest: dict[str, Any]) -> dict[str, Any]:
    options = dict(manifest.get("options") or {})
    for key in (*SHARD_OPTIONS, *PLACEMENT_OPTIONS):
        options.pop(key, None)
    return options


def _placement(manifest: dict[str, Any]) -> dict[str, Any]:
    options = manifest.get("options") or {}
    return {key: options.get(key) for key in PLACEMENT_OPTIONS}


def merge(shards: Sequence[ShardRun], out: Path) -> None:
    """Write the merged tables, extra files and run.json into `out` (empty or new)."""
    out.mkdir(parents=True, exist_ok=True)
    problems: list[ErrorRow] = []
    for table in ALL_TABLES:
        if table is not ERRORS:
            _merge_table(shards, table, out, problems)
    _check_disjoint_tests(shards, problems)
    _merge_table(shards, ERRORS, out, problems, extra=problems)
    for shard in shards:
        _copy_extra_files(shard.directory, out)
    write_manifest(out, merged_manifest(shards))


def _merge_table(
    shards: Sequence[ShardRun],
    table: Table[Any],
    out: Path,
    problems: list[ErrorRow],
    extra: Sequence[ErrorRow] = (),
) -> None:
    """Concatenate one table; a shard's unreadable line becomes a recorded merge error."""
    rows: list[Any] = []
    for shard in shards:
        contents = read_table(shard.directory, table)
        rows.extend(contents.rows)
        problems.extend(
            _merge_error(f"shard {shard.shard} ({shard.directory}): {p}") for p in contents.problems
        )
    write_table(out, table, [*rows, *extra])


def _check_disjoint_tests(shards: Sequence[ShardRun], problems: list[ErrorRow]) -> None:
    owner: dict[str, Shard] = {}
    for shard in shards:
        for name in sorted({row.test for row in read_table(shard.directory, TESTS).rows}):
            if name in owner:
                problems.append(
                    _merge_error(f"test {name} ran in shards {owner[name]} and {shard.shard}")
                )
            owner.setdefault(name, shard.shard)


def _merge_error(message: str) -> ErrorRow:
    # Affects the status like any run error: a damaged shard never gives a green check.
    return ErrorRow("", WHOLE_TEST, BOTH, STAGE_MERGE, 0, message)


def _copy_extra_files(source: Path, out: Path) -> None:
    """Copy what is not a table or derived (e.g. profiles); never overwrite a shard's file."""
    # the merged directory gets its own marker; a reserve is left only by a killed shard
    known = {t.file for t in ALL_TABLES} | DERIVED_FILES | {MANIFEST, MARKER, RESERVE_FILE}
    for item in sorted(source.iterdir()):
        if item.name in known or item.name in DERIVED_DIRS or item.name.endswith(".tmp"):
            continue
        target = out / item.name
        if item.is_dir():
            shutil.copytree(item, target, dirs_exist_ok=True, copy_function=_copy_new)
        else:
            _copy_new(str(item), str(target))


def _copy_new(source: str, target: str) -> str:
    if Path(target).exists():
        raise ChperfError(f"{source}: {target} was already copied from another shard")
    return str(shutil.copy2(source, target))


def merged_run_id(shards: Sequence[ShardRun]) -> str:
    ids = sorted(str(s.manifest.get("run_id", "")) for s in shards)
    return str(uuid.uuid5(MERGE_NAMESPACE, ",".join(ids)))


def merged_manifest(shards: Sequence[ShardRun]) -> dict[str, Any]:
    first = shards[0].manifest
    options = _comparable_options(first)
    options["shard"] = None
    options["shard_weights"] = first.get("options", {}).get("shard_weights")
    placements = [_placement(s.manifest) for s in shards]
    for key in PLACEMENT_OPTIONS:
        values = [p[key] for p in placements]
        options[key] = values[0] if all(v == values[0] for v in values) else None
    starts = [str(s.manifest.get("start_time") or "") for s in shards]
    ends = [str(s.manifest.get("end_time") or "") for s in shards]
    return {
        "chperf_version": CHPERF_VERSION,
        "run_id": merged_run_id(shards),
        "status": "complete",
        "start_time": min(starts),
        "end_time": max(ends),
        # The shards ran in parallel: the check took as long as its slowest shard.
        "duration_seconds": max(float(s.manifest.get("duration_seconds") or 0) for s in shards),
        "servers": first.get("servers", {}),
        "processes": first.get("processes", []),
        "machine": first.get("machine", {}),
        "options": options,
        "measured_runs_seconds": sum(
            float(s.manifest.get("measured_runs_seconds") or 0) for s in shards
        ),
        "wake_queries": sum(int(s.manifest.get("wake_queries") or 0) for s in shards),
        "set_renewals": sum(int(s.manifest.get("set_renewals") or 0) for s in shards),
        "set_renewal_seconds": sum(
            float(s.manifest.get("set_renewal_seconds") or 0) for s in shards
        ),
        "warnings": [w for s in shards for w in s.manifest.get("warnings", [])],
        "profiles": [p for s in shards for p in s.manifest.get("profiles", [])],
        "shards": [_shard_entry(s) for s in shards],
    }


def _shard_entry(shard: ShardRun) -> dict[str, Any]:
    m = shard.manifest
    return {
        "shard": str(shard.shard),
        "run_id": m.get("run_id"),
        "directory": str(shard.directory),
        "start_time": m.get("start_time"),
        "end_time": m.get("end_time"),
        "duration_seconds": m.get("duration_seconds"),
        "machine": m.get("machine", {}),
        **_placement(m),
        "servers": {
            side: {k: info.get(k) for k in ("version", "sha256", "pid", "restarts")}
            for side, info in (m.get("servers") or {}).items()
        },
    }
