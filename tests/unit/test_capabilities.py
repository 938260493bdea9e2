"""Capabilities are read from what the server has, never from its version."""

from __future__ import annotations

from runner.control import profile_events_form


def test_the_profile_events_map_wins_over_the_alias_arrays_beside_it() -> None:
    modern = {"query_id", "ProfileEvents", "ProfileEvents.Names", "ProfileEvents.Values"}
    assert profile_events_form(modern) == "map"


def test_a_server_with_only_the_arrays_reads_them() -> None:
    old = {"query_id", "ProfileEvents.Names", "ProfileEvents.Values"}
    assert profile_events_form(old) == "arrays"
