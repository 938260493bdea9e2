"""One error type with a hint, and the documented exit codes (README, "Exit codes")."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    CHECK_FAILED = 1  # the check itself failed: slower queries, patched-only failures, run errors
    BAD_INPUT = 2  # bad usage, bad test files, bad or incompatible artifacts
    INFRASTRUCTURE = 3  # a server could not start, the history database is unreachable, ...
    INCOMPLETE = 4  # nothing failed, but some queries were not run (a budget ran out) or judged
    INTERRUPTED = 130  # SIGINT (128 + 2)
    TERMINATED = 143  # SIGTERM (128 + 15)


class Terminated(BaseException):
    """SIGTERM, turned into an exception so every `finally` runs (servers stop)."""


class ChperfError(Exception):
    """An error the user can act on: what happened, where, and what to do next."""

    def __init__(
        self, message: str, *, hint: str = "", exit_code: ExitCode = ExitCode.BAD_INPUT
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code

    def __str__(self) -> str:
        return f"{self.message}\nhint: {self.hint}" if self.hint else self.message


class InfrastructureError(ChperfError):
    """A failure of the machinery (servers, disks, network), not of the tested code."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message, hint=hint, exit_code=ExitCode.INFRASTRUCTURE)
