"""A real A2A server process on 127.0.0.1 for each test that asks for one (notebook 19's,
`arranca`, and the attacking one of tests/a2a/ataque_servidor.py, `serve`), and notebook 19's
child (`notebooks/propiedades/_hijo_19.py`), importable as `hijo`."""

from __future__ import annotations

import asyncio
import inspect
import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.bounds import HANG

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


ATTACKER = Path(__file__).with_name("ataque_servidor.py")


class Server:
    """The attacking server as a real process: its URL, what it received; killed at the end."""

    def __init__(self, mode: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(ATTACKER), mode], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().split()[-1]
        self.puerto = int(self.url.rsplit(":", 1)[1])

    def get(self, path: str) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}{path}", timeout=HANG) as answer:
            return dict(json.load(answer))

    def counted(self) -> dict[str, Any]:
        return self.get("/contador")

    def sent(self) -> int:
        return len(self.counted()["ids"])

    def mensajes(self) -> list[str]:
        """The `messageId` of every message it received, in order."""
        return list(self.counted()["ids"])

    def requests(self, method: str) -> int:
        return int(self.counted()["peticiones"].get(method, 0))

    def estado_de(self, task_id: str) -> str:
        """The state of task `task_id` now, asked over the protocol (GetTask)."""
        body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
        request = urllib.request.Request(
            f"{self.url}/a2a",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "A2A-Version": "1.0"},
        )
        with urllib.request.urlopen(request, timeout=HANG) as answer:
            return str(json.load(answer)["result"]["status"]["state"])

    def suelta(self) -> None:
        """Lets a `retenida` task end: the next GetTask finds it completed."""
        self.get("/suelta")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        assert self.process.stdout is not None
        self.process.stdout.close()

    para = stop


@pytest.fixture
def serve():
    """Starts attacking servers (`serve(mode)`); all stop at the end."""
    started: list[Server] = []

    def start(mode: str) -> Server:
        started.append(Server(mode))
        return started[-1]

    yield start
    for server in started:
        server.stop()


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Runs the `async def` tests of this folder, each in its own event loop."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(pyfuncitem.obj(**arguments))
    return True
