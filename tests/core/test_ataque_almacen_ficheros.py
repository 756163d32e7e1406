"""An outside tester's hand on the files beside the journal, then a real SIGKILL.

SQLite commits into the write-ahead log `<name>-wal` and indexes it in `<name>-shm`; it keeps
both open. A log deleted mid-run (a tidy-up script, a person cleaning the folder) still took
every commit, and all of them vanished with the process: the resume paid every model call
again and made the transfer twice. Now every event a child received is in the file when it
is killed, and the resume pays only what was never paid.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from synaptum_lite import SqliteCheckpointer
from synaptum_lite.errors import StoreReplaced
from tests.bounds import HANG

from .agents import ANSWER
from .test_kill import ROOT, _model_steps_completed_before, child, effects, model_calls

pytestmark = pytest.mark.posix_signals  # it SIGKILLs child processes


def attacked(database: Path, tmp: Path, remove: str, after: int, die_at: int) -> int:
    command = [sys.executable, "-m", "tests.core.ataque_almacen_hijo", str(database), "r"]
    flags = [f"--remove={remove}", "--after", str(after), "--die-at", str(die_at)]
    killed = subprocess.run(
        [*command, str(tmp / "r.effects"), *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    return len(asyncio.run(SqliteCheckpointer(database).records("r")))


@pytest.mark.parametrize(
    ("remove", "after", "die_at"),
    [
        ("-wal", 3, 10),  # the log goes after the first tool's attempt; killed in turn three
        ("-wal", 7, 8),  # the log goes right after the transfer's attempt; killed once it is done
        ("-wal", 1, 15),  # the log goes at once; killed after the final step
        ("-shm", 3, 10),  # the index goes
    ],
)
def test_a_file_beside_the_journal_deleted_mid_run_loses_no_event_when_the_process_dies(
    tmp_path, remove, after, die_at
):
    database = tmp_path / "runs.db"
    on_disk = attacked(database, tmp_path, remove, after, die_at)
    assert on_disk >= die_at  # every event the child received was in the file

    resumed = child(str(database), tmp_path, "r", "--operator")
    assert resumed.returncode == 0, resumed.stderr
    assert f"final {ANSWER}" in resumed.stdout
    assert model_calls(resumed) == 4 - _model_steps_completed_before(die_at)
    assert effects(tmp_path, "r") == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}


def test_after_the_log_is_deleted_the_next_write_lands_in_the_file_and_a_new_log(tmp_path):
    database = tmp_path / "runs.db"
    copy = tmp_path / "copia" / "runs.db"

    async def scenario():
        store = SqliteCheckpointer(database)
        await store.start("r", {"agent": {}})
        for suffix in ("-wal", "-shm"):
            Path(f"{database}{suffix}").unlink()
        await store.start("s", {"agent": {}})
        # the file alone, copied without anything beside it, holds both runs
        copy.parent.mkdir()
        shutil.copyfile(database, copy)
        await store.start("t", {"agent": {}})  # and the store goes on, with a log of its own
        beside = sorted(p.name for p in tmp_path.iterdir() if p.is_file())
        copied = SqliteCheckpointer(copy)
        return beside, [(await copied.load(run_id)).header for run_id in ("r", "s")]

    beside, headers = asyncio.run(scenario())
    assert headers == [{"agent": {}}, {"agent": {}}]
    assert beside == ["runs.db", "runs.db-shm", "runs.db-wal"]


@pytest.mark.parametrize("how", ["replaced", "deleted"])
def test_a_journal_replaced_or_deleted_under_an_open_store_is_named_and_the_new_file_kept_whole(
    tmp_path, how
):
    """Its log, by name, would be read as the log of the file that now has the name: the other
    journal's pages overlaid with this one's (a reader saw the old runs and not the new one's)."""
    database = tmp_path / "runs.db"

    async def scenario():
        store = SqliteCheckpointer(database)
        await store.start("a", {"agent": {}})
        if how == "replaced":  # a backup moved over it
            backup = SqliteCheckpointer(tmp_path / "copia.db")
            await backup.start("b", {"agent": {}})
            await backup.close()
            (tmp_path / "copia.db").replace(database)
        else:
            database.unlink()
        with pytest.raises(StoreReplaced) as error:
            await store.start("r", {"agent": {}})
        fresh = SqliteCheckpointer(database)
        return str(error.value), [(await fresh.load(run_id)).header for run_id in "abr"]

    message, headers = asyncio.run(scenario())
    assert message.startswith("the journal file runs.db was replaced or deleted while this store")
    assert "open the journal again" in message
    assert headers == [None, {"agent": {}} if how == "replaced" else None, None]
