"""Where the history database is, and its credentials. The password comes from a file or
from CHPERF_HISTORY_PASSWORD, never from the URL, so it stays out of logs and artifacts."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from artifacts.errors import ChperfError

PASSWORD_ENV = "CHPERF_HISTORY_PASSWORD"
DEFAULT_DATABASE = "chperf"
DEFAULT_USER = "default"
NATIVE_PORT = 9000
NATIVE_TLS_PORT = 9440
CONFIG_KEYS = frozenset({"url", "password_file"})
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
URL_FORM = "clickhouse://user@host:port/database"


@dataclass(frozen=True)
class HistoryTarget:
    host: str
    port: int
    user: str
    database: str
    secure: bool = False
    password: str = field(default="", repr=False)

    def describe(self) -> str:
        """For messages: never includes the password."""
        return f"history database {self.database} at {self.host}:{self.port} as {self.user}"


def parse_url(url: str, password: str = "") -> HistoryTarget:
    parts = urlsplit(url)
    if parts.scheme not in ("clickhouse", "clickhouses"):
        raise ChperfError(f"history URL scheme {parts.scheme!r}: expected the form {URL_FORM}")
    if parts.password is not None:
        raise ChperfError(
            "the history URL holds a password",
            hint=f"remove it from the URL; set {PASSWORD_ENV} or pass --history-password-file",
        )
    if not parts.hostname:
        raise ChperfError(f"history URL has no host: expected the form {URL_FORM}")
    secure = parts.scheme == "clickhouses"
    try:
        port = parts.port or (NATIVE_TLS_PORT if secure else NATIVE_PORT)
    except ValueError as e:
        raise ChperfError(f"history URL: {e}: expected the form {URL_FORM}") from e
    database = parts.path.strip("/") or DEFAULT_DATABASE
    if not _IDENTIFIER.match(database):
        raise ChperfError(
            f"history database name {database!r}: expected letters, digits and _",
            hint=f"the URL has the form {URL_FORM}",
        )
    user = unquote(parts.username) if parts.username else DEFAULT_USER
    return HistoryTarget(parts.hostname, port, user, database, secure, password)


def read_password(password_file: Path | None, environ: Mapping[str, str]) -> str:
    if password_file is not None:
        try:
            return password_file.read_text(encoding="utf-8").rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as e:
            raise ChperfError(f"history password file {password_file}: cannot read: {e}") from e
    return environ.get(PASSWORD_ENV, "")


def read_config(path: Path) -> tuple[str, Path | None]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ChperfError(f"history config {path}: cannot read: {e}") from e
    except tomllib.TOMLDecodeError as e:
        raise ChperfError(f"history config {path}: not TOML: {e}") from e
    unknown = sorted(set(data) - CONFIG_KEYS)
    if unknown:
        raise ChperfError(
            f"history config {path}: unknown keys {', '.join(unknown)}",
            hint="the keys are url and password_file",
        )
    url = data.get("url")
    if not isinstance(url, str):
        raise ChperfError(f"history config {path}: url must be a string of the form {URL_FORM}")
    password_file = data.get("password_file")
    if password_file is not None and not isinstance(password_file, str):
        raise ChperfError(f"history config {path}: password_file must be a path string")
    # A relative password file is relative to the config file, not to the working directory.
    return url, (path.parent / password_file if password_file else None)


def resolve_target(
    url: str | None,
    config: Path | None,
    password_file: Path | None,
    environ: Mapping[str, str],
) -> HistoryTarget:
    if config is not None:
        url, configured_file = read_config(config)
        password_file = password_file or configured_file
    if not url:
        raise ChperfError(
            "no history database given",
            hint=f"pass --history-url {URL_FORM} or --history-config FILE",
        )
    return parse_url(url, read_password(password_file, environ))
