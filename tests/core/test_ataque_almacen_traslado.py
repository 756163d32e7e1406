"""Moving a run into a SQLite journal, SIGKILLed after each write of the import.

SQLite takes a run's header and its events in one transaction (`start_with`, as PostgreSQL
does); a store without it (one a user wrote) gets the header, then the events, and the import
is made here the same way too (`--piecewise`). Killed after any of those writes, the same
import run again finishes the move: the journal it leaves is the exported one, record for
record, and the run resumed there pays only the model calls the source never paid and repeats
no effect.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import pytest

from synaptum_lite import SqliteCheckpointer
from synaptum_lite.stores.transfer import export_run
from tests.bounds import HANG

from .agents import ANSWER
from .test_kill import ROOT, _model_steps_completed_before, child, effects, model_calls

pytestmark = pytest.mark.posix_signals  # it SIGKILLs child processes

WRITES = {"whole": 1, "piecewise": 2}  # start_with; or start, then every event in one append


def importer(export: str, database: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.core.ataque_almacen_import_hijo", export, database, *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )


def journal(database: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in asyncio.run(SqliteCheckpointer(database).records("r"))]


@pytest.mark.parametrize("source_killed_at", [8, 15], ids=["half-run", "closed-run"])
@pytest.mark.parametrize(
    ("how", "die_after"), [(how, n) for how, writes in WRITES.items() for n in range(1, writes + 1)]
)
def test_an_import_killed_after_any_write_finishes_when_run_again_and_repeats_nothing(
    tmp_path, how, die_after, source_killed_at
):
    source, destination = str(tmp_path / "origen.db"), str(tmp_path / "destino.db")
    killed = child(source, tmp_path, "r", "--die-at", str(source_killed_at))
    assert killed.returncode == -signal.SIGKILL
    export = tmp_path / "r.jsonl"
    export.write_text("\n".join(asyncio.run(export_run(SqliteCheckpointer(source), "r"))))

    flags = ["--piecewise"] if how == "piecewise" else []
    interrupted = importer(str(export), destination, "--die-after", str(die_after), *flags)
    assert interrupted.returncode == -signal.SIGKILL, interrupted.stderr
    again = importer(str(export), destination, *flags)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "r"
    assert journal(destination) == journal(source)

    resumed = child(destination, tmp_path, "r", "--operator")
    assert resumed.returncode == 0, resumed.stderr
    assert f"final {ANSWER}" in resumed.stdout
    assert model_calls(resumed) == 4 - _model_steps_completed_before(source_killed_at)
    assert effects(tmp_path, "r") == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}


def test_an_import_killed_after_its_first_write_leaves_no_run_that_pays_again(tmp_path):
    """Nobody may drive a half-imported run: its header alone, with none of its events, would
    be a new run to the agent, which would pay every model call and make the transfer again."""
    source, destination = str(tmp_path / "origen.db"), str(tmp_path / "destino.db")
    killed = child(source, tmp_path, "r", "--die-at", "8")  # the transfer is made and journaled
    assert killed.returncode == -signal.SIGKILL
    export = tmp_path / "r.jsonl"
    export.write_text("\n".join(asyncio.run(export_run(SqliteCheckpointer(source), "r"))))

    interrupted = importer(str(export), destination, "--die-after", "1")
    assert interrupted.returncode == -signal.SIGKILL, interrupted.stderr

    resumed = child(destination, tmp_path, "r", "--operator")  # no second import
    assert resumed.returncode == 0, resumed.stderr
    assert model_calls(resumed) == 2
    assert effects(tmp_path, "r") == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}
