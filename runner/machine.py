"""Facts about the machine for run.json: what a reader needs to judge the numbers."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path

from runner.environment import environment_facts


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_facts() -> dict[str, object]:
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count() or 0,
        "kernel": platform.release(),
        "hostname": socket.gethostname(),
        "python": platform.python_version(),
        **environment_facts(),
    }
