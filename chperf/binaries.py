"""The server binaries, checked before anything is written: each exists, is executable and
can be started by the kernel. A bad binary is bad input (exit 2), found before the output
directory is touched, not a server that fails to start minutes into the run."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
from pathlib import Path

from artifacts.errors import ChperfError

# How long the probe may run. It only has to get past exec: a binary still running after this
# long has started.
PROBE_TIMEOUT_S = 10.0
# The probe's argument: ClickHouse binaries print their version; 18.16's clickhouse-server
# rejects the option (exit 78). Either way exec worked, which is all the probe asks.
PROBE_ARGUMENT = "--version"
# Exit codes a shell gives a command it could not run (not executable, not found).
SHELL_CANNOT_RUN = {126: "cannot execute", 127: "command not found"}
# What the kernel's refusals to exec mean here.
EXEC_ERRORS = {
    errno.ENOEXEC: " (a text file without a #! line, or a program for another machine)",
    errno.ENOENT: " (the interpreter its #! line names does not exist)",
}
HINT = "pass a clickhouse-server or clickhouse binary (default: the installed clickhouse-server)"


def check_server_binary(option: str, binary: Path) -> None:
    """Raise ChperfError (exit 2) unless `binary` looks like a program this machine runs."""
    where = f"{option} {binary}"
    if not binary.exists():
        raise ChperfError(f"{where}: no such file", hint=HINT)
    if not binary.is_file():
        raise ChperfError(f"{where}: not a file", hint=HINT)
    if not os.access(binary, os.X_OK):
        raise ChperfError(f"{where}: not executable", hint=f"chmod +x {binary}, or {HINT}")
    problem = _probe(binary)
    if problem:
        raise ChperfError(f"{where}: does not run: {problem}", hint=HINT)


def _probe(binary: Path) -> str:
    """Why `binary --version` could not run, or "" when it ran (whatever it printed)."""
    try:
        process = subprocess.Popen(
            [str(binary), PROBE_ARGUMENT],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own group, so the timeout stops all it started
        )
    except OSError as e:
        return f"{e.strerror}{EXEC_ERRORS.get(e.errno or 0, '')}"
    try:
        _, err = process.communicate(timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return ""  # still running: it started
    code = process.returncode
    last = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
    said = f": {last[0][:200]}" if last[0] else ""
    started = f"started with {PROBE_ARGUMENT}"
    if code < 0:
        return f"killed by {signal.Signals(-code).name} when {started}{said}"
    if code in SHELL_CANNOT_RUN:
        return f"exited with {code} ({SHELL_CANNOT_RUN[code]}) when {started}{said}"
    return ""
