"""Text from servers, test files and artifacts, made safe for a terminal and a CI log.

Test names, file names, query names and server messages are user-supplied: an escape sequence
in one must not reach the user's terminal, a line break in one must not start a line of its
own, and none may become a GitHub Actions workflow command. The runner reads commands from
stdout and stderr alike: a line that starts with `::` once leading whitespace is trimmed, and
the legacy `##[command]` anywhere in a line (actions/runner, ActionCommand.cs).
"""

from __future__ import annotations

import unicodedata

MAX_CONSOLE_CHARS = 400
# A block (an error with a server's last log lines): each line is cut here, and the block after
# this many lines; the full text is in the artifacts (errors.tsv, the server's logs).
MAX_BLOCK_LINE_CHARS = 2000
MAX_BLOCK_LINES = 200
# Control (Cc), format (Cf: bidi overrides, zero-width), surrogate, private-use, unassigned
# and line/paragraph separator characters: shown as escapes, never written.
_UNSAFE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_COMMAND_KEY = "::"
_LEGACY_COMMAND = "##["


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, keep: str = "") -> str:
    """Every unsafe character (line breaks included) but those in `keep` as a visible escape:
    `\\x1b`, `\\u202e`."""
    # the common case: isprintable() is false for every unsafe character
    if (text.translate(str.maketrans("", "", keep)) if keep else text).isprintable():
        return text
    return "".join(
        c if c in keep or unicodedata.category(c) not in _UNSAFE else _escaped(c) for c in text
    )


def escape_controls_keep_lines(text: str) -> str:
    """As escape_controls, but line breaks and tabs stay: for text shown as lines (an HTML
    report's SQL and server messages), where only the invisible characters must be shown."""
    return escape_controls(text, keep="\n\r\t")


def _no_commands(line: str) -> str:
    """A leading `::` and any `##[` broken up by an escape: shown, never run by the runner."""
    stripped = line.lstrip()
    if stripped.startswith(_COMMAND_KEY):
        line = line[: len(line) - len(stripped)] + _escaped(":") + stripped[1:]
    return line.replace(_LEGACY_COMMAND, "#" + _escaped("#") + "[")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


def console_text(text: str, limit: int = MAX_CONSOLE_CHARS) -> str:
    """One line: line breaks become " | ", unsafe characters visible escapes, workflow
    commands broken up; cut at `limit` characters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return _cut(_no_commands(escape_controls(" | ".join(lines))), limit)


def console_block(
    text: str, line_limit: int = MAX_BLOCK_LINE_CHARS, max_lines: int = MAX_BLOCK_LINES
) -> str:
    """Several lines kept as lines (an error message with a server's log tail): each made
    safe as by console_text, indentation kept; at most `max_lines` of them."""
    lines = [
        _cut(_no_commands(escape_controls(line.rstrip())), line_limit) for line in text.splitlines()
    ]
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"... and {len(lines) - max_lines} more lines"]
    return "\n".join(lines)
