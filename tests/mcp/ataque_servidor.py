"""An attacking MCP server, written by hand on the protocol's JSON-RPC over stdio (no SDK), for
the attacks tests/mcp/hostil.py does not make.

    python ataque_servidor.py EFECTOS [MODE...]

Its one tool, `enviar`, is an effect without annotations (destructive, not idempotent): each
call is a JSON line in `EFECTOS`, written before anything else is answered, so it survives a
kill; so is each start and each answer the client gave to a request of the server's.

Modes, each changing what a call to `enviar` (or the start-up) meets:

- `error:CODE` answers the call with a JSON-RPC error of that code (after the effect);
- `bytes` writes a line that is not UTF-8 before the answer;
- `cierra` closes its stdout inside the call (after the effect) and stays alive;
- `pregunta` asks the client things before answering (sampling, roots, elicitation, ping) and
  sends notifications (log, progress, list changed) between them, recording each answer;
- `id-ajeno` answers the call under another request's id, and never under its own;
- `grita` writes 8 MB to stderr before answering;
- `bucle` lists its tools in pages whose cursor never ends (always the same one);
- `propiedades:JSON` lists `enviar` with that JSON as its schema's `properties`;
- `requerido:JSON` lists `enviar` with that JSON as its schema's `required`;
- `surrogado` answers text holding a lone surrogate (`"\\ud800"` in its JSON);
- `init-error` answers initialize with a JSON-RPC error; `version-rara`, with a protocol
  version no MCP has (1999-01-01);
- `otra` lists a second tool, `otra`, beside `enviar`;
- `abierta` lists `enviar` with a schema that names no property and takes any text one;
- `largo:BYTES` answers a text of BYTES characters; `sin-fin:BYTES` writes that answer's first
  BYTES characters and never ends it (no closing, no newline), staying alive until stdin
  closes; `id-al-final` writes every message with its id last;
- `lista-larga:BYTES` lists `enviar` with a description of BYTES characters;
- `nan` answers structured content holding NaN and Infinity, and no text;
- `profundo` answers structured content nested 100,000 objects deep, and no text.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    effects, modes = Path(argv[0]), argv[1:]
    codes = [int(m.split(":", 1)[1]) for m in modes if m.startswith("error:")]
    properties = [json.loads(m.split(":", 1)[1]) for m in modes if m.startswith("propiedades:")]
    out = sys.stdout.buffer

    def record(what: str, **data: object) -> None:
        with effects.open("a", encoding="utf-8") as file:
            file.write(json.dumps({"que": what, **data}, ensure_ascii=False) + "\n")

    def send(message: dict[str, object]) -> None:
        if "id-al-final" in modes and "id" in message:
            message = {**{k: v for k, v in message.items() if k != "id"}, "id": message["id"]}
        out.write(json.dumps(message).encode() + b"\n")
        out.flush()

    def sized(prefix: str) -> int:
        return next((int(m.split(":", 1)[1]) for m in modes if m.startswith(prefix)), 0)

    def receive() -> dict[str, object]:
        return json.loads(sys.stdin.readline())

    schema: dict[str, object] = {"type": "object"}
    schema["properties"] = properties[0] if properties else {"texto": {}}
    for mode in modes:
        if mode.startswith("requerido:"):
            schema["required"] = json.loads(mode.split(":", 1)[1])
    if "abierta" in modes:
        schema = {"type": "object", "additionalProperties": {"type": "string"}}
    description = "Envía un texto." + "." * sized("lista-larga:")
    tool = {"name": "enviar", "description": description, "inputSchema": schema}
    record("arranque", pid=os.getpid())
    asked = 1000
    for line in sys.stdin:
        request = json.loads(line)
        method, ident = request.get("method"), request.get("id")
        if ident is None:
            continue  # a notification
        params = request.get("params") or {}
        answer: dict[str, object] = {"jsonrpc": "2.0", "id": ident}
        if method == "initialize" and "init-error" in modes:
            answer["error"] = {"code": -32602, "message": "versión no soportada"}
        elif method == "initialize":
            answer["result"] = {
                "protocolVersion": "1999-01-01"
                if "version-rara" in modes
                else params.get("protocolVersion"),
                "capabilities": {"tools": {"listChanged": True}, "logging": {}},
                "serverInfo": {"name": "ataque", "version": "1"},
            }
        elif method == "tools/list":
            answer["result"] = {"tools": [tool]}
            if "otra" in modes:
                answer["result"] = {"tools": [tool, {**tool, "name": "otra"}]}
            if "bucle" in modes:
                answer["result"] = {"tools": [tool], "nextCursor": "otra"}
        elif method == "tools/call":
            texto = (params.get("arguments") or {}).get("texto")
            record("enviar", texto=texto)
            if "pregunta" in modes:
                for ask in ("sampling/createMessage", "roots/list", "elicitation/create", "ping"):
                    said = {"level": "info", "data": f"voy a preguntar {ask}"}
                    send({"jsonrpc": "2.0", "method": "notifications/message", "params": said})
                    send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                    asked += 1
                    send({"jsonrpc": "2.0", "id": asked, "method": ask, "params": {
                        "messages": [], "maxTokens": 5, "message": "¿Seguro?",
                        "requestedSchema": {"type": "object", "properties": {}},
                    }})  # fmt: skip
                    reply = receive()
                    record("respuesta", a=ask, error="error" in reply, id=reply.get("id"))
            if "bytes" in modes:
                out.write(b"\xff\xfe no es UTF-8\n")
                out.flush()
            if "grita" in modes:
                for _ in range(8):
                    sys.stderr.write("x" * (1024 * 1024) + "\n")
                sys.stderr.flush()
            if "cierra" in modes:
                os.close(1)
                sys.stdin.read()  # alive until asked to stop
                return
            if "surrogado" in modes:
                texto = "\ud800"  # JSON lets it be written; it is not text
            if sized("sin-fin:"):  # the answer's start, never its end
                head = json.dumps({"jsonrpc": "2.0", "id": ident})[:-1]
                out.write(f'{head}, "result": {{"content": [{{"type": "text", "text": "'.encode())
                out.write(b"x" * sized("sin-fin:"))
                out.flush()
                sys.stdin.read()  # alive, and silent, until asked to stop
                return
            if "profundo" in modes:  # written by hand: json.dumps cannot nest this deep
                deep = '{"a":' * 100_000 + "1" + "}" * 100_000
                result = f'{{"content":[],"structuredContent":{deep}}}'
                out.write(f'{{"jsonrpc":"2.0","id":{ident},"result":{result}}}\n'.encode())
                out.flush()
                continue
            if codes:
                answer["error"] = {"code": codes[0], "message": "la base de datos no responde"}
            elif "nan" in modes:  # Python's json writes them, as JavaScript would
                nan = {"importe": float("nan"), "saldo": float("inf"), "moneda": "EUR"}
                answer["result"] = {"content": [], "structuredContent": nan}
            else:
                texto = "x" * sized("largo:") if sized("largo:") else f"enviado: {texto}"
                answer["result"] = {"content": [{"type": "text", "text": texto}]}
            if "id-ajeno" in modes:
                answer["id"] = 424242
        else:
            answer["result"] = {}
        send(answer)


if __name__ == "__main__":
    main(sys.argv[1:])
