"""Scratch directories a killed chperf left behind are removed by the next one, and nothing
else is (artifacts/scratch.py)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

from artifacts.scratch import (
    OWNER_FILE,
    Owner,
    current_owner,
    disown,
    make_scratch,
    process_start,
    sweep,
)

PREFIX = "chperf-test-"


def _dead_owner() -> Owner:
    """The owner line of a process that has exited."""
    child = subprocess.Popen(["sleep", "30"])
    start = process_start(child.pid)
    child.kill()
    child.wait()
    assert start is not None
    return dataclasses.replace(current_owner(), pid=child.pid, start=start)


def _owned_by(path: Path, owner: Owner) -> Path:
    path.mkdir()
    (path / OWNER_FILE).write_text(owner.line())
    (path / "data").mkdir()
    (path / "data" / "part.bin").write_bytes(b"x" * 1000)
    return path


def test_a_new_scratch_directory_is_private_and_names_this_process(tmp_path: Path) -> None:
    path = make_scratch(PREFIX, tmp_path)
    assert path.parent == tmp_path and path.name.startswith(PREFIX)
    assert path.stat().st_mode & 0o777 == 0o700
    assert Owner.parse((path / OWNER_FILE).read_text()) == current_owner()
    assert current_owner().pid == os.getpid()


def test_the_directory_of_a_live_owner_is_kept_and_of_a_dead_one_removed(tmp_path: Path) -> None:
    live = make_scratch(PREFIX, tmp_path)
    dead = _owned_by(tmp_path / f"{PREFIX}dead", _dead_owner())
    assert sweep(PREFIX, tmp_path) == [dead]
    assert live.is_dir() and not dead.exists()


def test_a_reused_pid_or_another_boot_does_not_keep_a_directory(tmp_path: Path) -> None:
    me = current_owner()
    reused = _owned_by(tmp_path / f"{PREFIX}reused", dataclasses.replace(me, start="1"))
    rebooted = _owned_by(tmp_path / f"{PREFIX}rebooted", dataclasses.replace(me, boot="earlier"))
    assert sorted(sweep(PREFIX, tmp_path)) == sorted([reused, rebooted])
    assert not reused.exists() and not rebooted.exists()


def test_an_owner_on_another_host_or_in_another_pid_namespace_is_left_alone(
    tmp_path: Path,
) -> None:
    dead = _dead_owner()  # gone here, but on another host or in another namespace it may run
    elsewhere = _owned_by(tmp_path / f"{PREFIX}host", dataclasses.replace(dead, host="other"))
    container = _owned_by(
        tmp_path / f"{PREFIX}ns", dataclasses.replace(dead, pid_namespace="pid:[1]")
    )
    assert sweep(PREFIX, tmp_path) == []
    assert elsewhere.is_dir() and container.is_dir()


def test_directories_without_a_valid_owner_or_of_another_kind_are_never_touched(
    tmp_path: Path,
) -> None:
    dead = _dead_owner()
    unowned = tmp_path / f"{PREFIX}unowned"
    (unowned / "data").mkdir(parents=True)
    garbled = tmp_path / f"{PREFIX}garbled"
    garbled.mkdir()
    (garbled / OWNER_FILE).write_text("not an owner line at all\n")
    other_kind = _owned_by(tmp_path / "someone-else-dead", dead)
    target = _owned_by(tmp_path / "target", dead)
    link = tmp_path / f"{PREFIX}link"
    link.symlink_to(target)
    kept = make_scratch(PREFIX, tmp_path)
    disown(kept)

    assert sweep(PREFIX, tmp_path) == []
    for path in (unowned, garbled, other_kind, target, link, kept):
        assert path.exists(), path
    assert (target / "data" / "part.bin").exists()


def test_a_missing_parent_sweeps_nothing(tmp_path: Path) -> None:
    assert sweep(PREFIX, tmp_path / "absent") == []
