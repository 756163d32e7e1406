"""Clauses of the reference's docstrings that their paragraphs' other tests left unproved, each
proved here against the real thing: the HTTP gateway against a local server, an MCP server
as a real child process, a run held by a real second process, a real PostgreSQL backend cut."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from synaptum_lite import (
    Message,
    ModelRequest,
    ProviderError,
    Role,
    SqliteCheckpointer,
    load_events,
)
from synaptum_lite.stores.transfer import export_run

from .busy_child import held_elsewhere
from .conftest import run

BOUND = 120  # seconds: only ends a hang


def request(model: str) -> ModelRequest:
    return ModelRequest(model, (Message(Role.USER, "¿Saldo de ES91?"),))


# ── OpenAICompatibleGateway: `model` is used only when a request carries none ────────────────


@pytest.fixture
def fault_server() -> Iterator[Any]:
    pytest.importorskip("httpx", reason="the HTTP gateway needs the `http` extra")
    from tests.http.fault_server import Exchange, FaultServer

    async def answer(ex: Exchange) -> None:
        message = {"role": "assistant", "content": "Hola."}
        body = {
            "id": "c",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
        await ex.send_json(200, body)

    server = FaultServer({"answer": answer}).start()
    yield server
    server.stop()


def test_the_gateway_model_is_sent_only_for_a_request_that_names_none(fault_server) -> None:
    from synaptum_lite.gateways.http import OpenAICompatibleGateway

    gateway = OpenAICompatibleGateway(fault_server.url("answer"), model="modelo-del-gateway")

    asyncio.run(gateway.complete(request("modelo-de-la-peticion")))
    assert fault_server.last("answer").body["model"] == "modelo-de-la-peticion"

    asyncio.run(gateway.complete(request("")))  # a request that carries no model
    assert fault_server.last("answer").body["model"] == "modelo-del-gateway"


# ── OpenAICompatibleGateway: connecting has its own short bound ─────────────────────────────


def test_a_connect_that_cannot_complete_ends_by_the_connect_bound_not_the_read_timeout() -> None:
    pytest.importorskip("httpx", reason="the HTTP gateway needs the `http` extra")
    from synaptum_lite.gateways.http import OpenAICompatibleGateway

    # A listener whose accept queue is full: the kernel drops further SYNs, so a connect to it
    # never completes (nothing refuses it either).
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port), timeout=BOUND)  # fills the queue
    try:
        # The read timeout and the deadline are far longer than any connect bound: the call
        # can only end early by a bound of its own for connecting.
        gateway = OpenAICompatibleGateway(
            f"http://127.0.0.1:{port}/v1", timeout=3600.0, deadline=BOUND
        )
        with pytest.raises(ProviderError) as caught:
            asyncio.run(gateway.complete(request("modelo-x")))
    finally:
        filler.close()
        listener.close()
    message = str(caught.value)
    assert "timed out (ConnectTimeout" in message, message  # not the deadline, not a read
    assert caught.value.retryable


# ── mcp.connect: `env` adds variables to the few the SDK passes on ───────────────────────────

ENV_SERVER = """\
import json, os, sys
from mcp.server.mcpserver import MCPServer

with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump(dict(os.environ), out)
app = MCPServer("entorno")


@app.tool(structured_output=False)
def nada() -> str:
    \"\"\"Nothing.\"\"\"
    return "nada"


app.run("stdio")
"""


def test_mcp_env_adds_variables_to_the_few_the_sdk_passes_on(tmp_path, monkeypatch) -> None:
    pytest.importorskip("mcp", reason="MCP needs the `mcp` extra")
    from synaptum_lite.integrations.mcp import connect

    script, seen = tmp_path / "server.py", tmp_path / "environ.json"
    script.write_text(ENV_SERVER, encoding="utf-8")
    monkeypatch.setenv("SYNAPTUM_PRIVATE_OF_THE_TEST", "not passed on")

    async def start() -> list[str]:
        with open(tmp_path / "stderr.log", "w", encoding="utf-8") as log:
            async with connect(
                sys.executable,
                str(script),
                str(seen),
                prefix="e",
                env={"SYNAPTUM_ADDED": "añadida"},
                errlog=log,
            ) as connected:
                return [t.spec.name for t in connected.tools]

    assert asyncio.run(start()) == ["e__nada"]
    environ = json.loads(seen.read_text(encoding="utf-8"))
    assert environ["SYNAPTUM_ADDED"] == "añadida"  # added
    assert "PATH" in environ  # the SDK's few are still passed on
    assert "SYNAPTUM_PRIVATE_OF_THE_TEST" not in environ  # the rest of ours is not


# ── export_run: a run being driven meanwhile is read as it stands ────────────────────────────


def test_export_of_a_run_another_process_drives_reads_it_as_it_stands(tmp_path) -> None:
    store, release = tmp_path / "journal.db", tmp_path / "release"
    with held_elsewhere(str(store), "r", release) as owner:
        on_disk = run(load_events(SqliteCheckpointer(store), "r"))
        lines = run(export_run(SqliteCheckpointer(store), "r"))  # not refused: no RunBusy
        assert owner.poll() is None and not release.exists()  # still held, nothing written

    exported = [json.loads(line) for line in lines[1:]]  # after the run's description
    assert [(e["step_id"], e["phase"]) for e in exported] == [
        (e.step_id, e.phase.value) for e in on_disk
    ]
    whole = run(load_events(SqliteCheckpointer(store), "r"))
    assert len(whole) > len(on_disk)  # a prefix of what it became
    assert [(e.step_id, e.phase) for e in whole[: len(on_disk)]] == [
        (e.step_id, e.phase) for e in on_disk
    ]


# ── PostgresCheckpointer: the same checkpointer reconnects on its next call ─────────────────


def test_the_same_postgres_checkpointer_reconnects_on_its_next_call(tmp_path) -> None:
    from synaptum_lite.stores.postgres import PostgresCheckpointer
    from tests.postgres.store import import_psycopg, require_server, schema_for, with_parameter

    psycopg = import_psycopg()
    url = require_server()
    name = f"clausula-{uuid.uuid4().hex[:8]}"
    store = PostgresCheckpointer(
        with_parameter(url, "application_name", name), schema=schema_for(tmp_path)
    )

    def backends() -> list[int]:
        with psycopg.connect(url, autocommit=True) as admin:
            rows = admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (name,)
            ).fetchall()
        return [pid for (pid,) in rows]

    async def scenario() -> tuple[list[int], list[int], list[str] | None, list[str] | None]:
        await store.start("r", {"agent": "clausula"})  # connected: its shared connection
        before = backends()
        with psycopg.connect(url, autocommit=True) as admin:
            for pid in before:  # each ended, and waited for (up to a bound that ends a hang)
                (ended,) = admin.execute(
                    "SELECT pg_terminate_backend(%s, %s)", (pid, BOUND * 1000)
                ).fetchone()
                assert ended, pid
        # No run is held: the call that meets the loss is tried once more on a new connection
        # (a held run's call raises StoreUnavailable instead: tests/postgres/test_postgres.py),
        # and the same object goes on reaching the server.
        first = await store.run_ids()
        second = await store.run_ids()
        return before, backends(), first, second

    before, after, first, second = run(scenario())
    assert before and after and not set(after) & set(before)  # its connections: new ones
    assert first == ["r"] and second == ["r"]  # the same checkpointer, on its next call
