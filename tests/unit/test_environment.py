from __future__ import annotations

from pathlib import Path

from runner.environment import environment_warnings, proactive_reclaim


def make_kdamond(root: Path, state: str, action: str) -> None:
    kdamond = root / "0"
    context = kdamond / "contexts" / "0"
    scheme = context / "schemes" / "0"
    (scheme / "access_pattern" / "age").mkdir(parents=True)
    (context / "monitoring_attrs" / "intervals").mkdir(parents=True)
    (kdamond / "state").write_text(state + "\n")
    (scheme / "action").write_text(action + "\n")
    (scheme / "access_pattern" / "age" / "min").write_text("6\n")
    (context / "monitoring_attrs" / "intervals" / "aggr_us").write_text("5000000\n")


def test_running_damon_pageout_is_reported_with_its_idle_time(tmp_path: Path) -> None:
    make_kdamond(tmp_path, "on", "pageout")
    reclaim = proactive_reclaim(tmp_path)
    assert reclaim == "DAMON pageout (kdamond 0): memory idle for 30 s is paged out"
    [warning] = environment_warnings({"proactive_reclaim": reclaim})
    assert "paged-out" in warning and "echo off" in warning


def test_stopped_damon_or_other_actions_give_no_warning(tmp_path: Path) -> None:
    make_kdamond(tmp_path / "off", "off", "pageout")
    make_kdamond(tmp_path / "stat", "on", "stat")
    assert proactive_reclaim(tmp_path / "off") is None
    assert proactive_reclaim(tmp_path / "stat") is None
    assert environment_warnings({"proactive_reclaim": "none"}) == []
