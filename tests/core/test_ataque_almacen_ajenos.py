"""Files that are not a journal this version can use, handed to the SQLite store by an
outside tester: each gets an error that names the file and says what to do, and the file is
left byte for byte as it was (nothing beside it either)."""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from synaptum_lite import DamagedStore, NotAJournal, SqliteCheckpointer
from tests.bounds import HANG

from .conftest import run
from .test_kill import ROOT
from .test_storage_errors import _namespace


def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


def a_closed_journal(path: Path) -> None:
    async def write():
        store = SqliteCheckpointer(path)
        await store.start("r", {"agent": {}})
        await store.close()

    run(write())
    assert not Path(f"{path}-wal").exists()  # the last close folded the log into the file


def test_a_journal_cut_short_is_called_damaged_not_someone_elses_file(tmp_path):
    path = tmp_path / "runs.db"
    a_closed_journal(path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # a copy that stopped
    before = snapshot(tmp_path)

    with pytest.raises(DamagedStore) as error:
        run(SqliteCheckpointer(path).load("r"))
    assert str(error.value).startswith("the journal store runs.db is damaged (SQLite: ")
    assert "restore it from a backup" in str(error.value)
    assert snapshot(tmp_path) == before


def test_another_applications_database_with_only_a_version_number_is_not_ours(tmp_path):
    """Its `user_version` is that application's, not a newer journal format: nobody should
    be told to upgrade synaptum_lite to open it."""
    path = tmp_path / "otra.db"
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA user_version = 3")
    before = snapshot(tmp_path)

    with pytest.raises(NotAJournal) as error:
        run(SqliteCheckpointer(path).load("r"))
    assert "otra.db is not a synaptum_lite journal" in str(error.value)
    assert "another application's version number 3, and no tables" in str(error.value)
    assert snapshot(tmp_path) == before


def test_a_journal_whose_tables_were_dropped_is_called_damaged_before_anything_is_written(
    tmp_path,
):
    path = tmp_path / "runs.db"
    a_closed_journal(path)
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("DROP TABLE events")
    before = snapshot(tmp_path)

    with pytest.raises(DamagedStore, match="marked as a journal but lacks its tables events"):
        run(SqliteCheckpointer(path).start("nuevo", {"agent": {}}))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "content",
    [b"\0" * 8192, b"\0" * 100, b"hola", ("texto, no una base\n" * 300).encode()],
    ids=["zeros", "a-few-zeros", "four-bytes", "text"],
)
def test_a_file_of_zeros_or_text_is_refused_and_left_alone(tmp_path, content):
    path = tmp_path / "runs.db"
    path.write_bytes(content)

    with pytest.raises(NotAJournal, match="runs.db is not a synaptum_lite journal"):
        run(SqliteCheckpointer(path).start("r", {"agent": {}}))
    assert snapshot(tmp_path) == {"runs.db": hashlib.sha256(content).hexdigest()}


def test_an_empty_file_becomes_a_journal(tmp_path):
    path = tmp_path / "runs.db"
    path.touch()

    async def scenario():
        await SqliteCheckpointer(path).start("r", {"agent": {}})
        return await SqliteCheckpointer(path).load("r")

    assert run(scenario()).header == {"agent": {}}


def test_a_journal_in_a_read_only_folder_says_the_folder_is_the_reason(tmp_path):
    """SQLite keeps `-wal` and `-shm` beside a journal even to read it; in a folder this
    process may not write in it cannot, and said only 'unable to open database file' (and a
    journal in a new subfolder there raised a bare OSError)."""
    namespace = _namespace()
    if namespace is None:
        pytest.skip("needs `unshare` allowed to make a mount namespace (Linux) for a bind mount")
    folder = tmp_path / "solo-lectura"
    a_closed_journal(folder / "runs.db")
    mount = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1"'
    read = subprocess.run(
        [
            *namespace,
            "sh",
            "-c",
            f'{mount} && exec "$2" -m tests.core.ataque_almacen_ro_hijo "$1/runs.db" "$1/sub/x.db"',
            "sh",
            str(folder),
            sys.executable,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert read.returncode == 0, read.stderr
    journal, subfolder = read.stdout.splitlines()
    assert journal.startswith(
        "StoreUnavailable: the journal store runs.db is unavailable (SQLite cannot open it: "
        "this process may not write in its folder solo-lectura, and SQLite keeps two files "
        "beside a journal even to read it (runs.db-wal and runs.db-shm): let this process "
        "write in the folder, or copy the journal to a folder it can write in)"
    )
    assert subfolder.startswith(
        "StoreUnavailable: the journal store x.db is unavailable (its folder cannot be made: "
    )
    assert sorted(p.name for p in folder.iterdir()) == ["runs.db"]
