"""A worker process: pulls runs from a batch in one PostgreSQL database and drives them.

    python -m tests.postgres.workers URL SCHEMA WORKER [--in-order]

Any number of these run at once against one database; the tests SIGKILL them at random
moments and start them again. A worker picks the runs not done yet, in random order (in
the batch's order with `--in-order`, so that workers collide on every run), and drives each
it can hold: `RunBusy` means another worker has it, so it moves on. An uncertain
effect (a worker was killed inside a non-idempotent tool) is resolved the way an operator
would: by looking in the database whether the effect happened.

Everything is counted by the tools and the model themselves, in the lab schema
(`SCHEMA_lab`), in the same database, at the moment it happens:

    effects      one row per execution of a tool: run, step, tool, worker, and whether the
                 journal already held that step completed (a repeated completed step)
    model_calls  one row per model call: run, position, worker, and the same question
    resolutions  one row per uncertain effect an operator resolved
    busy         one row per `RunBusy` a worker was told
    tasks        the batch: run ids, and `done` once a worker saw the run's final step
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from typing import Any

from synaptum_lite import (
    Agent,
    FinalStep,
    NothingToResolve,
    Risk,
    Role,
    RunBusy,
    Session,
    ToolContext,
    UncertainEffect,
    tool,
)
from synaptum_lite.stores.postgres import PostgresCheckpointer
from synaptum_lite.testing import ScriptedGateway
from tests.core.agents import ANSWER, TASK, responder

LAB_SCHEMA = """
CREATE SCHEMA {lab};
CREATE TABLE {lab}.tasks (run_id text PRIMARY KEY, done boolean NOT NULL DEFAULT false);
CREATE TABLE {lab}.effects (
    id serial PRIMARY KEY, run_id text, step_id text, tool text, worker text, repeated boolean
);
CREATE TABLE {lab}.model_calls (
    id serial PRIMARY KEY, run_id text, position integer, worker text, repeated boolean
);
CREATE TABLE {lab}.resolutions (id serial PRIMARY KEY, run_id text, step_id text, action text);
CREATE TABLE {lab}.busy (id serial PRIMARY KEY, run_id text, worker text);
"""
KNOWN_RESULTS = {"transferir": "transferencia de 100.00 € hecha", "notificar": "notificado"}


class Lab:
    """The worker's own connection to the lab tables (not the journal's)."""

    def __init__(self, url: str, schema: str, worker: str) -> None:
        import psycopg  # here, so the tests that import this module skip without it

        self.connection = psycopg.connect(url, autocommit=True)
        self.schema, self.lab, self.worker = schema, f"{schema}_lab", worker
        self.run_id = ""  # the run this worker drives now: one at a time

    def already_completed(self, step_id: str) -> bool:
        row = self.connection.execute(
            f"""SELECT EXISTS (SELECT 1 FROM {self.schema}.events e JOIN {self.schema}.runs r
            ON r.id = e.run WHERE r.run_id = %s AND e.step_id = %s AND e.phase = 'completed')""",
            (self.run_id, step_id),
        ).fetchone()
        return bool(row and row[0])

    def effect(self, context: ToolContext, name: str) -> None:
        """The effect itself: this row, committed, is the transfer or the notification."""
        self.connection.execute(
            f"INSERT INTO {self.lab}.effects (run_id, step_id, tool, worker, repeated) "
            "VALUES (%s, %s, %s, %s, %s)",
            (
                context.run_id,
                context.step_id,
                name,
                self.worker,
                self.already_completed(context.step_id),
            ),
        )

    def model_call(self, position: int) -> None:
        self.connection.execute(
            f"INSERT INTO {self.lab}.model_calls (run_id, position, worker, repeated) "
            "VALUES (%s, %s, %s, %s)",
            (self.run_id, position, self.worker, self.already_completed(f"{position:06d}-model")),
        )

    def effect_happened(self, run_id: str, step_id: str) -> bool:
        row = self.connection.execute(
            f"SELECT count(*) FROM {self.lab}.effects WHERE run_id = %s AND step_id = %s",
            (run_id, step_id),
        ).fetchone()
        return bool(row and row[0])

    def pending(self) -> list[str]:
        rows = self.connection.execute(
            f"SELECT run_id FROM {self.lab}.tasks WHERE NOT done ORDER BY run_id"
        ).fetchall()
        return [run_id for (run_id,) in rows]

    def busy(self, run_id: str) -> None:
        self.connection.execute(
            f"INSERT INTO {self.lab}.busy (run_id, worker) VALUES (%s, %s)", (run_id, self.worker)
        )

    def done(self, run_id: str) -> None:
        self.connection.execute(
            f"UPDATE {self.lab}.tasks SET done = true WHERE run_id = %s", (run_id,)
        )

    def resolved(self, run_id: str, step_id: str, action: str) -> None:
        self.connection.execute(
            f"INSERT INTO {self.lab}.resolutions (run_id, step_id, action) VALUES (%s, %s, %s)",
            (run_id, step_id, action),
        )


LAB: Lab


def slow_work() -> None:
    """A few milliseconds of work, so a worker spends its time inside runs, where kills land."""
    time.sleep(random.uniform(0.002, 0.01))


@tool(risk=Risk.READ, idempotent=True)
def consultar_saldo(cuenta: str, contexto: ToolContext) -> str:
    """Consulta el saldo de una cuenta."""
    LAB.effect(contexto, "consultar_saldo")
    slow_work()
    return f"{cuenta}: 4.200,00 €"


@tool(risk=Risk.HARD_WRITE)
def transferir(origen: str, destino: str, importe: float, contexto: ToolContext) -> str:
    """Transfiere un importe entre dos cuentas."""
    LAB.effect(contexto, "transferir")
    slow_work()  # killed here: the transfer happened, the step is not completed
    return f"transferencia de {importe:.2f} € hecha"


@tool(risk=Risk.SOFT_WRITE)
def notificar(mensaje: str, contexto: ToolContext) -> str:
    """Envía una notificación al cliente."""
    LAB.effect(contexto, "notificar")
    slow_work()
    return "notificado"


TOOLS = [consultar_saldo, transferir, notificar]


def counted_responder(request: Any) -> Any:
    """The cashier's scripted model, recording each call it answers."""
    LAB.model_call(2 * sum(1 for m in request.messages if m.role is Role.TOOL))
    slow_work()
    return responder(request)


