"""The environment monitor: what the machine did while chperf measured, sampled from /proc at
a fixed rate in a background thread. Utilization (CPU shares by kind, our servers' CPU against
everything else's, disk busy time) and saturation (load, pressure stall information, disk
queue, steal by the hypervisor), so that a run slowed by a neighbour can be told from a run
slowed by the patch (docs/method.md, "The environment monitor").

Parsing is pure (text in, numbers out); `Monitor` is the thin shell that reads the files,
keeps the previous sample and hands each interval's figures to a writer.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from artifacts.tables import MonitorRow
from compare.interference import FOREIGN_CPU, STEAL

PROC = Path("/proc")
# Four samples a second: a measured run of 0.1-1 s overlaps a few of them, and reading the
# dozen small files costs well under a millisecond of one core.
INTERVAL_S = 0.25
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# /proc/stat's cpu line: user nice system idle iowait irq softirq steal (guest is in user).
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
PRESSURE = ("cpu", "io", "memory")
# Block devices that are not disks: their counters say nothing about the disk's saturation.
# The samples kept for the stop rule's questions: the last ten minutes.
RECENT = int(600 / INTERVAL_S)
VIRTUAL_DISKS = ("loop", "ram", "zram", "dm-", "md", "sr")


@dataclass(frozen=True)
class Counters:
    """Cumulative counters at one instant."""

    at: float  # time.monotonic()
    wall: float  # time.time(), for the artifact
    cpu: tuple[int, ...]  # CPU_FIELDS, in clock ticks over all CPUs
    pressure: tuple[int | None, ...]  # PRESSURE "some" totals in microseconds; None: absent
    ours: int  # clock ticks of the processes we watch (the servers)
    own: int  # clock ticks of chperf itself
    disk_busy_ms: int  # io_ticks summed over physical disks
    disk_queue_ms: int  # weighted time in queue summed over physical disks
    load1: float
    runnable: int
    mem_available_kb: int


Sample = MonitorRow  # the artifact's row: monitor.tsv


def parse_cpu(stat: str) -> tuple[int, ...]:
    """The aggregate `cpu` line of /proc/stat, CPU_FIELDS (missing trailing fields are 0)."""
    for line in stat.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            values = [int(v) for v in parts[1 : 1 + len(CPU_FIELDS)]]
            return tuple(values + [0] * (len(CPU_FIELDS) - len(values)))
    raise ValueError("no aggregate cpu line in /proc/stat")


def count_cpus(stat: str) -> int:
    return sum(1 for line in stat.splitlines() if line[:3] == "cpu" and line[3:4].isdigit())


def parse_pressure(text: str) -> int:
    """The `some` line's total stall time in microseconds."""
    for line in text.splitlines():
        if line.startswith("some "):
            for item in line.split()[1:]:
                key, _, value = item.partition("=")
                if key == "total":
                    return int(value)
    raise ValueError("no 'some ... total=' line")


def parse_process_ticks(stat: str) -> int:
    """utime + stime of /proc/PID/stat (fields 14 and 15; the name may hold spaces)."""
    after_name = stat.rsplit(")", 1)[1].split()
    return int(after_name[11]) + int(after_name[12])


def parse_diskstats(text: str) -> tuple[int, int]:
    """(io_ticks, weighted time in queue) in ms, summed over physical disks' whole devices."""
    busy = queue = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 14:
            continue
        name = parts[2]
        if name.startswith(VIRTUAL_DISKS) or _is_partition(name):
            continue
        busy += int(parts[12])
        queue += int(parts[13])
    return busy, queue


def _is_partition(name: str) -> bool:
    """sda1, nvme0n1p1, vda2: a partition's time is already in its disk's."""
    if name.startswith("nvme") or name.startswith("mmcblk"):
        return "p" in name.split("n", 2)[-1]
    return name[-1].isdigit()


def parse_loadavg(text: str) -> tuple[float, int]:
    parts = text.split()
    return float(parts[0]), int(parts[3].split("/")[0])


def parse_mem_available(meminfo: str) -> int:
    for line in meminfo.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    return 0


