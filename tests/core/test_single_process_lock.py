"""The SQLite run lock where there is one process and no OS file locks: Pyodide and WASI.

There the lock is this process's own record of the runs it holds. These tests force that
platform branch in this (Linux) process, record every `fcntl` call, and prove that two
drivers in one process still exclude each other, that a released run can be driven again,
that a run is never reported busy wrongly, and that no OS lock is attempted. The conformance
suite runs on the same forced store too (`sqlite-single-process` in conftest.py); the real
Pyodide run is tests/navegador/.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading

import pytest

from synaptum_lite import RunBusy, Session, SqliteCheckpointer
from synaptum_lite.stores.runlock import _lock_kind

from . import agents
from .conftest import run, single_process_platform


@pytest.fixture
def os_locks(monkeypatch):
    attempted = single_process_platform(monkeypatch)
    yield attempted
    assert attempted == [], f"an OS lock was attempted: {attempted}"


@pytest.mark.parametrize(
    ("platform", "kind"),
    [
        ("emscripten", "process"),
        ("wasi", "process"),
        ("linux", "posix"),
        ("darwin", "posix"),
        ("win32", "windows"),
    ],
)
def test_the_run_lock_of_each_platform_is_told_by_sys_platform(monkeypatch, platform, kind):
    monkeypatch.setattr(sys, "platform", platform)
    assert _lock_kind() == kind


def test_this_machine_is_not_taken_for_a_single_process_platform():
    assert _lock_kind() != "process"  # the tests run on Linux, macOS or Windows


def test_two_drivers_in_one_process_exclude_each_other_with_no_os_lock(tmp_path, os_locks):
    async def scenario():
        first = SqliteCheckpointer(tmp_path / "runs.db")
        second = SqliteCheckpointer(tmp_path / "runs.db")
        async with first.hold("r"):
            with pytest.raises(RunBusy) as busy:
                async with second.hold("r"):
                    pass
            async with second.hold("otro"):  # another run of the same file is free
                pass
        async with second.hold("r"):  # released: the next driver takes it
            pass
        return busy.value

    assert run(scenario()).run_id == "r"


def test_two_names_of_one_file_reach_the_same_lock(tmp_path, os_locks):
    try:
        (tmp_path / "alias.db").symlink_to(tmp_path / "runs.db")
    except OSError as exc:  # Windows without the right to make symlinks (no Developer Mode)
        pytest.skip(f"this machine cannot make a symlink: {exc}")

    async def scenario():
        async with SqliteCheckpointer(tmp_path / "runs.db").hold("r"):
            with pytest.raises(RunBusy):
                async with SqliteCheckpointer(tmp_path / "alias.db").hold("r"):
                    pass

    run(scenario())


def test_a_driver_on_another_thread_is_told_busy_at_once(tmp_path, os_locks):
    outcome: list[str] = []

    async def other_driver():
        try:
            async with SqliteCheckpointer(tmp_path / "runs.db").hold("r"):
                outcome.append("held")
        except RunBusy:
            outcome.append("busy")

    async def scenario():
        async with SqliteCheckpointer(tmp_path / "runs.db").hold("r"):
            thread = threading.Thread(target=asyncio.run, args=(other_driver(),))
            thread.start()
            thread.join()
        await other_driver()  # released: now it is free

    run(scenario())
    assert outcome == ["busy", "held"]


def test_a_second_run_of_the_agent_mid_run_is_refused_and_no_effect_happens_twice(
    tmp_path, os_locks, monkeypatch
):
    """The first driver is inside its run (it holds it); a second one on the same loop is
    refused; the first finishes, and a third finds the run closed and calls nobody."""
    monkeypatch.setattr(agents, "EFFECTS", tmp_path / "r.effects")
    database = tmp_path / "runs.db"

    async def scenario():
        first_gateway = agents.double()
        steps = agents.cajero().run(
            agents.TASK, session=Session("r", first_gateway, SqliteCheckpointer(database))
        )
        async with contextlib.aclosing(steps):
            await anext(steps)  # the first driver now holds the run
            second_gateway = agents.double()
            with pytest.raises(RunBusy):
                async for _ in agents.cajero().run(
                    agents.TASK, session=Session("r", second_gateway, SqliteCheckpointer(database))
                ):
                    pass
            last = [step async for step in steps][-1]
        third_gateway = agents.double()
        closed = [
            step
            async for step in agents.cajero().run(
                agents.TASK, session=Session("r", third_gateway, SqliteCheckpointer(database))
            )
        ]
        return last, second_gateway.model_calls, third_gateway.model_calls, closed

    last, second_calls, third_calls, closed = run(scenario())
    assert last.output == agents.ANSWER
    assert second_calls == 0 and third_calls == 0
    assert [step.kind for step in closed] == ["final"]
    effects = (tmp_path / "r.effects").read_text().splitlines()
    assert [line.split()[0] for line in effects] == ["consultar_saldo", "transferir", "notificar"]
