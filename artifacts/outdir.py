"""The output directory: created, checked writable and never clobbered without --force, all
after every other argument was validated (the callers' job) and before any server starts.

--force replaces only what chperf wrote: a directory holding MARKER, which chperf writes into
every output directory it prepares. It never empties the working directory, the home
directory or one of their ancestors, whatever they hold.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from artifacts.errors import ChperfError
from artifacts.manifest import MANIFEST

# Written into every output directory chperf prepares: the proof --force needs.
MARKER = ".chperf-out"
MARKER_TEXT = "written by chperf: `chperf run --force` may replace this directory's contents\n"
LISTED_ENTRIES = 5  # names shown in the one-line messages about a directory's contents


def prepare_out_dir(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ChperfError(f"output {out} exists and is not a directory")
    if out.exists() and any(out.iterdir()):
        if not force:
            raise _occupied(out)
        check_replaceable(out, Path.cwd(), Path.home())
        print(f"chperf: --force: removing {_contents(out)} from {out}", file=sys.stderr)
        _clear_previous_run(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
    except OSError as e:
        raise ChperfError(
            f"output directory {out} is not writable: {e.strerror}",
            hint="choose a writable --out",
        ) from e
    if not os.access(out, os.W_OK | os.X_OK):
        raise ChperfError(f"output directory {out} is not writable")


def check_replaceable(out: Path, cwd: Path, home: Path) -> None:
    """Raise unless --force may empty `out`: chperf wrote it (MARKER), and it is not the
    working directory, the home directory or an ancestor of either."""
    target = out.resolve()
    protected = {
        "the current directory": cwd.resolve(),
        "the home directory": home.resolve(),
    }
    for what, path in protected.items():
        if target == path or target in path.parents:
            kind = what if target == path else f"an ancestor of {what} ({path})"
            raise ChperfError(
                f"--force would remove {_contents(out)} from {out}, which is {kind}: refused",
                hint="pass --out a directory of its own, e.g. --out chperf-out",
            )
    if not (out / MARKER).is_file():
        raise ChperfError(
            f"--force would remove {_contents(out)} from {out}, but it holds no {MARKER}, "
            "the file chperf writes into every output directory it prepares: refused",
            hint="choose another --out, or empty the directory yourself if nothing in it matters",
        )


def _occupied(out: Path) -> ChperfError:
    if (out / MARKER).is_file():
        hint = "choose another --out, or pass --force to replace its contents"
    else:
        hint = f"choose another --out (--force replaces only a directory holding {MARKER})"
    if (out / MANIFEST).exists():
        return ChperfError(
            f"output directory {out} already holds a run ({out / MANIFEST})", hint=hint
        )
    return ChperfError(f"output directory {out} is not empty and holds no chperf run", hint=hint)


def _contents(out: Path) -> str:
    """`3 entries (a, b, c)`: what emptying the directory removes."""
    names = sorted(item.name for item in out.iterdir())
    shown = ", ".join(names[:LISTED_ENTRIES])
    more = f", ... {len(names) - LISTED_ENTRIES} more" if len(names) > LISTED_ENTRIES else ""
    return f"{len(names)} {'entry' if len(names) == 1 else 'entries'} ({shown}{more})"


def _clear_previous_run(out: Path) -> None:
    for item in out.iterdir():
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item)
        else:
            item.unlink()