def cashier() -> Agent:
    return Agent("cajero", model="guionizado", instructions="Opera con cuidado.", tools=TOOLS)


async def drive(store: PostgresCheckpointer, run_id: str) -> None:
    """Drive one run to its end, resolving uncertain effects as an operator would."""
    LAB.run_id = run_id
    while True:
        session = Session(run_id, ScriptedGateway([counted_responder] * 20, tools=TOOLS), store)
        try:
            async for step in cashier().run(TASK, session=session):
                if isinstance(step, FinalStep):
                    assert step.output == ANSWER, step
                    LAB.done(run_id)
            return
        except UncertainEffect as uncertain:
            # The run is let go when the error is raised: another worker may take it, meet the
            # same uncertain step and resolve it first. This one is then told there is nothing
            # left to resolve (as a second operator would be) and drives on.
            try:
                if LAB.effect_happened(run_id, uncertain.step_id):
                    await session.record_result(
                        uncertain.step_id, KNOWN_RESULTS[uncertain.tool], by="operadora"
                    )
                    LAB.resolved(run_id, uncertain.step_id, "record")
                else:
                    await session.allow_retry(uncertain.step_id, by="operadora")
                    LAB.resolved(run_id, uncertain.step_id, "retry")
            except NothingToResolve:
                pass  # resolved by another worker, and counted there


async def work(url: str, schema: str, in_order: bool) -> None:
    store = PostgresCheckpointer(url, schema=schema)
    while pending := LAB.pending():
        if not in_order:
            random.shuffle(pending)
        for run_id in pending:
            try:
                await drive(store, run_id)
            except RunBusy:
                LAB.busy(run_id)  # another worker drives it: move on
        await asyncio.sleep(0.005)  # what is left is held by others: look again soon
    await store.close()


def main(argv: list[str]) -> None:
    global LAB
    url, schema, worker, *flags = argv
    LAB = Lab(url, schema, worker)
    # the journal's connections carry the worker's name, so the tests see who holds what
    named = f"{url}{'&' if '?' in url else '?'}application_name={worker}"
    asyncio.run(work(named, schema, in_order="--in-order" in flags))


if __name__ == "__main__":
    main(sys.argv[1:])
