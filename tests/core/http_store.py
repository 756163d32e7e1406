"""A store server (`python -m synaptum_lite.stores.http_server`) as a real process on
127.0.0.1, for the tests that reach a journal through `HttpCheckpointer`.

The server picks a free port and prints one line when it listens; `StoreServer` waits on that
line (not on a clock) and reads the URL from it. Its log (uvicorn's, on stderr) goes to a file
the tests can read.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from synaptum_lite import Checkpointer
from synaptum_lite.stores.http_client import HttpCheckpointer
from synaptum_lite.stores.http_server import ENV_TOKEN

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "tok-3f9a1c77e2b84d05-secreto"  # distinctive: a test looks for it in every log line
BOUND = 120  # seconds: only ends a hang


async def until_free(store: Checkpointer, run_id: str) -> None:
    """Wait until the server says nobody holds `run_id` (it saw the holder's connection end)."""
    deadline = time.monotonic() + BOUND
    while await store.is_held(run_id):
        assert time.monotonic() < deadline, f"run {run_id!r} still held after {BOUND} s"
        await asyncio.sleep(0.05)


#: Every server started and not yet stopped. tests/conftest.py stops each when the test that
#: started it ends (one a module's fixture started, with the session at the latest): a server
#: started through another module's helper (`test_kill.store_in`, imported by the budget,
#: migration and race tests) outlived its test before, and the suite.
RUNNING: list[StoreServer] = []


def stop_all(keep: list[StoreServer] | tuple[()] = ()) -> None:
    """Stop every running server but those in `keep`."""
    for server in [s for s in RUNNING if s not in keep]:
        server.stop()


class StoreServer:
    """A store server over the SQLite file `db` (or `memory=True`, or `postgres="URL#schema"`),
    started at once."""

    def __init__(
        self,
        db: Path | None,
        *,
        log: Path,
        memory: bool = False,
        postgres: str = "",
        token: str = TOKEN,
        port: int = 0,
    ) -> None:
        self.db, self.log, self.memory, self.token = db, log, memory, token
        self.postgres = postgres
        self.process = self._start(port)

    def _start(self, port: int) -> subprocess.Popen[str]:
        if self not in RUNNING:
            RUNNING.append(self)  # stopped at the end of the test that started it, at the latest
        store = ["--memory"] if self.memory else ["--db", str(self.db)]
        if self.postgres:
            url, _, schema = self.postgres.partition("#")
            store = ["--postgres", url, "--schema", schema]
        command = [sys.executable, "-m", "synaptum_lite.stores.http_server", *store]
        with self.log.open("a") as log:
            process = subprocess.Popen(
                [*command, "--port", str(port)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env={**os.environ, ENV_TOKEN: self.token},
            )
        assert process.stdout is not None
        line = process.stdout.readline()  # the server prints it once it listens
        assert line.startswith("listening on http://127.0.0.1:"), (line, self.log.read_text())
        self.url = line.split()[2]
        self.port = int(self.url.rsplit(":", 1)[1])
        return process

    def client(self, token: str | None = None) -> HttpCheckpointer:
        return HttpCheckpointer(self.url, token=token or self.token)

    def kill(self) -> None:
        """SIGKILL the server and wait for it to be gone."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(BOUND)

    def restart(self) -> None:
        """Start it again over the same file, on the same port."""
        self.process = self._start(self.port)

    def stop(self) -> None:
        if self in RUNNING:
            RUNNING.remove(self)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(BOUND)
        assert self.process.stdout is not None
        self.process.stdout.close()


class AnswerLosingProxy:
    """A TCP proxy on 127.0.0.1 in front of a server that loses one answer: the first request
    whose first line starts with `lose` is forwarded, and when the server's answer comes back
    the client's connection is closed instead (the call was done; its answer never arrived).
    Everything else passes through. `requests` lists every request line it forwarded."""

    def __init__(self, upstream_port: int, lose: bytes) -> None:
        import threading

        self.upstream_port, self.lose = upstream_port, lose
        self.requests: list[bytes] = []
        self.lost = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._threads = threading
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            losing = self._threads.Event()
            self._threads.Thread(
                target=self._up, args=(client, upstream, losing), daemon=True
            ).start()
            self._threads.Thread(
                target=self._down, args=(upstream, client, losing), daemon=True
            ).start()

    def _up(self, client: socket.socket, upstream: socket.socket, losing: object) -> None:
        with contextlib.suppress(OSError):
            while data := client.recv(65536):
                if data.startswith(b"POST "):
                    self.requests.append(data.split(b"\r\n", 1)[0])
                    if data.startswith(self.lose) and not self.lost:
                        self.lost = 1
                        losing.set()  # type: ignore[attr-defined]
                upstream.sendall(data)
        upstream.close()

    def _down(self, upstream: socket.socket, client: socket.socket, losing: object) -> None:
        with contextlib.suppress(OSError):
            while data := upstream.recv(65536):
                if losing.is_set():  # type: ignore[attr-defined]
                    break  # the answer, done and never delivered
                client.sendall(data)
        client.shutdown(socket.SHUT_RDWR)
        client.close()
        upstream.close()

    def close(self) -> None:
        self._listener.close()
