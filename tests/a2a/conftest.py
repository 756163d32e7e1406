"""A real A2A server process on 127.0.0.1 for each test that asks for one, and notebook 19's
child (`notebooks/propiedades/_hijo_19.py`), importable as `hijo`."""

from __future__ import annotations

import asyncio
import inspect
import sys
from pathlib import Path

import pytest

PROPIEDADES = Path(__file__).resolve().parents[2] / "notebooks" / "propiedades"
sys.path.insert(0, str(PROPIEDADES))

import _servidor_19 as servidor_a2a  # noqa: E402


@pytest.fixture
def arranca():
    """Starts A2A servers (`arranca(duracion=…, modo=…, puerto=…)`); all stop at the end."""
    started: list[servidor_a2a.Proceso] = []

    def start(**options) -> servidor_a2a.Proceso:
        server = servidor_a2a.Proceso(**options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.para()


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Runs the `async def` tests of this folder, each in its own event loop."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(pyfuncitem.obj(**arguments))
    return True
