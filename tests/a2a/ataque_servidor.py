"""An attacking A2A server (protocol 1.0, JSON-RPC), standard library only, for the attacks
notebook 19's server (`_servidor_19.py`) does not make.

    python ataque_servidor.py MODE

It prints `escuchando en http://127.0.0.1:PORT` and serves its card and `/a2a` until killed.
Each `SendMessage` creates a task in its context (`TASK_STATE_WORKING`); the first `GetTask`
of it finds it ended, in the way MODE says. `GET /contador` (outside the protocol) says which
messages it received, how many requests of each method it served, and how many of those
carried an `Authorization` header; `GET /suelta` lets a `retenida` task end.

Modes:
- `estado:STATE` — the task ends in STATE (any text: `TASK_STATE_CANCELED`, `RARO`...), with a
  message from the agent, «Motivo del agente.»;
- `estado-objeto` — its state is a JSON object, not a string;
- `mensaje-texto` — it completes with a status message that is a string, not a message;
- `artefacto-texto` — it completes with an artifact that is a string, not an artifact;
- `partes-numero` — it completes with an artifact whose parts are a number;
- `surrogado` — it completes with a text holding a lone surrogate (`\\ud800` in its JSON);
- `id-surrogado` — the task's id holds a lone surrogate;
- `sse` — GetTask answers a stream of server-sent events (text/event-stream), not JSON;
- `error-enorme` — GetTask answers a JSON-RPC error whose message is 1 MB long;
- `resultado-enorme` — SendMessage answers a result with neither task nor message, 1 MB long;
- `paginas` — the first SendMessage creates its task and answers 503; ListTasks ignores the
  context asked for and answers one task a page, three tasks of other contexts first;
- `habilidades-numero` — its card's skills are a number, not a list;
- `paginas-cuelga` — like `paginas`, but the first SendMessage is never answered at all;
- `paginas-repetida` — like `paginas`, but the last task (the client's) is on two pages;
- `paginas-objeto` — like `paginas`, but its page token is a JSON object;
- `credenciales` — every JSON-RPC request without an Authorization header answers 401;
- `paginas-bucle` — like `paginas`, but every page points to the same next page;
- `contexto-propio` — it keeps a context of its own for each task instead of the client's, as
  A2A allows, and keeps each task's history (the message that created it); ListTasks filters
  by that context and honours `historyLength`, and lists two tasks of another client. The
  first SendMessage is received, its task created, and never answered;
- `contexto-propio-sin-historia` — like `contexto-propio`, but ListTasks shows no history;
- `eco-autorizacion` — every JSON-RPC request is answered with an error quoting its
  `Authorization` header (as a careless server's debug message does);
- `eco-en-respuesta` — the task completes with an answer quoting its `Authorization` header;
- `retenida` — the task works (`TASK_STATE_WORKING`) until `GET /suelta`, then completes.
"""

from __future__ import annotations

import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "Recomiendo el TP1947."
REASON = "Motivo del agente."


def card(base: str) -> dict[str, Any]:
    return {
        "name": "Buscador de vuelos",
        "description": "Busca vuelos y recomienda uno.",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": f"{base}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [
            {"id": "buscar-vuelos", "name": "Buscar vuelos", "description": "-", "tags": []}
        ],
    }


