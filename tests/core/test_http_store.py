"""The HTTP checkpointer's own guarantees, beyond the conformance suite (which it passes too):
the run lock across processes through the server, a client or a server killed with SIGKILL,
an answer lost on the way back, and the bearer token.

Every server is a real process (`tests/core/http_store.py`); every kill is a real SIGKILL of a
real process, counted. Nothing waits on a clock: each step waits for a line a process prints,
or for the server to say the run is free, with bounds that only end a hang.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from synaptum_lite import (
    ConfigurationError,
    JournalError,
    RunBusy,
    SqliteCheckpointer,
    StoreForbidden,
    StoreUnavailable,
    StoreUnreachable,
)
from synaptum_lite.stores.http_client import HttpCheckpointer, StoreProtocolError
from synaptum_lite.stores.http_server import ENV_TOKEN

from .conftest import run
from .http_store import BOUND, ROOT, TOKEN, AnswerLosingProxy, StoreServer, until_free
from .http_store_child import HEADER, model_step

KILLS = 5  # rounds of each kill test


@pytest.fixture
def server(tmp_path: Path):
    started = StoreServer(tmp_path / "runs.db", log=tmp_path / "server.log")
    yield started
    started.stop()


def child(server: StoreServer, *arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.core.http_store_child", server.url, *arguments],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, ENV_TOKEN: server.token},
    )


def rows(db: Path) -> tuple[int, int]:
    """How many runs and events the SQLite file behind the server holds."""
    with sqlite3.connect(db) as connection:
        runs = connection.execute("SELECT count(*) FROM runs").fetchone()[0]
        events = connection.execute("SELECT count(*) FROM events").fetchone()[0]
    return runs, events


# ── one driver per run, across processes ───────────────────────────────────────────────────


@pytest.mark.posix_signals  # it SIGKILLs
def test_a_run_held_by_a_client_killed_with_sigkill_is_busy_until_then_and_free_after(
    server, tmp_path
):
    """Each round: a client in another process holds the run; this process, through the
    server and straight on its SQLite file, is told busy at once; the holder is SIGKILLed;
    the server sees its connection end and lets go, and the run can be held again."""
    kills = 0
    for _ in range(KILLS):
        holder = child(server, "r", "hold")
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"

        async def while_held() -> tuple[bool, str, str]:
            store = server.client()
            with pytest.raises(RunBusy) as through_the_server:
                async with store.hold("r"):
                    pass
            with pytest.raises(RunBusy) as on_the_file:  # the server holds the file's lock
                async with SqliteCheckpointer(tmp_path / "runs.db").hold("r"):
                    pass
            return await store.is_held("r"), str(through_the_server.value), str(on_the_file.value)

        held, busy, busy_on_file = run(while_held())
        assert held and "'r' is being driven by another worker" in busy
        assert "'r' is being driven by another worker" in busy_on_file

        holder.send_signal(signal.SIGKILL)
        assert holder.wait(BOUND) == -signal.SIGKILL
        kills += 1

        async def after() -> bool:
            store = server.client()
            await until_free(store, "r")
            async with store.hold("r"):
                return await store.is_held("r")

        assert run(after())
    assert kills == KILLS


@pytest.mark.posix_signals  # it SIGKILLs
def test_a_driver_whose_hold_was_lost_writes_nothing_after_the_next_one_took_the_run(server):
    """The server is SIGKILLed under a driver holding a run, and restarted: the hold went with
    the connection. Another driver takes the run; the first one's next write, and its
    `confirm_hold`, fail with StoreUnavailable, and nothing of it reaches the journal."""

    async def scenario() -> list[str]:
        first, second = server.client(), server.client()
        await first.start("r", HEADER)
        async with first.hold("r"):
            await first.append("r", [model_step("r", 0)])
            server.kill()
            server.restart()
            async with second.hold("r"):
                await second.append("r", [model_step("r", 1)])
                with pytest.raises(StoreUnavailable) as lost:
                    await first.append("r", [model_step("r", 2)])
                with pytest.raises(StoreUnavailable):
                    await first.confirm_hold("r")
        assert "is no longer held by this driver" in str(lost.value)
        return [f"{r.step_id} {r.phase}" for r in await second.records("r")]

    assert run(scenario()) == ["000000-model attempted", "000000-model completed"]


def test_a_run_held_in_an_event_loop_closed_without_letting_go_is_let_go_by_the_next_hold(
    server,
):
    """A driver's event loop closed while it held a run (`loop.close()`, its generators never
    finished): the hold's connection stayed open. The next hold through the same checkpointer
    ends that connection, and the server, seeing it end, lets go of the run."""
    store = server.client()
    loop = asyncio.new_event_loop()
    held = store.hold("r")
    loop.run_until_complete(held.__aenter__())
    loop.close()  # never let go

    async def take() -> bool:
        try:  # asking ends the abandoned hold's connection; the server may not have seen it yet
            async with store.hold("r"):
                return True
        except RunBusy:
            await until_free(server.client(), "r")
        async with store.hold("r"):
            return await server.client().is_held("r")

    assert run(take())
    del held


def test_close_keeps_a_held_run_held_and_a_later_call_reopens_a_connection(server):
    """`close` ends this event loop's connections that hold nothing; the hold's own stays
    open (the run is still held, and still this driver's), and the next call connects anew."""
    store, other = server.client(), server.client()

    async def scenario() -> list[bool]:
        seen = []
        async with store.hold("r"):
            await store.start("r", HEADER)
            await store.close()
            seen.append(await other.is_held("r"))
            await store.confirm_hold("r")  # still this driver's: nothing raised
            await store.append("r", [model_step("r", 0)])  # a new connection for the call
        seen.append(await other.is_held("r"))
        await store.close()
        seen.append((await store.load("r")).next_seq == 1)  # reopened by the next call
        return seen

    assert run(scenario()) == [True, False, True]


# ── appends: once each, and nothing acknowledged is lost ───────────────────────────────────


@pytest.mark.parametrize("backing", ["sqlite", "memory"])
def test_an_append_whose_answer_was_lost_is_sent_again_and_written_once(tmp_path, backing):
    server = StoreServer(
        tmp_path / "runs.db", log=tmp_path / "server.log", memory=backing == "memory"
    )
    proxy = AnswerLosingProxy(server.port, lose=b"POST /v1/append")
    try:

        async def scenario() -> tuple[int, list[str]]:
            store = HttpCheckpointer(proxy.url, token=server.token)
            await store.start("r", HEADER)
            next_seq = await store.append("r", [model_step("r", 0), model_step("r", 1)])
            records = await server.client().records("r")
            return next_seq, [f"{r.seq} {r.step_id} {r.phase}" for r in records]

        next_seq, records = run(scenario())
    finally:
        proxy.close()
        server.stop()
    assert proxy.lost == 1
    assert proxy.requests.count(b"POST /v1/append HTTP/1.1") == 2  # sent, answer lost, sent again
    assert next_seq == 2
    assert records == ["0 000000-model attempted", "1 000000-model completed"]


@pytest.mark.posix_signals  # it SIGKILLs
def test_a_server_killed_with_sigkill_mid_append_loses_nothing_it_acknowledged(server):
    """Each round: a client appends one event at a time, printing each acknowledged next_seq;
    the server is SIGKILLed while it appends, and restarted over the same file. Every event
    acknowledged before the kill is there, at its position."""
    kills, acknowledged, position = 0, 0, 0
    for _ in range(KILLS):
        writer = child(server, "r", "append", str(position))
        assert writer.stdout is not None
        for _ in range(10):  # ten answers, then the kill, mid-stream of appends
            line = writer.stdout.readline()
            assert line.startswith("acked "), line
            acknowledged = int(line.split()[1])
        server.kill()
        kills += 1
        rest, _ = writer.communicate(timeout=BOUND)
        lines = rest.splitlines()
        assert writer.returncode == 5 and lines[-1].startswith("failed Store"), rest
        acknowledged = max([acknowledged, *(int(x.split()[1]) for x in lines[:-1])])
        server.restart()
        records = run(server.client().records("r"))
        assert len(records) >= acknowledged
        assert [r.seq for r in records] == list(range(len(records)))
        expected = [model_step("r", p) for p in range(len(records))]
        assert [(r.step_id, r.phase) for r in records] == [
            (e.step_id, e.phase.value) for e in expected
        ]
        position = len(records)
    assert kills == KILLS and acknowledged >= 10 * KILLS


# ── the token ──────────────────────────────────────────────────────────────────────────────


def test_a_missing_or_wrong_token_is_refused_and_nothing_is_read_or_written(server, tmp_path):
    db = tmp_path / "runs.db"

    async def fill() -> None:
        store = server.client()
        await store.start("r", HEADER)
        await store.append("r", [model_step("r", 0), model_step("r", 1)])

    run(fill())
    before = rows(db)
    assert before == (1, 2)

    async def refused(store: HttpCheckpointer) -> list[str]:
        async def hold() -> None:
            async with store.hold("r"):
                pass

        calls = {
            "load": lambda: store.load("r"),
            "records": lambda: store.records("r"),
            "run_ids": lambda: store.run_ids(),
            "is_held": lambda: store.is_held("r"),
            "start": lambda: store.start("otro", HEADER),
            "append": lambda: store.append("r", [model_step("r", 2)]),
            "start_with": lambda: store.start_with("nuevo", HEADER, [model_step("nuevo", 0)]),
            "hold": hold,
        }
        said = []
        for name, call in calls.items():
            with pytest.raises(StoreForbidden) as error:
                await call()
            said.append(f"{name}: {error.value}")
        return said

    for wrong in ("otro-token", TOKEN + "x", TOKEN[:-1]):
        said = run(refused(server.client(token=wrong)))
        assert all("HTTP 401: the bearer token is missing or not the server's" in s for s in said)
        assert all(
            "nothing was written: pass the token the server was started with" in s for s in said
        )
        assert all(
            "(its SYNAPTUM_STORE_TOKEN) as HttpCheckpointer(url, token=...)" in s for s in said
        )
    # without the header at all, and answered with nothing of the journal
    for path in ("records", "load", "run_ids", "append", "hold"):
        answer = httpx.post(f"{server.url}/v1/{path}", json={"run_id": "r"}, timeout=BOUND)
        assert answer.status_code == 401
        assert "respuesta" not in answer.text and "000000" not in answer.text
        assert answer.headers["www-authenticate"] == "Bearer"
    assert rows(db) == before
    assert run(server.client().is_held("r")) is False  # no refused hold took the run


def test_the_token_appears_in_no_error_message_repr_or_log_line(server, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # httpx's and httpcore's own lines too

    async def scenario() -> list[str]:
        said = [repr(server.client())]
        good, bad = server.client(), server.client(token=TOKEN[::-1])
        await good.start("r", HEADER)
        await good.append("r", [model_step("r", 0)])
        async with good.hold("r"):
            for call in (lambda: bad.records("r"), lambda: good.append("nadie", [])):
                try:
                    await call()
                except JournalError as exc:
                    said += [str(exc), repr(exc)]
        return said

    said = run(scenario())
    assert len(said) == 5
    server.stop()
    logged = [r.getMessage() for r in caplog.records]
    server_log = (tmp_path / "server.log").read_text()
    assert "POST /v1/append" in server_log and "401" in server_log  # it does log each request
    assert any("/v1/records" in line for line in logged)
    for text in [*said, *logged, server_log]:
        assert TOKEN not in text and TOKEN[::-1] not in text, text


# ── what the client says when it cannot be used ────────────────────────────────────────────


def test_a_server_that_is_not_there_says_so_and_how_to_start_one():
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]  # a port nothing listens on once it is closed
    store = HttpCheckpointer(f"http://127.0.0.1:{port}", token=TOKEN)
    with pytest.raises(StoreUnreachable) as error:
        run(store.load("r"))
    said = str(error.value)
    assert said.startswith(f"the journal store http://127.0.0.1:{port} cannot be reached (")
    assert "start its server with `python -m synaptum_lite.stores.http_server --db" in said


def test_a_server_that_answers_garbage_says_what_it_answered_and_what_to_check(tmp_path):
    other = subprocess.Popen(  # a real HTTP server, but not a store server
        [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert other.stdout is not None
        port = int(other.stdout.readline().split(" port ")[1].split()[0])
        store = HttpCheckpointer(f"http://127.0.0.1:{port}", token=TOKEN)
        with pytest.raises(StoreProtocolError) as error:
            run(store.records("r"))
    finally:
        other.kill()
        other.wait(BOUND)
    said = str(error.value)
    assert said.startswith(
        f"the journal store http://127.0.0.1:{port} answered what no synaptum_lite store "
        "server answers (HTTP 501, text/html"
    )
    assert "started with `python -m synaptum_lite.stores.http_server`" in said
    assert isinstance(error.value, StoreUnavailable)


def test_bad_arguments_are_refused_before_anything_is_sent():
    for url in ("127.0.0.1:8750", "ftp://host", "http://user:clave@127.0.0.1:8750"):
        with pytest.raises(ConfigurationError) as error:
            HttpCheckpointer(url, token=TOKEN)
        assert "clave" not in str(error.value)
    with pytest.raises(ConfigurationError, match="SYNAPTUM_STORE_TOKEN"):
        HttpCheckpointer("http://127.0.0.1:8750", token="")


def test_the_server_refuses_to_start_without_a_token(tmp_path):
    started = subprocess.run(
        [sys.executable, "-m", "synaptum_lite.stores.http_server", "--db", str(tmp_path / "r.db")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BOUND,
        env={k: v for k, v in os.environ.items() if k != ENV_TOKEN},
    )
    assert started.returncode == 2
    assert "set SYNAPTUM_STORE_TOKEN" in started.stderr and started.stdout == ""
    assert not (tmp_path / "r.db").exists()


def test_the_server_serves_a_postgresql_journal_too(tmp_path):
    """`--postgres URL --schema S`: what a client appends is in PostgreSQL's tables, and the
    run is held in PostgreSQL (a PostgresCheckpointer on the same schema is told busy)."""
    from tests.postgres.store import postgres_location

    location = postgres_location(tmp_path)
    server = StoreServer(None, log=tmp_path / "server.log", postgres=location)
    url, _, schema = location.partition("#")

    async def scenario() -> list[str]:
        from synaptum_lite.stores.postgres import PostgresCheckpointer

        store, direct = server.client(), PostgresCheckpointer(url, schema=schema)
        await store.start("r", HEADER)
        async with store.hold("r"):
            await store.append("r", [model_step("r", 0), model_step("r", 1)])
            with pytest.raises(RunBusy):
                async with direct.hold("r"):
                    pass
        records = await direct.records("r")
        await direct.close()
        return [f"{r.seq} {r.step_id} {r.phase}" for r in records]

    try:
        assert run(scenario()) == ["0 000000-model attempted", "1 000000-model completed"]
    finally:
        server.stop()
