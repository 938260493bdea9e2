"""`chperf`: parse argv once, run one subcommand, one error boundary, documented exit codes."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Sequence
from types import FrameType

from artifacts.console import console_block, console_text
from artifacts.errors import ChperfError, ExitCode, Terminated
from chperf.commands import COMMANDS
from chperf.parser import build_parser


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """Unwind on the first SIGINT/SIGTERM; ignore later ones, so a second Ctrl-C cannot cut
    the cleanup short and leave servers behind."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # Say so at once: stopping four servers can take seconds. os.write, not print: the
    # handler may run while the main thread is inside a write to sys.stderr.
    with contextlib.suppress(OSError):
        name = signal.Signals(signum).name
        os.write(2, f"chperf: {name} received: stopping the servers\n".encode())
    if signum == signal.SIGTERM:
        raise Terminated()
    raise KeyboardInterrupt()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    # A signal mask is inherited through exec: a parent that blocked SIGTERM (some job
    # runners do) would leave chperf deaf to it, and the run would go on to the end.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        return COMMANDS[args.command](args)
    except ChperfError as e:
        if args.verbose:
            traceback.print_exc()
        # Messages quote paths, test names and server logs: each line made safe to print.
        print(f"chperf: error: {console_block(str(e))}", file=sys.stderr)
        return int(e.exit_code)
    except KeyboardInterrupt:
        print("chperf: interrupted; servers stopped, artifacts kept", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except Terminated:
        print("chperf: terminated; servers stopped, artifacts kept", file=sys.stderr)
        return int(ExitCode.TERMINATED)
    except Exception as e:  # a bug in chperf: say so plainly; the traceback is for -v
        if args.verbose:
            traceback.print_exc()
        what = f"{type(e).__name__}: {console_text(str(e), 1000)}"
        print(f"chperf: internal error: {what} (rerun with -v)", file=sys.stderr)
        return int(ExitCode.INFRASTRUCTURE)


if __name__ == "__main__":
    sys.exit(main())
