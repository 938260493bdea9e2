"""A controlled noisy neighbour for the benchmarks: stress-ng stressors whose kind and duty
cycle change over time, as on a shared CI machine. Started and stopped by the benchmark,
each phase's stress-ng by its own process group (never by name).

Phases, in a loop (PHASES): CPU stressors at a fraction of a core and at full load, a memory
bandwidth stressor, a mix, and quiet spells, each for PHASE_SECONDS. The schedule is fixed
(no randomness): two benchmarks under the interferer meet the same neighbour.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass
from types import TracebackType

PHASE_SECONDS = 20.0


@dataclass(frozen=True)
class Phase:
    name: str
    args: tuple[str, ...]  # stress-ng arguments; empty: quiet


PHASES = (
    Phase("1 CPU at 50%", ("--cpu", "1", "--cpu-load", "50")),
    Phase("quiet", ()),
    Phase("1 CPU at 100%", ("--cpu", "1", "--cpu-load", "100")),
    Phase("memory bandwidth", ("--stream", "1")),
    Phase("2 CPUs at 30%", ("--cpu", "2", "--cpu-load", "30")),
    Phase("quiet", ()),
    Phase("CPU 80% and memory", ("--cpu", "1", "--cpu-load", "80", "--vm", "1",
                                 "--vm-bytes", "256M")),
)  # fmt: skip


class Interferer:
    """`with Interferer():` runs the phases until the block ends."""

    def __init__(self, phases: tuple[Phase, ...] = PHASES, seconds: float = PHASE_SECONDS):
        binary = shutil.which("stress-ng")
        if binary is None:
            raise SystemExit("stress-ng is missing: apt-get install -y stress-ng")
        self._binary = binary
        self._phases = phases
        self._seconds = seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="interferer", daemon=True)
        self._current: subprocess.Popen[bytes] | None = None
        self.log: list[str] = []

    def __enter__(self) -> Interferer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._end_phase()

    def _loop(self) -> None:
        index = 0
        while not self._stop.is_set():
            phase = self._phases[index % len(self._phases)]
            self.log.append(phase.name)
            if phase.args:
                self._current = subprocess.Popen(
                    [self._binary, *phase.args, "--quiet"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,  # its own process group: stopped as one
                )
            self._stop.wait(self._seconds)
            self._end_phase()
            index += 1

    def _end_phase(self) -> None:
        process, self._current = self._current, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
