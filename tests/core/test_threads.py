"""Threads that each run their own event loop and open the same run: every one finishes.

The core needs no thread, but a program may have several, each with its event loop (a web
server's workers, a notebook's background thread). They may share one checkpointer or open
their own on the same store. Every driver but one is told `RunBusy` at once, a closed run
returns its final step to all of them, and no thread is left waiting for a wake-up that
another thread's loop can never deliver. A thread still running after the bound fails the test.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

import pytest

from synaptum_lite import Agent, FinalStep, RunBusy, Session, load_events
from synaptum_lite.testing import ScriptedGateway, says

from .conftest import STORES

THREADS = 6
ROUNDS = 25
BOUND = 120  # seconds: far more than the work needs; reaching it means a thread hangs


def agente() -> Agent:
    return Agent("a", model="m", instructions="i")


async def drive(store, run_id: str) -> str:
    session = Session(run_id, ScriptedGateway([says("hecho")] * 2), store)
    try:
        async for step in agente().run("t", session=session):
            if isinstance(step, FinalStep):
                final = step.output
        return f"final {final}"
    except RunBusy:
        return "busy"


def in_threads(work) -> Counter[str]:
    """Run `work(thread_number)` in THREADS threads at once; the outcome of every round."""
    outcomes: Counter[str] = Counter()
    errors: list[BaseException] = []
    counting = threading.Lock()
    start = threading.Barrier(THREADS)

    def thread(number: int) -> None:
        try:
            start.wait()
            for outcome in work(number):
                with counting:
                    outcomes[outcome] += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=thread, args=(n,), daemon=True) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(BOUND)
    hung = [t.name for t in threads if t.is_alive()]
    assert not hung, f"threads still waiting after {BOUND} s: {hung}"
    assert not errors, errors
    return outcomes


@pytest.fixture(params=["sqlite-shared", "sqlite-own", "postgres-own", "postgres-shared"])
def stores(request, tmp_path):
    """For thread n, the checkpointer it uses: one shared by all, or one of its own."""
    kind, sharing = request.param.split("-")
    if sharing == "shared":
        shared = STORES[kind](tmp_path)
        return lambda n: shared
    return lambda n: STORES[kind](tmp_path)


def test_threads_with_their_own_loops_all_read_a_closed_run(stores):
    asyncio.run(drive(stores(0), "cerrado"))  # the run is closed before the threads start

    def work(number):
        store = stores(number)
        for _ in range(ROUNDS):
            yield asyncio.run(drive(store, "cerrado"))

    outcomes = in_threads(work)
    assert set(outcomes) <= {"final hecho", "busy"}
    assert sum(outcomes.values()) == THREADS * ROUNDS


def test_threads_with_their_own_loops_are_told_busy_while_another_holds_the_run(stores):
    held, finish = threading.Event(), threading.Event()

    async def hold_in_a_thread():
        async with stores(0).hold("tomado"):
            held.set()
            while not finish.is_set():
                await asyncio.sleep(0.01)

    owner = threading.Thread(target=asyncio.run, args=(hold_in_a_thread(),), daemon=True)
    owner.start()
    assert held.wait(BOUND)

    def work(number):
        store = stores(number)
        for _ in range(ROUNDS):
            yield asyncio.run(drive(store, "tomado"))

    try:
        outcomes = in_threads(work)
    finally:
        finish.set()
        owner.join(BOUND)
    assert not owner.is_alive()
    assert outcomes == {"busy": THREADS * ROUNDS}
    assert asyncio.run(drive(stores(0), "tomado")) == "final hecho"  # released: it runs now


def test_a_thread_reads_a_run_while_another_threads_loop_holds_it(stores):
    asyncio.run(drive(stores(0), "leido"))
    held, finish = threading.Event(), threading.Event()

    async def hold_in_a_thread():
        async with stores(0).hold("leido"):
            held.set()
            while not finish.is_set():
                await asyncio.sleep(0.01)

    owner = threading.Thread(target=asyncio.run, args=(hold_in_a_thread(),), daemon=True)
    owner.start()
    assert held.wait(BOUND)

    def work(number):
        store = stores(number)
        for _ in range(ROUNDS):
            events = asyncio.run(load_events(store, "leido"))
            yield f"{len(events)} events"

    try:
        outcomes = in_threads(work)
    finally:
        finish.set()
        owner.join(BOUND)
    assert outcomes == {"3 events": THREADS * ROUNDS}
