"""Unit tests of the report's protocol timings section (report/protocols.py,
report_templates/protocols.j2): what it shows, and that user text is escaped."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from artifacts.protocols import ProtocolVerdict
from report.protocols import protocol_section
from report.render import environment

HOSTILE = "<script>alert(1)</script>"


def _verdict(phase: str, **changes: object) -> dict[str, object]:
    base = ProtocolVerdict(
        test=f"t{HOSTILE}", query_index=0, protocol="native", phase=phase, verdict="slower",
        reason=f"slower: ({HOSTILE})", fails_check=phase == "transfer", runs=10,
        reference_median=0.2, patched_median=0.26, diff=0.3, threshold=0.05, p_value=0.001,
        ci_low=1.2, ci_high=1.4, reference_bytes=22_889_706, patched_bytes=23_500_000,
        reference_blocks=16, patched_blocks=123,
    ).as_json()  # fmt: skip
    return {**base, **changes}


def _render(out: Path) -> str:
    section = protocol_section(out)
    assert section is not None
    template = environment().get_template("protocols.j2")
    return template.render(report=SimpleNamespace(protocols=section))


def test_a_run_without_protocol_timings_has_no_section(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"status": "success"}))
    assert protocol_section(tmp_path) is None


def test_each_phase_is_a_row_with_both_sides_the_change_bytes_and_blocks(tmp_path: Path) -> None:
    rows = [_verdict("connect", verdict="unchanged", fails_check=False), _verdict("transfer")]
    (tmp_path / "summary.json").write_text(json.dumps({"protocols": rows}))
    section = protocol_section(tmp_path)
    assert section is not None and section.failing == 1
    first, second = section.rows
    assert (first.phase, first.first_of_group, second.first_of_group) == ("connect", True, False)
    assert (second.phase, second.reference, second.patched) == ("full transfer", "200 ms", "260 ms")
    assert second.change == "1.30x slower (+30.0%)"
    assert (first.reference_bytes, first.patched_bytes, first.blocks) == (
        "21.8 MiB",
        "22.4 MiB",
        "16 / 123",
    )
    html = _render(tmp_path)
    assert "slower (fails the check)" in html and "16 / 123" in html


def test_test_names_and_reasons_are_escaped(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"protocols": [_verdict("transfer")]}))
    html = _render(tmp_path)
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_an_unreadable_entry_is_shown_as_a_problem_in_the_section(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"protocols": [{"test": 3}]}))
    html = _render(tmp_path)
    assert "summary.json: protocols[0] is malformed" in html
