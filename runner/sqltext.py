"""Small lexical helpers over SQL text, for the checks that read a test's statements with
regular expressions (runner/lint.py, runner/datasets.py, runner/results.py)."""

from __future__ import annotations

import re

_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'", re.DOTALL)


def without_strings(sql: str) -> str:
    """`sql` with every single-quoted string literal emptied to '', so that nothing inside
    one looks like a name or a call."""
    return _STRING_LITERAL.sub("''", sql)


def unquoted(name: str) -> str:
    """An identifier without its backquotes or double quotes: `db`.`t` -> db.t."""
    return name.replace("`", "").replace('"', "")
