"""A store server (`python -m synaptum_lite.stores.http_server`) as a real process on
127.0.0.1, for the tests that reach a journal through `HttpCheckpointer`.

The server picks a free port and prints one line when it listens; `StoreServer` waits on that
line (not on a clock) and reads the URL from it. Its log (uvicorn's, on stderr) goes to a file
the tests can read.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from synaptum_lite.stores.http_client import HttpCheckpointer
from synaptum_lite.stores.http_server import ENV_TOKEN

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "tok-3f9a1c77e2b84d05-secreto"  # distinctive: a test looks for it in every log line
BOUND = 120  # seconds: only ends a hang


class StoreServer:
    """A store server over the SQLite file `db` (or `memory=True`), started at once."""

    def __init__(
        self, db: Path | None, *, log: Path, memory: bool = False, token: str = TOKEN, port: int = 0
    ) -> None:
        self.db, self.log, self.memory, self.token = db, log, memory, token
        self.process = self._start(port)

    def _start(self, port: int) -> subprocess.Popen[str]:
        store = ["--memory"] if self.memory else ["--db", str(self.db)]
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
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(BOUND)
        assert self.process.stdout is not None
        self.process.stdout.close()