def interval(before: Counters, after: Counters, cpus: int) -> Sample:
    """The figures of the interval between two counter readings."""
    seconds = max(after.at - before.at, 1e-9)
    delta = [a - b for a, b in zip(after.cpu, before.cpu, strict=True)]
    total = max(sum(delta), 1)
    share = dict(zip(CPU_FIELDS, (d / total for d in delta), strict=True))
    busy_cores = (total - delta[3] - delta[4]) / CLOCK_TICKS / seconds
    servers = (after.ours - before.ours) / CLOCK_TICKS / seconds
    own = (after.own - before.own) / CLOCK_TICKS / seconds
    stalls = [
        None if a is None or b is None else min(1.0, (a - b) / 1e6 / seconds)
        for a, b in zip(after.pressure, before.pressure, strict=True)
    ]
    return Sample(
        time=after.wall,
        seconds=seconds,
        cpus=cpus,
        user=share["user"] + share["nice"],
        system=share["system"] + share["irq"] + share["softirq"],
        iowait=share["iowait"],
        steal=share["steal"],
        idle=share["idle"],
        servers_cpu=max(servers, 0.0),
        chperf_cpu=max(own, 0.0),
        foreign_cpu=max(busy_cores - servers - own, 0.0),
        load1=after.load1,
        runnable=after.runnable,
        cpu_pressure=stalls[0],
        io_pressure=stalls[1],
        memory_pressure=stalls[2],
        disk_busy=min(1.0, (after.disk_busy_ms - before.disk_busy_ms) / 1000 / seconds),
        disk_queue=(after.disk_queue_ms - before.disk_queue_ms) / 1000 / seconds,
        mem_available_mb=after.mem_available_kb / 1024,
    )


class Monitor:
    """Samples the machine every `interval_s` until stopped; `watched()` names the PIDs whose
    CPU time counts as our servers' (asked at every sample: servers come and go). Each
    interval goes to `sink`. Never raises into the run: a file that cannot be read counts as
    absent."""

    def __init__(
        self,
        sink: Callable[[Sample], None],
        watched: Callable[[], Iterable[int]],
        interval_s: float = INTERVAL_S,
        proc: Path = PROC,
    ) -> None:
        self._sink = sink
        self._watched = watched
        self._interval = interval_s
        self._proc = proc
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="chperf-monitor", daemon=True)
        self.recent: deque[Sample] = deque(maxlen=RECENT)
        self._ticks: dict[int, int] = {}  # last seen ticks of each watched PID
        self._ours = 0  # ticks of watched PIDs, accumulated so exits do not go backwards
        self.cpus = max(count_cpus(self._read("stat") or ""), 1)

    def __enter__(self) -> Monitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        previous = self.read()
        while previous is not None and not self._stop.wait(self._interval):
            current = self.read()
            if current is None:
                return
            sample = interval(previous, current, self.cpus)
            self.recent.append(sample)
            self._sink(sample)
            previous = current

    def disturbed(self, start: float, end: float) -> bool:
        """Whether a sample overlapping [start, end] (wall clock) shows interference: foreign
        CPU or steal at compare/interference.py's thresholds."""
        return any(
            s.foreign_cpu >= FOREIGN_CPU or s.steal >= STEAL
            for s in list(self.recent)
            if s.time > start and s.time - s.seconds < end
        )

    def _read(self, name: str) -> str | None:
        try:
            return (self._proc / name).read_text()
        except OSError:
            return None

    def read(self) -> Counters | None:
        """The counters now; None when /proc/stat itself is unreadable (no monitor)."""
        stat = self._read("stat")
        if stat is None:
            return None
        load = parse_loadavg(self._read("loadavg") or "0 0 0 0/0 0")
        disk = parse_diskstats(self._read("diskstats") or "")
        return Counters(
            at=time.monotonic(),
            wall=time.time(),
            cpu=parse_cpu(stat),
            pressure=tuple(self._pressure(kind) for kind in PRESSURE),
            ours=self._watched_ticks(),
            own=self._ticks_of("self") or 0,
            disk_busy_ms=disk[0],
            disk_queue_ms=disk[1],
            load1=load[0],
            runnable=load[1],
            mem_available_kb=parse_mem_available(self._read("meminfo") or ""),
        )

    def _pressure(self, kind: str) -> int | None:
        text = self._read(f"pressure/{kind}")
        try:
            return parse_pressure(text) if text else None
        except ValueError:
            return None

    def _ticks_of(self, pid: int | str) -> int | None:
        text = self._read(f"{pid}/stat")
        try:
            return parse_process_ticks(text) if text else None
        except (IndexError, ValueError):
            return None

    def _watched_ticks(self) -> int:
        for pid in set(self._watched()):
            ticks = self._ticks_of(pid)
            if ticks is None:
                continue
            # first sight: the baseline (what it used before counts as foreign, once)
            self._ours += ticks - self._ticks.get(pid, ticks)
            self._ticks[pid] = ticks
        return self._ours


def summarize(samples: Iterable[Sample], start: float, end: float) -> Mapping[str, float]:
    """The machine during [start, end] (wall clock): the foreign CPU, steal and CPU pressure
    of the samples that overlap it, averaged; empty when none does."""
    chosen = [s for s in samples if s.time >= start and s.time - s.seconds <= end]
    if not chosen:
        return {}
    pressures = [s.cpu_pressure for s in chosen if s.cpu_pressure is not None]
    figures = {
        "foreign_cpu": sum(s.foreign_cpu for s in chosen) / len(chosen),
        "steal": sum(s.steal for s in chosen) / len(chosen),
    }
    if pressures:
        figures["cpu_pressure"] = sum(pressures) / len(pressures)
    return figures
