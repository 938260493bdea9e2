"""User-controlled strings (test names, queries, error messages) render as text, never markup."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from report import render_report, synthetic

SCRIPT = "</script><script>alert(1)</script>"
BOLD = "<b>x</b>"
HOSTILE_TEST = f"strings{SCRIPT}{BOLD}"
HOSTILE_QUERY = f" /* {SCRIPT}{BOLD} */"


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.scripts: list[str] = []
        self.attributes: list[str] = []
        self.text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes.extend(f"{name}={value}" for name, value in attrs)
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)


def _render(tmp_path: Path) -> tuple[str, _Elements]:
    out = tmp_path / "out"
    synthetic.write_small_run(out, strings_test=HOSTILE_TEST, strings_query=HOSTILE_QUERY)
    html = render_report(out).path.read_text(encoding="utf-8")
    parser = _Elements()
    parser.feed(html)
    return html, parser


def test_script_and_bold_in_test_names_and_queries_render_as_text(tmp_path: Path) -> None:
    html, parsed = _render(tmp_path)
    assert parsed.tags.count("script") == 1, "only the report's own script"
    assert "alert(1)" not in "".join(parsed.scripts)
    assert "b" not in parsed.tags
    text = "".join(parsed.text)
    assert HOSTILE_TEST in text  # shown, as text
    assert SCRIPT in text and BOLD in text
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_hostile_names_never_reach_attributes_unescaped(tmp_path: Path) -> None:
    html, parsed = _render(tmp_path)
    assert not any(a.startswith("on") for a in parsed.attributes)
    assert "<b>" not in html
    # anchors and file names are derived ids, not the raw name
    ids = [a for a in parsed.attributes if a.startswith("id=")]
    assert all("<" not in a and ">" not in a and '"' not in a for a in ids)


def test_hostile_error_messages_render_as_text(tmp_path: Path) -> None:
    _, parsed = _render(tmp_path)
    text = "".join(parsed.text)
    assert f"exited with code 139 during {HOSTILE_TEST} query 1" in text  # a run problem
    pages = "".join(_text_of(p) for p in (tmp_path / "out" / "details").iterdir())
    assert f"Unknown identifier: lower_utf8 {BOLD}" in pages  # on the query's details page


def test_detail_pages_show_hostile_names_queries_and_errors_as_text(tmp_path: Path) -> None:
    _render(tmp_path)
    pages = sorted((tmp_path / "out" / "details").iterdir())
    hostile = [p for p in pages if HOSTILE_TEST in _text_of(p)]
    assert len(hostile) == 1  # the page of the test's four queries
    assert _text_of(hostile[0]).count(f"{HOSTILE_TEST} · query") == 4
    for page in pages:
        parsed = _Elements()
        parsed.feed(page.read_text(encoding="utf-8"))
        assert "script" not in parsed.tags and "b" not in parsed.tags, page.name
        assert not any(a.startswith("on") for a in parsed.attributes), page.name
    partial = "".join(p.read_text(encoding="utf-8") for p in hostile)
    assert "Unknown identifier: lower_utf8 &lt;b&gt;x&lt;/b&gt;" in partial


def _text_of(page: Path) -> str:
    parsed = _Elements()
    parsed.feed(page.read_text(encoding="utf-8"))
    return "".join(parsed.text)


CONTROLS_TEST = "strings\x1b[2J\u202eevil\x07"


def test_control_characters_in_names_render_as_visible_escapes(tmp_path: Path) -> None:
    """An escape sequence, a bidi override and a bell in a test name: shown as escapes in the
    report and on every details page, as on the console, never as the characters."""
    out = tmp_path / "out"
    synthetic.write_small_run(out, strings_test=CONTROLS_TEST, strings_query="\n  SELECT 1\n")
    html = render_report(out).path.read_text(encoding="utf-8")
    pages = [p.read_text(encoding="utf-8") for p in (out / "details").iterdir()]
    for text in (html, *pages):
        assert not any(c in text for c in "\x1b\u202e\x07")
    assert "strings\\x1b[2J\\u202eevil\\x07" in html
    assert any("strings\\x1b[2J\\u202eevil\\x07" in page for page in pages)
    assert "\n" in html  # line breaks stay
