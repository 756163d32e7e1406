"""The command line reads and writes UTF-8 whatever the OS gives its pipes.

On Windows a pipe or a file gets the locale's code page (cp1252, say), which cannot hold `→`,
which `show` prints, nor every character a journal may hold. These tests give the child that
code page (`PYTHONIOENCODING=cp1252`, as Windows would) and run the real command in a real
process: `show` answers, and a run exported and imported through pipes comes back as it was.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

from synaptum_lite import Agent, Session, SqliteCheckpointer, load_events, tool
from synaptum_lite.testing import ScriptedGateway, calls, says
from tests.bounds import HANG

RESULT = "saldo: 4.200 € → disponible; «ŝ» ✓"  # → and ✓ are not in cp1252


@tool
def consultar(cuenta: str) -> str:
    """El saldo de una cuenta."""
    return RESULT


def journaled_run(database) -> None:
    agent = Agent("cajero", model="m", instructions="Contesta.", tools=[consultar])
    gateway = ScriptedGateway([calls("consultar", cuenta="ES91"), says("Hay saldo → sí")])

    async def drive() -> None:
        async for _ in agent.run(
            "¿saldo?", session=Session("r", gateway, SqliteCheckpointer(database))
        ):
            pass

    asyncio.run(drive())


def cli_in_cp1252(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "synaptum_lite", *args],
        input=stdin,
        env={**os.environ, "PYTHONIOENCODING": "cp1252"},
        capture_output=True,
        timeout=HANG,
    )


def test_show_prints_what_cp1252_cannot_hold_as_utf8(tmp_path):
    journaled_run(tmp_path / "runs.db")
    shown = cli_in_cp1252("show", str(tmp_path / "runs.db"), "r")
    assert shown.returncode == 0, shown.stderr.decode("utf-8", "replace")
    assert f"→ {RESULT}" in shown.stdout.decode("utf-8")


def test_a_run_exported_and_imported_through_cp1252_pipes_comes_back_as_it_was(tmp_path):
    journaled_run(tmp_path / "runs.db")
    exported = cli_in_cp1252("export", str(tmp_path / "runs.db"), "r")
    assert exported.returncode == 0, exported.stderr.decode("utf-8", "replace")
    imported = cli_in_cp1252("import", str(tmp_path / "copia.db"), stdin=exported.stdout)
    assert imported.returncode == 0, imported.stderr.decode("utf-8", "replace")

    async def both() -> tuple[list, list]:
        original = await load_events(SqliteCheckpointer(tmp_path / "runs.db"), "r")
        copy = await load_events(SqliteCheckpointer(tmp_path / "copia.db"), "r")
        return original, copy

    original, copy = asyncio.run(both())
    assert copy == original
    assert any(getattr(step, "result", None) and step.result.content == RESULT for step in copy)
