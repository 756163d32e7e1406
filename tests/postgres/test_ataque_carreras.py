"""Two drivers that could both believe they own a run: the first one's connection is ended by
the server (`pg_terminate_backend`, as an administrator, a failover or an idle-session reaper
would), its lock with it, and a second driver takes the run over while the first one still
runs. The first driver's next write must fail, and the journal must hold one run, not two
interleaved; the effects and the model calls are counted where they happen.

The drivers run in one event loop, each with a checkpointer (and so connections) of its own:
the first is an async generator suspended where the test chooses, the second runs to the end
meanwhile. The server and its locks are real; only the timing is the test's."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from synaptum_lite import Phase, RunBusy, Session, StoreUnavailable, UncertainEffect
from synaptum_lite.stores.postgres import PostgresCheckpointer
from tests.core import agents
from tests.core.agents import ANSWER, TASK, cajero, double
from tests.core.conftest import run
from tests.core.test_kill import ROOT
from tests.core.test_transfer import counted

from .store import import_psycopg, require_server, schema_for, with_parameter
from .test_workers import Batch

psycopg = import_psycopg()

ONCE_EACH = {"consultar_saldo": 1, "transferir": 1, "notificar": 1}
KNOWN = {"transferir": "transferencia de 100.00 € hecha", "notificar": "notificado"}


@pytest.fixture
def effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "effects"
    monkeypatch.setattr(agents, "EFFECTS", path)
    return path


def named(tmp: Path, who: str) -> PostgresCheckpointer:
    """A checkpointer whose connections carry `who` in their name, so the test can end them."""
    url = with_parameter(require_server(), "application_name", f"{who}-{uuid.uuid4().hex[:8]}")
    return PostgresCheckpointer(url, schema=schema_for(tmp))


def end_connections_of(store: PostgresCheckpointer) -> int:
    """End every session of `store` on the server, as an administrator would."""
    name = store.url.rsplit("application_name=", 1)[1]
    with psycopg.connect(require_server(), autocommit=True) as admin:
        return len(
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (name,),
            ).fetchall()
        )


async def operator_drives(store: PostgresCheckpointer, effects: Path) -> tuple[list, int]:
    """The second driver: drives the run to its end, resolving an uncertain effect the way a
    person would, by looking whether it happened. The steps of its last pass and the model
    calls it paid."""
    gateway = double()
    session = Session("r", gateway, store)
    while True:
        try:
            steps = [step async for step in cajero().run(TASK, session=session)]
            return steps, gateway.model_calls
        except UncertainEffect as uncertain:
            done = effects.exists() and any(
                line.startswith(uncertain.tool + " ") for line in effects.read_text().splitlines()
            )
            if done:
                await session.record_result(uncertain.step_id, KNOWN[uncertain.tool], by="ana")
            else:
                await session.allow_retry(uncertain.step_id, by="ana")


async def first_driver_until(
    store: PostgresCheckpointer, step_id: str, phase: Phase
) -> tuple[object, object]:
    """The first driver, suspended right after it received (`step_id`, `phase`): it holds
    the run there. Its generator and its gateway."""
    gateway = double()
    steps = cajero().run(TASK, session=Session("r", gateway, store))
    async for step in steps:
        if (step.step_id, step.phase) == (step_id, phase):
            return steps, gateway
    raise AssertionError(f"the run never reached {step_id} {phase}")


def journal_of(tmp: Path) -> list[tuple[int, str, str, int]]:
    records = run(PostgresCheckpointer(require_server(), schema=schema_for(tmp)).records("r"))
    return [(r.seq, r.step_id, r.phase, r.attempt) for r in records]


def test_a_driver_that_lost_its_connection_between_steps_writes_nothing_after_the_new_owner(
    tmp_path, effects
):
    """The first driver waits between two steps (its consumer is busy) while the server ends
    its session; a second driver takes the run over and closes it. When the first driver goes
    on, its next write (the transfer's write-ahead record) fails, so the transfer never runs
    in it, and the journal is the second driver's run, whole."""
    first, second = named(tmp_path, "primero"), named(tmp_path, "segundo")

    async def scenario():
        steps, gateway = await first_driver_until(first, "000002-model", Phase.COMPLETED)
        assert end_connections_of(first) >= 1
        taken_over, paid_by_second = await operator_drives(second, effects)
        with pytest.raises(StoreUnavailable) as lost:
            await anext(steps)
        await steps.aclose()
        return taken_over, paid_by_second, gateway.model_calls, lost.value

    taken_over, paid_by_second, paid_by_first, lost = run(scenario())
    assert taken_over[-1].output == ANSWER
    assert "is unavailable" in str(lost)
    assert paid_by_first + paid_by_second == 4  # nothing journaled was paid again
    assert counted(effects) == ONCE_EACH
    journal = journal_of(tmp_path)
    assert [seq for seq, *_ in journal] == list(range(15))
    assert len({tuple(key) for _, *key in journal}) == 15  # every event once


def test_one_checkpointer_never_lets_a_second_driver_take_a_run_its_first_has_not_let_go(
    tmp_path, effects
):
    """One checkpointer serves every driver of a process (as a worker pool does). The server
    ends its sessions while a driver waits between steps: that driver still believes it holds
    the run. Another driver of the same process, through the same checkpointer, is told busy
    until the first lets go; then the first driver's next write fails, it lets go, and the
    second drives the run to its end: every effect once, no model call paid twice.

    (Before, the second driver took the run at once, and the first one, going on, wrote
    through the checkpointer's other connections, without any lock: it transferred and
    notified a second time.)"""
    store = named(tmp_path, "compartido")

    async def scenario():
        steps, gateway = await first_driver_until(store, "000002-model", Phase.COMPLETED)
        end_connections_of(store)
        with pytest.raises(RunBusy):
            await operator_drives(store, effects)
        with pytest.raises(StoreUnavailable):
            await anext(steps)
        await steps.aclose()
        taken_over, paid_by_second = await operator_drives(store, effects)
        return taken_over, gateway.model_calls + paid_by_second

    taken_over, paid = run(scenario())
    assert taken_over[-1].output == ANSWER
    assert paid == 4
    assert counted(effects) == ONCE_EACH
    assert [seq for seq, *_ in journal_of(tmp_path)] == list(range(15))


def test_a_driver_whose_connection_ends_inside_a_write_leaves_nothing_half_written(
    tmp_path, effects
):
    """The server ends the first driver's session while its write-ahead record of the transfer
    is being inserted (a trigger holds that insert, for that driver only, until it is ended).
    The insert is rolled back whole, the transfer never runs in that driver, and the second
    driver resumes from the journal as it was: the transfer and every other effect once."""
    first, second = named(tmp_path, "primero"), named(tmp_path, "segundo")
    name = first.url.rsplit("application_name=", 1)[1]
    run(first.load("r"))  # creates the journal's tables
    with psycopg.connect(require_server(), autocommit=True) as admin:
        admin.execute(
            f"""CREATE FUNCTION {first.schema}.retener() RETURNS trigger AS $$
            BEGIN
                IF current_setting('application_name') = %s AND NEW.step_id = '000003-tool'
                THEN PERFORM pg_sleep(600); END IF;
                RETURN NEW;
            END $$ LANGUAGE plpgsql""".replace("%s", f"'{name}'")
        )
        admin.execute(
            f"""CREATE TRIGGER retener BEFORE INSERT ON {first.schema}.events
            FOR EACH ROW EXECUTE FUNCTION {first.schema}.retener()"""
        )

    def end_when_held() -> None:
        with psycopg.connect(require_server(), autocommit=True) as admin:
            for _ in range(6000):  # polls until the insert waits in the trigger
                (held,) = admin.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
                    "AND wait_event = 'PgSleep'",
                    (name,),
                ).fetchone()
                if held:
                    break
                admin.execute("SELECT pg_sleep(0.01)")
            else:
                raise AssertionError("the first driver's insert never reached the trigger")
        end_connections_of(first)

    async def scenario():
        gateway = double()
        seen = []

        async def drive_first():
            async for step in cajero().run(TASK, session=Session("r", gateway, first)):
                seen.append(step)

        with pytest.raises(StoreUnavailable):
            await asyncio.gather(drive_first(), asyncio.to_thread(end_when_held))
        before = await second.records("r")
        taken_over, paid_by_second = await operator_drives(second, effects)
        return seen, before, taken_over, gateway.model_calls + paid_by_second

    seen, before, taken_over, paid = run(scenario())
    assert [(s.step_id, s.phase) for s in seen][-1] == ("000002-model", Phase.COMPLETED)
    assert len(before) == 6  # through the model's answer; nothing of the transfer
    assert taken_over[-1].output == ANSWER
    assert paid == 4
    assert counted(effects) == ONCE_EACH


