"""An outside tester's names for the SQLite journal: each reaches one file, or is refused.

The run lock and SQLite must open the same file, for as long as the store lives: a name read
again at each use (a relative path after the process changes folder, a symlink retargeted, a
`file:` URI that SQLite reads and the lock does not) would lock one file and write another,
and a second driver of the written one would not be told "busy". A name that is no file of
its own (`:memory:`, a folder, a pipe, a device) is refused before anything is made.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from synaptum_lite import ConfigurationError, RunBusy, SqliteCheckpointer, StoreUnavailable

from .conftest import run


def files_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_relative_journal_stays_the_same_file_after_the_process_changes_folder(
    tmp_path, monkeypatch
):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    store = SqliteCheckpointer("runs.db")

    async def scenario():
        await store.start("r", {"agent": {}})  # the connection opens a/runs.db
        os.chdir(tmp_path / "b")  # as `%cd` does in a notebook
        async with store.hold("r"):
            with pytest.raises(RunBusy):
                async with SqliteCheckpointer(tmp_path / "a" / "runs.db").hold("r"):
                    pass

    run(scenario())
    assert files_in(tmp_path / "b") == []  # no lock taken on a b/runs.db of its own


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_a_symlink_retargeted_after_opening_does_not_split_the_lock_from_the_journal(tmp_path):
    alias = tmp_path / "actual.db"
    alias.symlink_to(tmp_path / "a.db")
    store = SqliteCheckpointer(alias)

    async def scenario():
        await store.start("r", {"agent": {}})  # the connection opens a.db
        alias.unlink()
        alias.symlink_to(tmp_path / "b.db")
        async with store.hold("r"):  # the lock is taken on the file it writes: a.db
            with pytest.raises(RunBusy):
                async with SqliteCheckpointer(tmp_path / "a.db").hold("r"):
                    pass
        assert (await store.load("r")).header == {"agent": {}}

    run(scenario())
    assert not (tmp_path / "b.db").exists()


def test_a_file_uri_is_refused_before_any_file_is_made(tmp_path, monkeypatch):
    """SQLite (built with URIs on) would open runs.db; the lock would open `file:runs.db`."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError) as error:
        SqliteCheckpointer("file:runs.db")
    assert "got 'file:runs.db': it is a URI" in str(error.value)
    assert "give the file's path" in str(error.value)
    assert files_in(tmp_path) == []


def test_a_memory_database_name_is_refused_and_points_at_the_memory_checkpointer(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match="use MemoryCheckpointer") as error:
        SqliteCheckpointer(":memory:")
    assert "lose it when the process ends" in str(error.value)
    assert files_in(tmp_path) == []


def test_an_empty_path_is_refused_naming_it():
    with pytest.raises(ConfigurationError, match="got '': it names no file"):
        SqliteCheckpointer("")


def test_a_path_ending_in_a_separator_is_refused_and_no_folder_is_made(tmp_path):
    with pytest.raises(ConfigurationError, match="it names a folder") as error:
        SqliteCheckpointer(f"{tmp_path / 'nuevo'}{os.sep}")
    assert "such as runs.db" in str(error.value)
    assert files_in(tmp_path) == []


def test_a_folder_where_the_journal_should_be_is_named_a_folder_not_hard_links(tmp_path):
    (tmp_path / "runs.db").mkdir()
    (tmp_path / "runs.db" / "dentro.txt").write_text("mío")

    with pytest.raises(ConfigurationError) as error:
        run(SqliteCheckpointer(tmp_path / "runs.db").load("r"))
    assert str(error.value).startswith("the journal runs.db is a folder, not a file")
    assert "such as runs.db/runs.db" in str(error.value)
    assert files_in(tmp_path) == ["runs.db", "runs.db/dentro.txt"]

    async def hold():
        async with SqliteCheckpointer(tmp_path / "runs.db").hold("r"):
            pass

    with pytest.raises(ConfigurationError, match="is a folder, not a file"):
        run(hold())


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_where_the_journal_should_be_is_refused_without_waiting_on_it(tmp_path):
    os.mkfifo(tmp_path / "runs.db")

    async def hold():
        async with SqliteCheckpointer(tmp_path / "runs.db").hold("r"):
            pass

    for attempt in (SqliteCheckpointer(tmp_path / "runs.db").load("r"), hold()):
        with pytest.raises(ConfigurationError, match="runs.db is not a regular file"):
            run(attempt)
    assert files_in(tmp_path) == ["runs.db"]


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="POSIX devices")
def test_a_device_is_refused_instead_of_swallowing_the_journal():
    with pytest.raises(ConfigurationError, match="null is not a regular file"):
        run(SqliteCheckpointer("/dev/null").load("r"))


