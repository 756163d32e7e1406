"""Record the HTTP adapter's exchanges with the local model server, for the tests to replay.

    uv run --extra http python -m scripts.grabaciones [--url URL] [--into FOLDER]

Each scene (`ESCENAS`) makes a few small calls through a `RecordingGateway`: a plain answer,
a streamed answer, a streamed tool call, a whole agent run with a tool, and three errors the
server gives for real (400 for a tool schema its chat template cannot render, streamed or not,
and 404 for a path it does not serve). It writes `<scene>.jsonl` and, in `resultados.json`,
what the adapter made of each live: the tests replay each file through a `ReplayGateway` and
must get the same (`tests/http/test_grabaciones.py`), and `tests/real/test_grabar.py` records
afresh and replays. The server is the one `scripts/modelo_local.py` starts (temperature 0, its
own cap of 256 tokens per answer); the prompts ask for a few words.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

from synaptum_lite import (
    Agent,
    FinalStep,
    MemoryCheckpointer,
    Message,
    ModelRequest,
    ModelStep,
    ProviderError,
    Role,
    Session,
    ToolSpec,
    load_events,
    tool,
)
from synaptum_lite.gateways.http import OpenAICompatibleGateway
from synaptum_lite.gateways.recording import RecordingGateway
from synaptum_lite.gateways.replay import ReplayGateway

REPO = Path(__file__).resolve().parent.parent
FOLDER = REPO / "tests" / "http" / "grabaciones"
RESULTS = "resultados.json"
MODEL = "qwen2.5-coder-0.5b-instruct"
DEFAULT_URL = "http://127.0.0.1:8080/v1"

#: What a stale recording tells its reader to do.
RECORD_AGAIN = (
    "record the files again with `python3 scripts/modelo_local.py start` and then "
    "`uv run --extra http python -m scripts.grabaciones`"
)

#: A read may wait this long: the server has one slot and is shared (a bound on a hang only).
HANG = 600.0

INSTRUCTIONS = "Consultas saldos con la herramienta. Responde en español, en una frase."
SALDO = "¿Cuánto hay en ES91 2100 0418 45?"
TOOL_RUNS: list[Any] = []


@tool
async def consultar_saldo(cuenta: Annotated[str, "IBAN de la cuenta"]) -> str:
    """Consulta el saldo de una cuenta."""
    TOOL_RUNS.append({"cuenta": cuenta})
    return f"{cuenta}: 4.200,00 €"


def pedir(task: str, *tools: ToolSpec, instructions: str = INSTRUCTIONS) -> ModelRequest:
    messages = (Message(Role.SYSTEM, instructions), Message(Role.USER, task))
    return ModelRequest(MODEL, messages, tools)


TEXTO = pedir("Nombra tres colores, separados por comas.", instructions="Responde muy breve.")
HERRAMIENTA = pedir(SALDO, consultar_saldo.spec)
#: A tool whose schema has no `properties`: the server's chat template cannot render it (400).
SIN_PROPIEDADES = pedir("Hola.", ToolSpec("sin_propiedades", "No hace nada.", {}))

#: Makes the gateway for a scene: a `RecordingGateway` or a `ReplayGateway` on its file.
Gateways = Callable[..., OpenAICompatibleGateway]


async def complete(gateways: Gateways, request: ModelRequest, **options: Any) -> dict[str, Any]:
    gateway = gateways(**options)
    try:
        return {"response": (await gateway.complete(request)).to_json()}
    except ProviderError as exc:
        return {"error": error_of(exc, gateway)}


async def stream(gateways: Gateways, request: ModelRequest) -> dict[str, Any]:
    gateway, pieces = gateways(), []
    try:
        async for piece in gateway.stream(request):
            pieces.append(piece)
    except ProviderError as exc:
        return {"error": error_of(exc, gateway)}
    *fragments, answer = pieces
    return {"fragments": fragments, "response": answer.to_json()}


async def agent_run(gateways: Gateways) -> dict[str, Any]:
    """The seed's run, whole: the tool call, the tool, the final answer."""
    agent = Agent(
        "cajero", model=MODEL, instructions=INSTRUCTIONS, tools=[consultar_saldo], max_steps=6
    )
    store = MemoryCheckpointer()
    TOOL_RUNS.clear()
    steps = []
    session = Session("grabacion", gateways(tools=[consultar_saldo]), store)
    async for step in agent.run(SALDO, session=session):
        steps.append(step)
    final = steps[-1]
    assert isinstance(final, FinalStep)
    events = await load_events(store, "grabacion")
    responses = [e.response.to_json() for e in events if isinstance(e, ModelStep) and e.response]
    return {"responses": responses, "tool_runs": list(TOOL_RUNS), "output": final.text}