def test_a_driver_that_lost_its_lock_while_its_consumer_held_the_write_ahead_record_does_not_act(
    tmp_path, effects
):
    """The first driver wrote the transfer's write-ahead record and yielded it; its consumer
    takes its time (it streams the event to a client, say) while the server ends the driver's
    session. The second driver finds the transfer attempted and not done (nothing in the
    effects), so the operator allows a retry, and the second driver transfers. When the
    first driver goes on, it must not transfer too: it no longer holds the run."""
    first, second = named(tmp_path, "primero"), named(tmp_path, "segundo")

    async def scenario():
        steps, _ = await first_driver_until(first, "000003-tool", Phase.ATTEMPTED)
        end_connections_of(first)
        await operator_drives(second, effects)
        with pytest.raises(StoreUnavailable):
            await anext(steps)
        await steps.aclose()

    run(scenario())
    assert counted(effects) == ONCE_EACH


# ── many processes racing for the same runs ──────────────────────────────────────────────


class RacingBatch(Batch):
    """`test_workers.Batch` with the workers of `ataque_conductor.py`: each takes the runs in
    the batch's order (all contend for each run), and survives the server ending its
    journal's connections (`cut`), coming back to the run later."""

    def __init__(self, tmp: Path, runs: int) -> None:
        super().__init__(tmp, runs)
        self.cuts = 0

    def start(self) -> None:
        name = f"w{self.started}"
        self.started += 1
        with (self.tmp / f"{name}.log").open("wb") as log:
            self.processes[name] = subprocess.Popen(
                [sys.executable, "-m", "tests.postgres.ataque_conductor", self.url]
                + [self.schema, name],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def cut(self, name: str) -> None:
        """End the worker's journal connections (its lab connection is unnamed: it stays)."""
        self.db.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (name,),
        )
        self.cuts += 1

    def losses(self) -> int:
        """How many times a worker was told its connection was gone, in every worker's log."""
        return sum(log.read_text().count("lost ") for log in self.tmp.glob("w*.log"))


