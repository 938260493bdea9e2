"""chperf as users install it: a wheel in a fresh virtual environment, used away from the
checkout, finds its templates and SQL as package data."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

from tests.conftest import DATA, REPO


def _run(command: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode in (0, 1), f"{command}: exit {done.returncode}\n{done.stderr}"
    return done


def test_a_wheel_installed_in_a_fresh_venv_compares_and_renders_a_report(tmp_path: Path) -> None:
    source = tmp_path / "source"  # setuptools builds in the tree: leave the checkout alone
    skip = shutil.ignore_patterns(".*", "tools", "build", "*.egg-info", "__pycache__", "chperf-out")
    shutil.copytree(REPO, source, ignore=skip)
    wheels = tmp_path / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels)]
    build.append(str(source))
    subprocess.run(build, check=True, capture_output=True, timeout=900)
    (wheel,) = wheels.glob("chperf-*.whl")
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    elsewhere = tmp_path / "elsewhere"  # not the checkout: nothing found through the cwd
    shutil.copytree(DATA / "compare_small", elsewhere / "run")
    chperf = str(env / "bin" / "chperf")
    compared = _run([chperf, "compare", "run"], elsewhere)
    assert "failure" in compared.stderr  # the fixture has a slower query
    reported = _run([chperf, "report", "run"], elsewhere)
    # relative paths are taken from the directory chperf was started in, and shown absolute
    assert f"report in {elsewhere / 'run' / 'report.html'}" in reported.stderr
    html = (elsewhere / "run" / "report.html").read_text(encoding="utf-8")
    assert "<html" in html and "slower" in html
    where = subprocess.run(
        [str(python), "-c", "import report_templates, compare; print(report_templates.__file__)"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=True,
    )
    assert str(env) in where.stdout  # the installed copy, not the checkout