def error_of(exc: ProviderError, gateway: OpenAICompatibleGateway) -> dict[str, Any]:
    """How the adapter classified a failure; its message with the server's address as
    `{base_url}`, so a live call and its replay (at `http://replay.invalid`) compare."""
    return {
        "status": exc.status,
        "retryable": exc.retryable,
        "retry_after": exc.retry_after,
        "message": str(exc).replace(gateway.base_url, "{base_url}"),
    }


#: Each scene: what it calls, given the gateways to call it through.
ESCENAS: dict[str, Callable[[Gateways], Awaitable[dict[str, Any]]]] = {
    "texto": lambda g: complete(g, TEXTO),
    "stream": lambda g: stream(g, TEXTO),
    "stream_herramienta": lambda g: stream(g, HERRAMIENTA),
    "agente": agent_run,
    "error_400": lambda g: complete(g, SIN_PROPIEDADES),
    "error_400_stream": lambda g: stream(g, SIN_PROPIEDADES),
    "error_404": lambda g: complete(g, TEXTO, path="/no-existe"),
}


def record(scene: str, base_url: str, folder: Path) -> dict[str, Any]:
    """Run `scene` against the server at `base_url`, recording to `folder/<scene>.jsonl`;
    what the adapter made of it, live."""

    def gateways(path: str = "", **options: Any) -> OpenAICompatibleGateway:
        file = folder / f"{scene}.jsonl"
        return RecordingGateway(base_url + path, file, timeout=HANG, **options)

    return asyncio.run(ESCENAS[scene](gateways))


def replay(scene: str, folder: Path = FOLDER) -> dict[str, Any]:
    """Run `scene` on its recording in `folder`, with no server; what the adapter made of it.
    Raises `AssertionError` when a recorded exchange was not played."""
    made: list[ReplayGateway] = []

    def gateways(path: str = "", **options: Any) -> OpenAICompatibleGateway:
        file = folder / f"{scene}.jsonl"
        made.append(ReplayGateway(file, record_again=RECORD_AGAIN, **options))
        return made[-1]

    outcome = asyncio.run(ESCENAS[scene](gateways))
    assert all(not g.replay.unplayed for g in made), f"{scene}: exchanges left unplayed"
    return outcome


def write_results(results: dict[str, Any], folder: Path) -> None:
    text = json.dumps(results, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    (folder / RESULTS).write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    url = os.environ.get("SYNAPTUM_LOCAL_MODEL_URL") or DEFAULT_URL
    parser.add_argument("--url", default=url, help=f"the server's API root (default {url})")
    parser.add_argument("--into", type=Path, default=FOLDER, help="where the files go")
    options = parser.parse_args(argv)
    options.into.mkdir(parents=True, exist_ok=True)
    results = {}
    for scene in ESCENAS:
        results[scene] = record(scene, options.url.rstrip("/"), options.into)
        size = (options.into / f"{scene}.jsonl").stat().st_size
        print(f"{scene}: {size:,} bytes", file=sys.stderr)
    write_results(results, options.into)
    return 0


if __name__ == "__main__":
    sys.exit(main())
