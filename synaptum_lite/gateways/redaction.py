"""Secrets kept out of every message and log line: a secret is recognised raw or escaped in
any form a server may echo it (JSON `\\u002d`, URL `%2D`, HTML `&#45;`), and the HTTP
libraries' log records pass through the same redaction. A text that arrives in pieces holds
back what could begin a secret until the next piece says (`held_back`), so a secret cut across
two pieces shows in neither. Used by the HTTP model gateway.
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


#: What a secret's escaped forms are written with (`secret_patterns`), besides its own characters.
_ESCAPED = frozenset("\\u%&#xX;/+0123456789abcdefABCDEF")


def held_back(text: str, secrets: Iterable[str]) -> int:
    """How many characters at the end of `text` could be the beginning of a secret, raw or in
    an escaped form: a text that arrives in pieces (a streamed answer) keeps them back until
    the next piece, or the end, says whether they are one. `text` is already redacted.

    Raw, a tail is kept when the secret starts with it. Once escaped (a `\\`, `%` or `&` in
    the tail) the test is looser, and keeps more: a tail made only of characters a form of
    the secret is written with, starting as a form does, up to 16 characters per character
    of the secret (a form longer than that, escaped many times over, is not kept back).
    """
    end = len(text)
    start = end
    for secret in secrets:
        if len(secret) < 4:  # as `secret_patterns`: not redacted
            continue
        alphabet = _ESCAPED | set(secret)
        starts = {secret[0], "\\", "%", "&", *("+" if secret[0] == " " else "")}
        first = end
        while first > max(0, end - 16 * len(secret)) and text[first - 1] in alphabet:
            first -= 1
        escapes = "\\%&+" if " " in secret else "\\%&"
        last_escape = max((i for i in range(first, end) if text[i] in escapes), default=-1)
        for at in range(first, start):
            if (
                text[at] in starts
                and (
                    at <= last_escape  # the tail holds an escape: it may be an escaped form
                    or (end - at < len(secret) and secret.startswith(text[at:]))
                )
            ):
                start = at
                break
    return end - start


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