@pytest.mark.parametrize(
    "other", ["runs.db", "./runs.db", "sub/../runs.db", "sub//../runs.db", "sub/./../runs.db"]
)
def test_every_spelling_of_one_file_reaches_its_one_lock(tmp_path, monkeypatch, other):
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)

    async def scenario():
        async with SqliteCheckpointer(tmp_path / "runs.db").hold("r"):
            with pytest.raises(RunBusy):
                async with SqliteCheckpointer(other).hold("r"):
                    pass

    run(scenario())


@pytest.mark.skipif(
    os.path.normcase("A") != "A" or sys.platform == "darwin",
    reason="a case-insensitive file system makes these one file",
)
def test_two_names_differing_only_in_case_are_two_journals_on_linux(tmp_path):
    async def scenario():
        async with SqliteCheckpointer(tmp_path / "runs.db").hold("r"):
            async with SqliteCheckpointer(tmp_path / "RUNS.db").hold("r"):
                pass

    run(scenario())
    assert files_in(tmp_path) == ["RUNS.db", "runs.db"]


@pytest.mark.parametrize("name", ["con espacios.db", "año €.db", "línea\nnueva.db"])
def test_a_name_with_spaces_non_ascii_or_a_newline_is_one_journal_and_one_lock(tmp_path, name):
    if "\n" in name and sys.platform == "win32":
        pytest.skip("Windows names cannot hold a newline")

    async def scenario():
        store = SqliteCheckpointer(tmp_path / name)
        await store.start("r", {"agent": {}})
        async with store.hold("r"):
            with pytest.raises(RunBusy):
                async with SqliteCheckpointer(tmp_path / name).hold("r"):
                    pass
        return await SqliteCheckpointer(tmp_path / name).load("r")

    assert run(scenario()).header == {"agent": {}}
    assert files_in(tmp_path)[0] == name


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_a_symlink_loop_is_a_store_error_naming_it_not_a_bare_os_error(tmp_path):
    (tmp_path / "a.db").symlink_to(tmp_path / "b.db")
    (tmp_path / "b.db").symlink_to(tmp_path / "a.db")

    with pytest.raises(StoreUnavailable) as error:
        run(SqliteCheckpointer(tmp_path / "a.db").load("r"))
    assert "a.db is unavailable (its path cannot be followed: ELOOP: " in str(error.value)


@pytest.mark.skipif(sys.platform == "win32", reason="Windows says a long name is not found")
def test_a_name_too_long_for_the_file_system_is_a_store_error_naming_it(tmp_path):
    name = "x" * 300 + ".db"
    with pytest.raises(StoreUnavailable, match="its path cannot be followed: ENAMETOOLONG: "):
        run(SqliteCheckpointer(tmp_path / name).load("r"))
    assert files_in(tmp_path) == []


def test_a_bytes_path_names_the_same_journal_as_its_text(tmp_path):
    async def scenario():
        await SqliteCheckpointer(os.fsencode(tmp_path / "runs.db")).start("r", {"agent": {}})
        async with SqliteCheckpointer(tmp_path / "runs.db").hold("r"):
            with pytest.raises(RunBusy):
                async with SqliteCheckpointer(os.fsencode(tmp_path / "runs.db")).hold("r"):
                    pass
        return await SqliteCheckpointer(tmp_path / "runs.db").load("r")

    assert run(scenario()).header == {"agent": {}}
    assert (
        repr(SqliteCheckpointer(os.fsencode(tmp_path / "runs.db")))
        == "SqliteCheckpointer('runs.db')"
    )