class State:
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.lock = threading.Lock()
        self.requests: dict[str, int] = {}
        self.authorized = 0  # requests to /a2a that carried an Authorization header
        self.messages: list[str] = []
        self.tasks: dict[str, dict[str, Any]] = {}
        self.released = False  # `retenida`: GET /suelta was asked
        self.echoes: dict[str, str | None] = {}  # `eco-en-respuesta`: each task's Authorization
        if mode.startswith("contexto-propio"):
            for n in range(2):  # another client's tasks, each with the message that created it
                said = {"messageId": f"ajeno-{n}", "role": "ROLE_USER", "parts": [{"text": "?"}]}
                self.tasks[f"ajena-{n}"] = {
                    "id": f"ajena-{n}",
                    "contextId": f"otro-contexto-{n}",
                    "status": {"state": "TASK_STATE_COMPLETED"},
                    "history": [said],
                }
        if mode.startswith("paginas"):
            for n in range(3):
                self.tasks[f"ajena-{n}"] = {
                    "id": f"ajena-{n}",
                    "contextId": f"otro-contexto-{n}",
                    "status": {"state": "TASK_STATE_COMPLETED"},
                }

    def ended(self, task: dict[str, Any]) -> dict[str, Any]:
        """The task as the first GetTask finds it: ended, in the way the mode says."""
        mode = self.mode
        said = {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": REASON}]}
        done: dict[str, Any] = {"state": "TASK_STATE_COMPLETED"}
        artifacts: Any = [{"artifactId": "a", "parts": [{"text": ANSWER}]}]
        if mode.startswith("estado:"):
            done = {"state": mode.split(":", 1)[1], "message": said}
        elif mode == "estado-objeto":
            done = {"state": {"nombre": "TASK_STATE_COMPLETED"}}
        elif mode == "mensaje-texto":
            done, artifacts = {"state": "TASK_STATE_COMPLETED", "message": REASON}, []
        elif mode == "artefacto-texto":
            artifacts = [ANSWER]
        elif mode == "surrogado":
            artifacts = [{"artifactId": "a", "parts": [{"text": "TP\ud800"}]}]
        elif mode == "partes-numero":
            artifacts = [{"artifactId": "a", "parts": 5}]
        elif mode == "eco-en-respuesta":
            echoed = f"{ANSWER} (me llegó Authorization: {self.echoes.get(task['id'])})"
            artifacts = [{"artifactId": "a", "parts": [{"text": echoed}]}]
        elif mode == "retenida" and not self.released:
            return task
        return {**task, "status": done, "artifacts": artifacts}


class Handler(BaseHTTPRequestHandler):
    state: State

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def answer(self, code: int, body: Any) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:  # noqa: N802
        base = f"http://127.0.0.1:{self.server.server_address[1]}"
        if self.path == "/.well-known/agent-card.json":
            shown = card(base)
            if self.state.mode == "habilidades-numero":
                shown["skills"] = 5
            self.answer(200, shown)
        elif self.path == "/suelta":
            with self.state.lock:
                self.state.released = True
            self.answer(200, {"suelta": True})
        elif self.path == "/contador":
            with self.state.lock:
                counted = {"ids": self.state.messages, "peticiones": self.state.requests}
                self.answer(200, {**counted, "con_credenciales": self.state.authorized})
        else:
            self.answer(404, {"error": self.path})

    def do_POST(self) -> None:  # noqa: N802
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        ident, method, params = request["id"], request["method"], request.get("params") or {}
        state, hang, refused = self.state, False, None
        if state.mode == "credenciales" and "Authorization" not in self.headers:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Bearer realm="a2a"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if state.mode == "eco-autorizacion" and method != "SendMessage":
            quoted = f"rechazada: Authorization: {self.headers.get('Authorization')}"
            error = {"code": -32603, "message": quoted}
            self.answer(200, {"jsonrpc": "2.0", "id": ident, "error": error})
            return
        with state.lock:
            state.authorized += "Authorization" in self.headers
            state.requests[method] = times = state.requests.get(method, 0) + 1
            result: Any = None
            if method == "SendMessage":
                message = params["message"]
                state.messages.append(message["messageId"])
                task_id = str(uuid.uuid4())
                if state.mode == "id-surrogado":
                    task_id += "\udc00"
                task = {
                    "id": task_id,
                    "contextId": message.get("contextId"),
                    "status": {"state": "TASK_STATE_WORKING"},
                }
                if state.mode.startswith("contexto-propio"):
                    task["contextId"], task["history"] = f"suyo-{task_id}", [message]
                state.tasks[task_id] = task
                state.echoes[task_id] = self.headers.get("Authorization")
                if state.mode == "resultado-enorme":
                    result = {"recibido": "x" * 1_000_000}
                elif state.mode == "eco-autorizacion":  # received, then refused, quoting it
                    quoted = f"rechazada: Authorization: {self.headers.get('Authorization')}"
                    refused = {"code": -32603, "message": quoted}
                elif times == 1 and state.mode.startswith(("paginas-cuelga", "contexto-propio")):
                    hang = True  # received, the task created: it never answers
                elif state.mode.startswith("paginas") and times == 1:
                    self.answer(503, b"Service Unavailable")  # received, then no answer
                    return
                else:
                    result = {"task": task}
            elif method == "GetTask":
                if state.mode == "sse":  # a stream of events, though none was asked for
                    event = {"jsonrpc": "2.0", "id": ident, "result": {"task": {}}}
                    raw = f"data: {json.dumps(event)}\n\n".encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                    return
                if state.mode == "error-enorme":
                    error = {"code": -32603, "message": "y" * 1_000_000}
                    self.answer(200, {"jsonrpc": "2.0", "id": ident, "error": error})
                    return
                task = state.tasks[params["id"]] = state.ended(state.tasks[params["id"]])
                result = task
            elif method == "ListTasks" and state.mode.startswith("contexto-propio"):
                asked, length = params.get("contextId"), params.get("historyLength")
                shown = [
                    {k: v for k, v in t.items() if k != "history"}
                    if length == 0 or state.mode.endswith("sin-historia")
                    else {**t, "history": t["history"][-length:] if length else t["history"]}
                    for t in state.tasks.values()
                    if not asked or t["contextId"] == asked
                ]
                result = {"tasks": shown, "nextPageToken": "", "pageSize": 50}
                result["totalSize"] = len(shown)
            elif method == "ListTasks":
                every = list(state.tasks.values())  # the context asked for is ignored
                if state.mode == "paginas-repetida":  # its pages shifted: one task, twice
                    every.append(every[-1])
                page = int(params.get("pageToken") or 0)
                following = page + 1 if page + 1 < len(every) else None
                if state.mode == "paginas-bucle":
                    following = 1
                token: Any = "" if following is None else str(following)
                if state.mode == "paginas-objeto" and token:
                    token = {"pagina": token}  # not a token
                result = {
                    "tasks": every[page : page + 1],
                    "nextPageToken": token,
                    "pageSize": 1,
                    "totalSize": len(every),
                }
        if hang:
            threading.Event().wait()  # for ever: the client is killed while it waits
        if refused is not None:
            self.answer(200, {"jsonrpc": "2.0", "id": ident, "error": refused})
        elif result is None:
            error = {"code": -32601, "message": f"no sé {method}"}
            self.answer(200, {"jsonrpc": "2.0", "id": ident, "error": error})
        else:
            self.answer(200, {"jsonrpc": "2.0", "id": ident, "result": result})


def main(argv: list[str]) -> None:
    handler = type("Handler", (Handler,), {"state": State(argv[0])})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    print(f"escuchando en http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
