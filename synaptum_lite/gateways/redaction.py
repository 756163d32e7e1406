"""Secrets kept out of every message and log line: a secret is recognised raw or escaped in
any form a server may echo it (JSON `\\u002d`, URL `%2D`, HTML `&#45;`), and the HTTP
libraries' log records pass through the same redaction. Used by the HTTP model gateway.
"""

from __future__ import annotations

import logging
import re
import urllib.parse
from collections.abc import Iterable


def userinfo(url: str) -> tuple[str, str] | None:
    """The `user:password` of a URL, decoded, or None when it has none."""
    scheme, sep, rest = url.partition("://")
    authority = rest.split("/", 1)[0]
    if not sep or "@" not in authority:
        return None
    user, _, password = authority.rsplit("@", 1)[0].partition(":")
    return urllib.parse.unquote(user), urllib.parse.unquote(password)


def secret_patterns(secrets: Iterable[str]) -> tuple[re.Pattern[str], ...]:
    """A pattern per secret matching it raw or with any of its characters escaped: JSON
    (`\\u002d`, `\\/`, doubly escaped too), URL (`%2D`, `%252D`, `+`) or HTML (`&#45;`,
    `&#x2d;`), hex in either case. Secrets shorter than 4 characters are not redacted: they
    would match ordinary words."""
    patterns = []
    for secret in dict.fromkeys(s for s in secrets if s and len(s) >= 4):
        patterns.append(re.compile("".join(_any_form(c) for c in secret)))
    return tuple(sorted(patterns, key=lambda p: -len(p.pattern)))


def _any_form(char: str) -> str:
    def hexes(value: int, width: int) -> str:
        return "".join(f"[{d.lower()}{d.upper()}]" for d in f"{value:0{width}x}")

    forms = [re.escape(char), r"\\+u" + hexes(ord(char), 4) if ord(char) < 0x10000 else ""]
    forms.append("".join("%(?:25)*" + hexes(byte, 2) for byte in char.encode()))
    forms.append(f"&#0*{ord(char)};")
    forms.append(f"&#[xX]0*{hexes(ord(char), 1)};")
    if char == "/":
        forms.append(r"\\+/")
    if char == " ":
        forms.append(r"\+")
    return "(?:" + "|".join(f for f in forms if f) + ")"


def redact(text: str, patterns: Iterable[re.Pattern[str]]) -> str:
    """`text` with every match of `patterns` replaced by [redacted]."""
    for pattern in patterns:
        text = pattern.sub("[redacted]", text)
    return text


class RedactSecrets(logging.Filter):
    """Redacts the secrets of every gateway built in this process from the log records of
    the HTTP libraries it uses (a server may echo a key in a header httpcore logs)."""

    LOGGERS: tuple[str, ...] = ("httpx", "httpcore.connection", "httpcore.http11", "httpcore.http2")
    LOGGERS += ("httpcore.proxy", "httpcore.socks")
    _installed: RedactSecrets | None = None

    def __init__(self) -> None:
        super().__init__()
        self.patterns: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def install(cls, patterns: tuple[re.Pattern[str], ...]) -> None:
        if not patterns:
            return
        if cls._installed is None:
            cls._installed = cls()
            for name in cls.LOGGERS:
                logging.getLogger(name).addFilter(cls._installed)
        known = cls._installed.patterns
        cls._installed.patterns = known + tuple(p for p in patterns if p not in known)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact(message, self.patterns)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


def without_userinfo(url: str) -> str:
    """The URL with any `user:password@` removed, fit to print."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = authority.rsplit("@", 1)[1]
    return f"{scheme}://{authority}{slash}{path}"
