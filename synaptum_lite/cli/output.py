"""How the command line prints its result: one line at a time on stdout, every character that
would steer the terminal written as an escape, cut to the columns it has and padded to them
(a wide character takes two). Output is plain text; a JSON line is one line too.
"""

from __future__ import annotations

import errno
import json
import re
import sys
import unicodedata

from .. import Usage


class OutputLost(Exception):
    """stdout could not be written: the command's result did not reach its reader."""


def say(line: str = "") -> None:
    """One line of output (stdout is the command's result; errors go to stderr), with every
    character that would steer the terminal shown as an escape (see `printable`)."""
    write(printable(line) + "\n")


def write(text: str) -> None:
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        raise OutputLost(OSError(errno.EBADF, "it is closed"))
    try:
        sys.stdout.write(text)
    except OSError as exc:  # a closed pipe, a full disk: said once, by `run`
        raise OutputLost(exc) from None


# What the journal holds is printed as it is, never obeyed: a run id, a tool's result or a
# model's answer may hold characters a terminal acts on (ANSI escapes recolour or erase lines,
# a newline makes a row of its own, U+202E reverses the text after it). They are written as
# escapes (\x1b, \n, \u202e), so every line printed is a line of the store's.
STEERING = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with the characters a terminal acts on written as Python escapes."""
    return STEERING.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    named = {10: "\\n", 13: "\\r", 9: "\\t"}.get(code)
    return named or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def json_line(row: dict[str, object]) -> str:
    """`row` as one JSON line a terminal can show: steering characters as \\u escapes."""
    text = json.dumps(row, ensure_ascii=False)
    return STEERING.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def token_counts(usage: Usage) -> str:
    counts = (usage.input_tokens, usage.output_tokens)
    return "/".join("-" if count is None else str(count) for count in counts)


def cut(text: str, width: int) -> str:
    """`text` on one line of `width` columns: line breaks and tabs as spaces, what else would
    steer the terminal as escapes, and … where it was cut."""
    text = printable(text.replace("\r", " ").replace("\n", " ").replace("\t", " "))
    if columns(text) <= width:
        return text
    kept, used = [], 0
    for character in text:
        used += _columns_of(character)
        if used > width - 1:
            break
        kept.append(character)
    return "".join(kept) + "…"


def columns(text: str) -> int:
    """The terminal columns `text` takes: a wide character (CJK, most emoji) two, a combining
    mark none, any other one."""
    return len(text) if text.isascii() else sum(_columns_of(c) for c in text)


def _columns_of(character: str) -> int:
    if character.isascii():
        return 1
    if unicodedata.category(character) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(character) in "WF" else 1


def pad(text: str, width: int) -> str:
    return text + " " * (width - columns(text))
