"""An A2A 1.0 server built with the reference SDK (a2a-sdk), so that our A2A client
(synaptum_lite.integrations.a2a) is checked against an implementation of the protocol that is
not ours.

    python -m tests.a2a.sdk_server PORT SECONDS

Serves its card and the JSON-RPC binding on 127.0.0.1:PORT (0: a free port, bound before the
card names it) with the SDK's own request handler and in-memory task store. Each message it
receives is printed on stdout (`received <messageId>`) before its task starts; the task works
SECONDS, then completes with one text artifact. With SECONDS `held`, every task works until
`GET /release` (outside the protocol), so a test waits on that event, not on a duration.
The first line, `listening on http://127.0.0.1:PORT`, says it is ready.
"""

from __future__ import annotations

import asyncio
import socket
import sys

import uvicorn
from a2a.helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

ANSWER = "Recomiendo el TP1947, según un servidor del SDK de referencia."


class FlightSearch(AgentExecutor):
    """Works a while on each message, then answers with one artifact."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds  # None: until released
        self.released = asyncio.Event()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        print(f"received {context.message.message_id}", flush=True)
        task = context.current_task or new_task_from_user_message(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        if self.seconds is None:
            await self.released.wait()
        else:
            await asyncio.sleep(self.seconds)
        await updater.add_artifact([Part(text=ANSWER)])
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError("this test server does not cancel")


def main(port: int, seconds: float | None) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    card = AgentCard(
        name="Buscador de referencia",
        description="Busca vuelos (servido con a2a-sdk).",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{port}/a2a",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="buscar-vuelos",
                name="Buscar vuelos",
                description="Busca vuelos.",
                tags=["viajes"],
            )
        ],
    )
    executor = FlightSearch(seconds)

    async def release(request: Request) -> JSONResponse:
        executor.released.set()
        return JSONResponse({"released": True})

    handler = DefaultRequestHandlerV2(executor, InMemoryTaskStore(), card)
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/a2a")]
    app = Starlette(routes=[*routes, Route("/release", release)])
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)

    async def serve() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            await asyncio.sleep(0.01)
        print(f"listening on http://127.0.0.1:{port}", flush=True)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    main(int(sys.argv[1]), None if sys.argv[2] == "held" else float(sys.argv[2]))
