"""Text from servers and test files, made safe for a terminal: no control characters (an
escape sequence in a server message must not reach the user's terminal), one line, bounded."""

from __future__ import annotations

import unicodedata

MAX_CONSOLE_CHARS = 400


def console_text(text: str, limit: int = MAX_CONSOLE_CHARS) -> str:
    """Control and format characters become visible escapes; line breaks become " | "."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    out = []
    for char in " | ".join(lines):
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            out.append(f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")
        else:
            out.append(char)
    clean = "".join(out)
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."
