"""The docs stay a manual: README short, every relative link resolving inside the repository,
docs/cli.md generated from the parser, and no measurement diary (issue numbers, experiment
ids, sessions) in README or docs/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from chperf.reference import render_reference
from tests.conftest import REPO

README_MAX_LINES = 200

# [text](target) and ![alt](target), with an optional "title"; [label]: target definitions.
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.MULTILINE)
FENCE = re.compile(r"^(\s*)(```|~~~).*?^\1\2[^\S\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)
EXTERNAL = ("http://", "https://", "mailto:")

# What belongs in commit messages, not in docs: issue numbers, experiment ids, sessions.
DIARY = (
    re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE),
    re.compile(r"(?<![\w&/])#\d+\b"),
    re.compile(r"\b(kc|aa)\d+\b", re.IGNORECASE),
    re.compile(r"\bsessions?\s+\d", re.IGNORECASE),
)


def doc_files(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def without_blocks(text: str) -> str:
    """The text with fenced code blocks blanked out, line numbers kept."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def without_code(text: str) -> str:
    """The text with code blocks and code spans blanked out, line numbers kept."""
    return CODE_SPAN.sub(lambda m: "\n" * m.group(0).count("\n"), without_blocks(text))


def links(text: str) -> Iterator[tuple[int, str]]:
    """(line, target) of every Markdown link outside code."""
    prose = without_code(text)
    for pattern in (INLINE_LINK, DEFINITION):
        for match in pattern.finditer(prose):
            yield prose.count("\n", 0, match.start()) + 1, match.group(1)


def anchors(markdown: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens, -1, -2, ...
    for repeats."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(without_blocks(markdown.read_text(encoding="utf-8"))):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(markdown: Path, root: Path) -> list[str]:
    """`file:line: target: why` for every relative link of the file that does not resolve to
    an existing file or directory inside root, or to a heading of a Markdown target."""
    root = root.resolve()
    problems = []
    for line, target in links(markdown.read_text(encoding="utf-8")):
        if target.startswith(EXTERNAL) or target.startswith("#"):
            continue
        path_part, _, anchor = target.partition("#")
        where = f"{markdown.relative_to(root)}:{line}: {target}"
        resolved = (markdown.parent / path_part).resolve()
        if not resolved.is_relative_to(root):
            problems.append(f"{where}: points outside the repository")
        elif not resolved.exists():
            problems.append(f"{where}: no such file or directory")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{where}: no heading with the id #{anchor}")
    return problems


def diary_mentions(text: str) -> list[str]:
    return [m.group(0) for pattern in DIARY for m in pattern.finditer(text)]


def test_readme_is_a_manual_of_at_most_200_lines() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines, at most {README_MAX_LINES}: move detail to docs/"
    )


def test_every_relative_link_in_readme_and_docs_resolves_inside_the_repository() -> None:
    files = doc_files(REPO)
    assert len(files) > 1, "docs/*.md is missing"
    assert [p for f in files for p in broken_links(f, REPO)] == []


def test_the_link_checker_reports_missing_files_escapes_and_unknown_headings(
    tmp_path: Path,
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# A page\n\n## The CPU (`--pin`)\n")
    (tmp_path / "README.md").write_text(
        "# Title\n"
        "[ok](docs/page.md) [dir](docs/) [heading](docs/page.md#the-cpu---pin)\n"
        "[gone](docs/missing.md)\n"
        "[outside](../elsewhere/README.md)\n"
        "[bad heading](docs/page.md#no-such-heading)\n"
        "[ref]: docs/also-missing.md\n"
    )
    assert broken_links(tmp_path / "README.md", tmp_path) == [
        "README.md:3: docs/missing.md: no such file or directory",
        "README.md:4: ../elsewhere/README.md: points outside the repository",
        "README.md:5: docs/page.md#no-such-heading: no heading with the id #no-such-heading",
        "README.md:6: docs/also-missing.md: no such file or directory",
    ]


def test_the_link_checker_skips_urls_mail_pure_anchors_and_code(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(
        "[web](https://clickhouse.com/docs) [mail](mailto:a@b.c) [here](#title)\n"
        "`[not a link](missing.md)`\n"
        '```sh\n[ -n "$x" ](missing.md)\n```\n'
    )
    assert broken_links(tmp_path / "README.md", tmp_path) == []


def test_docs_cli_md_is_generated_from_the_parser() -> None:
    written = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert written == render_reference(), (
        "docs/cli.md is out of date with chperf/parser.py: run `python -m chperf.reference --write`"
    )


def test_the_cli_reference_does_not_depend_on_the_terminal_width(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "30")
    narrow = render_reference()
    monkeypatch.setenv("COLUMNS", "300")
    assert render_reference() == narrow


def test_the_cli_reference_documents_every_subcommand() -> None:
    text = render_reference()
    for command in ("run", "compare", "report", "lint", "merge", "upload", "history"):
        assert f"## `chperf {command}`" in text
    assert "| `--fdr Q` | `0.05` |" in text


def test_no_readme_or_docs_page_mentions_issue_numbers_experiment_ids_or_sessions() -> None:
    found = {
        str(path.relative_to(REPO)): mentions
        for path in doc_files(REPO)
        if (mentions := diary_mentions(path.read_text(encoding="utf-8")))
    }
    assert found == {}, "conclusions, not diaries: move these to commit messages"


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ("added by issue 8", ["issue 8"]),
        ("see Issue 12", ["Issue 12"]),
        ("fixed in #123", ["#123"]),
        ("the kc23 run", ["kc23"]),
        ("A/A run aa19", ["aa19"]),
        ("measured in session 5", ["session 5"]),
        ("query 6 of agg_quantiles", []),
        ("## The verdict rules", []),
        ("an A/A run of 25 runs, the issue is noise", []),
        ("anchor [x](method.md#the-rules) and &#123;", []),
    ],
)
def test_the_diary_finder_flags_issue_numbers_experiment_ids_and_sessions(
    text: str, flagged: list[str]
) -> None:
    assert diary_mentions(text) == flagged
