"""run.json, the run manifest: who ran what, on which servers, with which options. Written
atomically at the start, after every server (re)start and at the end, so a crash never leaves
half a manifest and the status says how far the run got.
Format history (SCHEMA_VERSION, also of the run's tables): 1 -- first version; then, additively,
the server capabilities query_profiler, asynchronous_metrics, missing_query_log_columns and
unknown_settings; the status "failed" with `failure`, why (a server that could not start, say),
where "interrupted" had stood for every early stop."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artifacts.errors import ChperfError
from artifacts.files import write_atomically

SCHEMA_VERSION = 1
MANIFEST = "run.json"
CHPERF_VERSION = "0.1.0"


RUNNING = "running"
COMPLETE = "complete"
INTERRUPTED = "interrupted"  # SIGINT or SIGTERM, nothing else
FAILED = "failed"  # an error stopped the run: `failure` says which


@dataclass
class RunManifest:
    """run.json as the runner keeps it; the runner follows each transition below with `write`."""

    chperf_version: str
    run_id: str
    start_time: str  # ISO 8601, UTC
    machine: dict[str, object]
    options: dict[str, object]
    warnings: list[str]
    status: str = RUNNING  # then COMPLETE, INTERRUPTED or FAILED, never back
    failure: str | None = None  # with FAILED: the error that stopped the run
    end_time: str | None = None
    duration_seconds: float | None = None
    servers: Mapping[str, object] = dataclasses.field(default_factory=dict)  # first process
    processes: list[Mapping[str, object]] = dataclasses.field(default_factory=list)
    measured: dict[str, object] = dataclasses.field(default_factory=dict)
    profiling: dict[str, object] = dataclasses.field(default_factory=dict)

    def servers_started(self, sets: Sequence[Mapping[str, object]]) -> None:
        """Every server process of the run, {side: info} per process set; `servers` is the
        first set, whose servers the profile runs use. Again after every restart."""
        self.servers = sets[0]
        self.processes = list(sets)

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def measurement_ended(
        self, run_seconds: float, wake_queries: int, renewals: Sequence[float] = ()
    ) -> None:
        self.measured = {
            "measured_runs_seconds": round(run_seconds, 6),
            "wake_queries": wake_queries,
            "set_renewals": len(renewals),
            "set_renewal_seconds": round(sum(renewals), 3),
        }

    def profiles_taken(self, records: Sequence[object], unavailable: str | None,
                       problems: Sequence[str]) -> None:  # fmt: skip
        self.profiling = {
            "profiles": list(records),
            "profiling_unavailable": unavailable,
            "profile_problems": list(problems),
        }

    def finish(
        self, status: str, end_time: str, duration_seconds: float, failure: str | None = None
    ) -> None:
        assert self.status == RUNNING and status in (COMPLETE, INTERRUPTED, FAILED), status
        assert (status == FAILED) == (failure is not None), (status, failure)
        self.status, self.end_time, self.failure = status, end_time, failure
        self.duration_seconds = round(duration_seconds, 3)

    def document(self) -> dict[str, object]:
        return {
            "chperf_version": self.chperf_version,
            "run_id": self.run_id,
            "status": self.status,
            **({"failure": self.failure} if self.failure is not None else {}),
            "start_time": self.start_time,
            "end_time": self.end_time,
            "duration_seconds": self.duration_seconds,
            "servers": self.servers,
            "machine": self.machine,
            "options": self.options,
            "warnings": self.warnings,
            "processes": self.processes,
            **self.measured,
            **self.profiling,
        }

    def write(self, directory: Path) -> None:
        write_manifest(directory, self.document())


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    data = {"schema_version": SCHEMA_VERSION, **manifest}
    text = json.dumps(data, indent=2, sort_keys=False, default=_json_default) + "\n"
    write_atomically(directory / MANIFEST, text)


def _json_default(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot serialize {type(value).__name__}")


@dataclass(frozen=True)
class JsonFile:
    data: dict[str, Any] | None  # None when missing or unreadable
    problem: str  # why data is None ("" when it is not, or the file is missing)
    missing: bool


def read_json(path: Path) -> JsonFile:
    """A JSON object from a file, never raising."""
    if not path.exists():
        return JsonFile(None, "", True)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:  # ValueError: not JSON; nested too deep
        return JsonFile(None, f"{path.name}: cannot be read: {e}", False)
    if not isinstance(data, dict):
        return JsonFile(None, f"{path.name}: is not a JSON object", False)
    return JsonFile(data, "", False)


@dataclass(frozen=True)
class ManifestFile:
    data: dict[str, Any]  # {} when missing or unreadable
    problems: tuple[str, ...]
    missing: bool


def load_manifest(directory: Path) -> ManifestFile:
    """For the stages that go on with what they can read (report, CI summary): run.json,
    with what is wrong with it as problems instead of an error."""
    loaded = read_json(directory / MANIFEST)
    if loaded.data is None:
        return ManifestFile({}, (loaded.problem,) if loaded.problem else (), loaded.missing)
    version = loaded.data.get("schema_version")
    if version != SCHEMA_VERSION:
        problem = (
            f"{MANIFEST}: schema_version {version!r}, this chperf reads {SCHEMA_VERSION}; "
            "what follows may be incomplete: rerun `chperf run` with this chperf version"
        )
        return ManifestFile(loaded.data, (problem,), False)
    return ManifestFile(loaded.data, (), False)


def read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.exists():
        raise ChperfError(
            f"{path}: no run manifest",
            hint="point at a directory written by `chperf run` (it holds run.json)",
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:  # ValueError: not JSON; nested too deep
        raise ChperfError(f"{path}: cannot read the run manifest: {e}") from e
    if not isinstance(data, dict):
        raise ChperfError(f"{path}: the run manifest is not a JSON object")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ChperfError(
            f"{path}: schema_version {version!r}, this chperf reads {SCHEMA_VERSION}",
            hint="rerun `chperf run` with this version of chperf, or use the chperf "
            "version that wrote these artifacts",
        )
    return data


def identity_keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[str, str]:
    """The keys of two `servers` entries that must agree for the servers to run the same build
    with the same configuration: the binary's sha256 and the overlays' content digest, which
    does not depend on where the overlays lie; overlay paths when an entry predates it."""
    if "overlays_sha256" in a and "overlays_sha256" in b:
        return ("sha256", "overlays_sha256")
    return ("sha256", "overlays")
