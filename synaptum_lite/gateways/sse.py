"""Server-sent events, as a streamed chat completion arrives: lines, then each event's data.

No network and no JSON: `http` feeds in a response's bytes, and `wire.StreamAssembly` adds up
what each event's data carries. `SseLines` reads a body up to a bound, in bytes.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncIterator, Callable


def looks_like_sse(body: bytes) -> bool:
    """Whether a body opens as server-sent events do (a `data:` or `event:` line, a comment)."""
    start = body.removeprefix(b"\xef\xbb\xbf").lstrip()
    return start.startswith((b"data:", b"event:", b"id:", b":"))


class SseLines:
    """The lines of a body, as SSE splits them (CRLF, CR or LF), reading at most `limit` bytes.

    Keeps the body's first `sample_size` characters, and one more so a cut shows (`sample`), to
    quote, and counts `data` lines (`events`), so a body that is not SSE at all can be told
    from a stream cut short.
    """

    def __init__(self, limit: int, sample_size: int) -> None:
        self.limit = limit
        self.sample_size = sample_size
        self.sample = ""
        self.events = 0

    async def read(
        self, chunks: AsyncIterator[bytes], too_large: Callable[[], Exception]
    ) -> AsyncIterator[str]:
        # "utf-8-sig": a byte order mark opening the stream is dropped, as SSE says
        decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        partial: list[str] = []  # the line being read, in pieces: a long line costs no rescans
        after_cr = False  # the last piece ended in CR: an LF starting the next one is its pair
        size = 0
        async for chunk in chunks:
            size += len(chunk)
            if size > self.limit:
                raise too_large()
            text = decoder.decode(chunk)
            if len(self.sample) <= self.sample_size:
                self.sample += text[: self.sample_size + 1 - len(self.sample)]
            if after_cr and text.startswith("\n"):
                text = text[1:]
            after_cr = text.endswith("\r")
            *ended, rest = _LINE_BREAK.split(text)
            for piece in ended:
                partial.append(piece)
                line = "".join(partial)
                partial = []
                self.events += line == "data" or line.startswith("data:")
                yield line
            partial.append(rest)
        partial.append(decoder.decode(b"", final=True))
        if "".join(partial):
            yield "".join(partial)


_LINE_BREAK = re.compile("\r\n|\r|\n")


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The `data` of each server-sent event (multi-line data joined); comments skipped."""
    buffer: list[str] = []
    async for line in lines:
        if line == "":
            # an event whose data is empty (`data:` alone, a keep-alive) is not dispatched
            if "".join(buffer):
                yield "\n".join(buffer)
            buffer = []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if name == "data":
            buffer.append(value[1:] if value.startswith(" ") else value)
    if "".join(buffer):
        yield "\n".join(buffer)
