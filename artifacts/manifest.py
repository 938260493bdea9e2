"""run.json, the run manifest: who ran what, on which servers, with which options.

Written atomically at the start, after every server (re)start and at the end, so a crash
never leaves half a manifest and the status says how far the run got.

Format history (bump SCHEMA_VERSION on incompatible changes; it versions the run's tables
too, artifacts/tables.py):
  1 -- first version.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artifacts.errors import ChperfError

SCHEMA_VERSION = 1
MANIFEST = "run.json"
CHPERF_VERSION = "0.1.0"


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    """Write run.json atomically (a crash never leaves half a manifest)."""
    data = {"schema_version": SCHEMA_VERSION, **manifest}
    tmp = directory / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=_json_default) + "\n")
    tmp.replace(directory / MANIFEST)


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
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
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
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
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