def test_six_workers_racing_for_the_same_runs_killed_and_cut_off_finish_each_once(tmp_path):
    """Six worker processes start at once and take the same runs in the same order; at random
    moments one that holds a run is SIGKILLed (and replaced) or has its connections ended by
    the server (and goes on). Never two drivers at once: no non-idempotent effect twice, no
    completed step executed or paid again, and every journal ends alike."""
    runs, workers, faults = 12, 6, 16
    batch = RacingBatch(tmp_path, runs)
    chance = random.Random(20261201)
    try:
        for _ in range(workers):
            batch.start()
        pending = "SELECT count(*) FROM {lab}.tasks WHERE NOT done"
        while batch.kills + batch.cuts < faults and batch.count(pending):
            time.sleep(chance.uniform(0.01, 0.1))  # a random moment
            batch.check_alive()
            holding = batch.holding()
            if holding:
                victim = chance.choice(holding)
                if chance.random() < 0.5:
                    batch.kill(victim)
                else:
                    batch.cut(victim)
        batch.wait()
        summary = (
            f"{runs} runs, {workers} workers in the same order, {batch.kills} SIGKILLs, "
            f"{batch.cuts} connections ended ({batch.losses()} runs lost by their driver), "
            f"told busy {batch.count('SELECT count(*) FROM {lab}.busy')} times, "
            f"{batch.count('SELECT count(*) FROM {lab}.resolutions')} uncertain effects resolved"
        )
        print(summary)  # noqa: T201 - shown with -s or -rP: what the run exercised
        assert set(batch.duplicates().values()) == {0}, (batch.duplicates(), summary)
        batch.assert_every_journal_ends_alike()
    finally:
        batch.close()


def test_a_run_held_in_an_event_loop_closed_without_letting_go_is_not_held_for_ever(tmp_path):
    """A driver's event loop was closed while it held a run (`loop.close()` without letting
    the generators finish): its connection, still open, kept the server's lock for as long as
    the checkpointer lived. The checkpointer now ends that connection on the next hold."""
    store = PostgresCheckpointer(require_server(), schema=schema_for(tmp_path))
    loop = asyncio.new_event_loop()
    held = store.hold("r")
    loop.run_until_complete(held.__aenter__())
    loop.close()  # never let go

    async def take() -> int:
        for attempt in range(1, 201):  # the server ends the old session soon after
            try:
                async with store.hold("r"):
                    return attempt
            except RunBusy:
                await asyncio.sleep(0.02)
        return 0

    assert run(take()) > 0
    del held
