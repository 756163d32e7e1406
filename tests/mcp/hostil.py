"""A hostile MCP server, written by hand on the protocol's JSON-RPC over stdio (no SDK), so that
it can break the rules the SDK would keep for it.

    python hostil.py EFECTOS [MODE...]

Its tools: `enviar` (an effect, without annotations unless a mode says otherwise), `grande`
(a result of a million characters), `imagen` (an image, a resource and structured content, no
text), `falla` (an error result with no text). Every start, every effect and every `_meta` a
call carried is a JSON line in `EFECTOS`, written before answering, so it survives a kill.
`enviar` deduplicates: a call whose `_meta` carries an idempotency key already seen does not
send again, it answers what it answered the first time.

Modes: `mudo` (never answers initialize), `se-va` (exits after listing its tools), `basura`
(writes a line that is not JSON before each answer), `doble` (lists `enviar` twice),
`nombre:NAME` (lists `enviar` under NAME), `idempotente` (`enviar` declares itself
idempotent), `rara` (a hint that is not a boolean), `video` (`imagen` answers a content type
MCP does not have), `muere` (exits inside `enviar`, after its effect, without answering),
`terco` (when asked to stop, it stays: stdin closed and SIGTERM ignored).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

KEY = "synaptum-lite/idempotency-key"


def main(argv: list[str]) -> None:
    effects, modes = Path(argv[0]), argv[1:]
    names = [m.removeprefix("nombre:") for m in modes if m.startswith("nombre:")]
    name = names[0] if names else "enviar"

    def record(what: str, **data: object) -> None:
        with effects.open("a", encoding="utf-8") as file:
            file.write(json.dumps({"que": what, **data}, ensure_ascii=False) + "\n")

    def send(message: dict[str, object]) -> None:
        if "basura" in modes:
            sys.stdout.write("esto no es JSON\n")
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def tool(tool_name: str, annotations: dict[str, bool] | None = None) -> dict[str, object]:
        listed: dict[str, object] = {
            "name": tool_name,
            "description": f"La herramienta {tool_name}.",
            "inputSchema": {"type": "object", "properties": {"texto": {"type": "string"}}},
        }
        if annotations is not None:
            listed["annotations"] = annotations
        return listed

    declared = (
        {"destructiveHint": False, "idempotentHint": True} if "idempotente" in modes else None
    )
    if "rara" in modes:
        declared = {"idempotentHint": "sí"}  # not a boolean
    tools = [tool(name, declared), tool("grande"), tool("imagen"), tool("falla")]
    if "doble" in modes:
        tools.insert(1, tool(name, declared))
    sent = {  # idempotency key -> what was answered, kept across restarts in EFECTOS
        entry["clave"]: entry["resultado"]
        for entry in map(
            json.loads, effects.read_text("utf-8").splitlines() if effects.exists() else []
        )
        if entry["que"] == "enviar" and entry["clave"] is not None
    }
    record("arranque", pid=os.getpid())
    for line in sys.stdin:
        request = json.loads(line)
        method, ident = request.get("method"), request.get("id")
        if ident is None:
            continue  # a notification
        params = request.get("params") or {}
        if method == "initialize":
            if "mudo" in modes:
                continue
            result: dict[str, object] = {
                "protocolVersion": params.get("protocolVersion"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostil", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "tools/call":
            result = call(params, name, sent, record, "muere" in modes)
            if "video" in modes and params.get("name") == "imagen":
                result = {"content": [{"type": "video"}]}  # no such content type
        else:
            result = {}
        send({"jsonrpc": "2.0", "id": ident, "result": result})
        if method == "tools/list" and "se-va" in modes:
            sys.exit(0)
    if "terco" in modes:  # stdin closed: asked to stop, it stays, ignoring SIGTERM too
        import signal
        import time

        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3600)


def call(params, name, sent, record, dies):  # type: ignore[no-untyped-def]
    tool, meta = params.get("name"), params.get("_meta") or {}
    if tool == name:
        key = meta.get(KEY)
        if key in sent:
            record("repetida", clave=key)
            return {"content": [{"type": "text", "text": sent[key]}]}
        answer = f"enviado: {params.get('arguments', {}).get('texto')}"
        record("enviar", clave=key, argumentos=params.get("arguments"), resultado=answer)
        if key is not None:
            sent[key] = answer
        if dies:
            os._exit(9)  # the effect is done and recorded; no answer
        return {"content": [{"type": "text", "text": answer}]}
    if tool == "grande":
        return {"content": [{"type": "text", "text": "x" * 1_000_000}]}
    if tool == "imagen":
        return {
            "content": [
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {
                    "type": "resource",
                    "resource": {"uri": "file:///informe.txt", "text": "el informe"},
                },
            ],
            "structuredContent": {"total": 3},
        }
    return {"content": [], "isError": True}  # falla


if __name__ == "__main__":
    main(sys.argv[1:])
