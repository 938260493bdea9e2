"""The output directory: created, checked writable and never clobbered without --force, all
before any server starts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from artifacts.errors import ChperfError
from artifacts.manifest import MANIFEST


def prepare_out_dir(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ChperfError(f"output {out} exists and is not a directory")
    if out.exists() and any(out.iterdir()):
        if not (out / MANIFEST).exists() and not force:
            raise ChperfError(
                f"output directory {out} is not empty and holds no chperf run",
                hint="choose another --out, or pass --force to replace its contents",
            )
        if not force:
            raise ChperfError(
                f"output directory {out} already holds a run ({out / MANIFEST})",
                hint="choose another --out, or pass --force to overwrite it",
            )
        _clear_previous_run(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".chperf-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise ChperfError(
            f"output directory {out} is not writable: {e.strerror}",
            hint="choose a writable --out",
        ) from e
    if not os.access(out, os.W_OK | os.X_OK):
        raise ChperfError(f"output directory {out} is not writable")


def _clear_previous_run(out: Path) -> None:
    for item in out.iterdir():
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item)
        else:
            item.unlink()
