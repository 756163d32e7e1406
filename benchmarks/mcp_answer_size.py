"""How long one MCP answer of N MB takes to read, through the MCP SDK's stdio reader and
through `synaptum_lite.integrations.mcp.connect`'s own.

    uv run python -m benchmarks.mcp_answer_size [--sizes 5 20 40] [--repeats 1] [--only sdk|lite]

Each measure starts a real server process (this file, run as `serve`: JSON-RPC over stdio by
hand, one tool, `grande`, answering a text of the size it is asked for), lists its tools, then
times one `tools/call`, from the request sent to the result in hand:

- `sdk`: the SDK's `stdio_client` and a `ClientSession`, as `connect` was before it had its
  own reader (issue 28: 40 MB took 19 s there, 100 MB 502 s: the reader joins each chunk to
  the partial line it keeps, so a line of n bytes costs about n²/64 KB);
- `lite`: `connect(..., max_answer_bytes=...)` raised above the size, and the tool it gives
  (its pipes are `synaptum_lite.integrations.mcp_stdio`'s: the lines joined once, at their end).

The clock covers the server building and writing the answer too, the same for both readers.
Wall-clock seconds, the median of `--repeats`. A benchmark, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

MB = 1024 * 1024


def serve() -> None:
    """The server: `grande` answers `{"mb": N}` with a text of N MB (ASCII)."""
    out = sys.stdout.buffer
    for line in sys.stdin:
        request = json.loads(line)
        method, ident = request.get("method"), request.get("id")
        if ident is None:
            continue
        params = request.get("params") or {}
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": params.get("protocolVersion"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "grande", "version": "1"},
            }
        elif method == "tools/list":
            schema = {"type": "object", "properties": {"mb": {"type": "number"}}}
            result = {"tools": [{"name": "grande", "inputSchema": schema}]}
        elif method == "tools/call":
            size = int(float(params["arguments"]["mb"]) * MB)
            result = {"content": [{"type": "text", "text": "x" * size}]}
        else:
            result = {}
        out.write(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode() + b"\n")
        out.flush()


async def through_sdk(mb: float) -> float:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(command=sys.executable, args=[__file__, "serve"])
    async with stdio_client(parameters) as streams, ClientSession(*streams) as session:
        await session.initialize()
        await session.list_tools()
        started = time.perf_counter()
        result = await session.call_tool("grande", {"mb": mb}, read_timeout_seconds=3600)
        took = time.perf_counter() - started
    assert len(result.content[0].text) == int(mb * MB)  # type: ignore[union-attr]
    return took


async def through_lite(mb: float) -> float:
    from synaptum_lite.integrations.mcp import connect
    from synaptum_lite.tools import ToolContext

    bound = int(mb * MB) + MB
    async with connect(
        sys.executable, __file__, "serve", prefix="b", max_answer_bytes=bound, call_timeout=3600
    ) as server:
        (tool,) = server.tools
        started = time.perf_counter()
        text = await tool.invoke({"mb": mb}, ToolContext("bench", "000001-tool", 1))
        took = time.perf_counter() - started
    assert len(text) == int(mb * MB)
    return took


def main(argv: list[str]) -> None:
    if argv[:1] == ["serve"]:
        serve()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[5, 20, 40])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--only", choices=["sdk", "lite"])
    options = parser.parse_args(argv)
    readers = {"sdk": through_sdk, "lite": through_lite}
    if options.only:
        readers = {options.only: readers[options.only]}
    print(f"{'MB':>6}  " + "  ".join(f"{name:>10}" for name in readers))
    for mb in options.sizes:
        times = {
            name: statistics.median(asyncio.run(read(mb)) for _ in range(options.repeats))
            for name, read in readers.items()
        }
        print(f"{mb:>6g}  " + "  ".join(f"{times[name]:>9.2f}s" for name in readers), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main(sys.argv[1:])
