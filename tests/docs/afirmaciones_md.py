"""The checks of the claims on *Conceptos*, *Límites* and the glossary that no notebook shows.

Each function checks one claim id of those pages and raises `AssertionError` when the claim is
false; `tests/docs/test_afirmaciones.py` runs every one of them in the docs check. A claim a
notebook already measures carries that notebook's id instead, and needs nothing here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: id → the function that checks it.
AFIRMACIONES: dict[str, Callable[[], Any]] = {}


def afirmacion(claim: str) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    """Register the decorated function (sync or async) as the check of `claim`."""

    def register(function: Callable[[], Any]) -> Callable[[], Any]:
        assert claim not in AFIRMACIONES, f"{claim} is checked twice"
        AFIRMACIONES[claim] = function
        return function

    return register


#: id → the values its registered test returned, once run in this process (`run_registered`).
_RESULTS: dict[str, dict[str, Any]] = {}


def run_registered(claim: str) -> dict[str, Any]:
    """Run the registered test of `claim` once in this process (a coroutine to its end), and
    return the values it compared: the dict it returns, or {} (the claims check reads every
    number of the claim's sentences among them, `scripts/claims.py`)."""
    if claim not in _RESULTS:
        result = AFIRMACIONES[claim]()
        if inspect.iscoroutine(result):
            result = asyncio.run(result)
        _RESULTS[claim] = result if isinstance(result, dict) else {}
    return _RESULTS[claim]


# ── Helpers ──────────────────────────────────────────────────────────────────

import asyncio  # noqa: E402
import contextlib  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import sqlite3  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import tomllib  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

from synaptum_lite import (  # noqa: E402
    Agent,
    ConfigurationError,
    CorruptJournal,
    FinalStep,
    JournalError,
    MemoryCheckpointer,
    ModelResponse,
    ProviderError,
    Risk,
    Role,
    Session,
    SqliteCheckpointer,
    StepLimitExceeded,
    TextFragment,
    ToolStep,
    UnsupportedFormat,
    Verdict,
    load_events,
    tool,
)
from synaptum_lite.stores.transfer import (  # noqa: E402
    RefusedExport,
    export_run,
    import_run,
    import_runs,
    seal,
)
from synaptum_lite.testing import ScriptedGateway, calls, says  # noqa: E402
from tests.bounds import HANG  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _agent(*tools, **options) -> Agent:
    return Agent("a", model="m", instructions="Usa las herramientas.", tools=tools, **options)


async def _drive(agent: Agent, session: Session, task: str = "tarea") -> list:
    return [step async for step in agent.run(task, session=session)]


# ── Conceptos ────────────────────────────────────────────────────────────────


@afirmacion("conceptos.gateway-local")
async def _la_puerta_local_ejecuta_aqui_y_es_la_base() -> dict:
    from synaptum_lite import LocalGateway
    from synaptum_lite.gateways.axonium import AxoniumGateway
    from synaptum_lite.gateways.http import OpenAICompatibleGateway

    procesos = []

    @tool
    async def anota() -> str:
        """Apunta en qué proceso corre."""
        procesos.append(os.getpid())
        return "hecho"

    gateway = ScriptedGateway([calls("anota"), says("listo")], tools=[anota])
    steps = await _drive(_agent(anota), Session("r", gateway, MemoryCheckpointer()))
    assert procesos == [os.getpid()] and steps[-1].output == "listo"
    demas = (ScriptedGateway, OpenAICompatibleGateway, AxoniumGateway)
    assert all(issubclass(g, LocalGateway) and g is not LocalGateway for g in demas)
    return {"llamadas": len(procesos), "demas": len(demas)}


@afirmacion("conceptos.sin-resume")
def _reanudar_es_llamar_otra_vez() -> None:
    # No resume() and no option: run takes the task and the session, nothing else.
    assert not any(hasattr(Agent, name) for name in ("resume", "restart", "continue_run"))
    assert list(inspect.signature(Agent.run).parameters) == ["self", "task", "session"]


@afirmacion("conceptos.escribir-dos-veces")
async def _escribir_dos_veces_no_hace_nada() -> None:
    with tempfile.TemporaryDirectory() as folder:
        for store in (MemoryCheckpointer(), SqliteCheckpointer(Path(folder) / "runs.db")):
            gateway = ScriptedGateway([says("hola")])
            steps = await _drive(_agent(), Session("r", gateway, store))
            before = await store.load("r")
            await store.append("r", steps)  # the same events again, as a resume would
            assert (await store.load("r")).next_seq == before.next_seq == len(steps)
            assert [r.seq for r in await store.records("r")] == list(range(len(steps)))


@afirmacion("conceptos.configuracion-campos")
def _la_configuracion_es_lo_que_dice_la_pagina() -> None:
    assert set(_agent().configuration) == {
        "name",
        "model",
        "instructions",
        "tools",
        "output",
        "max_tool_output",
        "delegates",
    }


@afirmacion("conceptos.plantilla-y-muestreo")
def _plantilla_y_muestreo_entran_en_la_configuracion() -> None:
    from synaptum_lite import ModelRequest, Sampling
    from synaptum_lite.gateways.wire import request_body
    from tests.core import test_prompt

    test_prompt.test_a_template_is_filled_by_safe_rules_and_the_model_reads_the_filled_text()
    test_prompt.test_a_new_version_of_the_template_is_refused_by_name()
    test_prompt.test_a_text_changed_under_the_same_version_is_refused_by_name()
    test_prompt.test_a_changed_temperature_is_refused_by_name()
    with tempfile.TemporaryDirectory() as folder:
        byte_for_byte = test_prompt.test_an_agent_without_template_or_sampling_keeps_its_header_and_export_byte_for_byte  # noqa: E501
        byte_for_byte(Path(folder))
    # what the HTTP adapter sends (tests/http/test_sampling.py sees it arrive at a server)
    sampled = ModelRequest("m", (), (), Sampling(temperature=0.3, top_p=0.9, seed=7))
    assert request_body(sampled, None) == {
        "model": "m",
        "messages": [],
        "temperature": 0.3,
        "top_p": 0.9,
        "seed": 7,
    }


@afirmacion("conceptos.protocolos")
async def _cualquier_objeto_con_esos_metodos_sirve() -> None:
    class Puerta:  # inherits from nothing: it only has the methods
        def __init__(self) -> None:
            self.double = ScriptedGateway([says("hola")])

        async def complete(self, request):
            return await self.double.complete(request)

        def stream(self, request):
            return self.double.stream(request)

        async def call_tool(self, tool, arguments, context):
            return await self.double.call_tool(tool, arguments, context)

        def review(self, proposal):
            return self.double.review(proposal)

    class Almacen:  # the same for the checkpointer: every method handed to a real one
        def __init__(self) -> None:
            self.inner = MemoryCheckpointer()

        def __getattr__(self, name):
            return getattr(self.inner, name)

    assert Puerta.__mro__ == (Puerta, object) and Almacen.__mro__ == (Almacen, object)
    steps = await _drive(_agent(), Session("r", Puerta(), Almacen()))
    assert isinstance(steps[-1], FinalStep) and steps[-1].output == "hola"


@afirmacion("conceptos.otro-almacen")
async def _un_run_empezado_en_sqlite_termina_en_otro_almacen() -> None:
    @tool(risk=Risk.READ, idempotent=True)
    def saldo(cuenta: str) -> str:
        """Consulta un saldo."""
        return "4.200 €"

    def responder(request):
        done = any(m.role is Role.TOOL for m in request.messages)
        return says("Hay 4.200 €.") if done else calls("saldo", cuenta="ES91")

    with tempfile.TemporaryDirectory() as folder:
        sqlite = SqliteCheckpointer(Path(folder) / "runs.db")
        async for step in _agent(saldo).run(
            "tarea", session=Session("r", ScriptedGateway([responder] * 3), sqlite)
        ):
            if isinstance(step, ToolStep) and step.phase.value == "completed":
                break
        other = MemoryCheckpointer()
        await import_run(other, "\n".join(await export_run(sqlite, "r")) + "\n")
        gateway = ScriptedGateway([responder] * 3)
        steps = await _drive(_agent(saldo), Session("r", gateway, other))
        assert steps[-1].output == "Hay 4.200 €." and gateway.model_calls == 1
        assert gateway.tool_calls == 0


# ── Límites ──────────────────────────────────────────────────────────────────


@afirmacion("limites.sin-candados-posix")
def _sin_fcntl_sqlite_se_niega_con_configuration_error() -> None:
    program = (
        "import sys, asyncio, pathlib\n"
        "sys.modules['fcntl'] = None  # a platform without POSIX file locks\n"
        "import synaptum_lite as s\n"
        "from synaptum_lite.testing import ScriptedGateway, says\n"
        "store = s.SqliteCheckpointer(pathlib.Path(sys.argv[1]) / 'runs.db')\n"
        "agent = s.Agent('a', model='m', instructions='i')\n"
        "async def main():\n"
        "    try:\n"
        "        session = s.Session('r', ScriptedGateway([says('x')]), store)\n"
        "        async for _ in agent.run('t', session=session):\n"
        "            pass\n"
        "    except s.ConfigurationError as error:\n"
        "        print('ConfigurationError', 'MemoryCheckpointer' in str(error))\n"
        "asyncio.run(main())\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [sys.executable, "-c", program, folder], capture_output=True, text=True, cwd=REPO
        )
    assert done.stdout.strip() == "ConfigurationError True", done.stderr
    # Windows takes its own lock (msvcrt.locking), chosen by sys.platform; it cannot run here
    from unittest import mock

    from synaptum_lite.stores import runlock

    with mock.patch.object(sys, "platform", "win32"):
        assert runlock._lock_kind() == "windows"
    assert "msvcrt.locking" in inspect.getsource(runlock._windows_locking)


@afirmacion("limites.solo-stdlib")
def _el_nucleo_solo_usa_la_biblioteca_estandar() -> dict[str, Any]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    minimum = project["requires-python"].removeprefix(">=")
    assert minimum == "3.11", project["requires-python"]
    assert project.get("dependencies", []) == []
    program = (
        "import sys\nimport synaptum_lite, synaptum_lite.testing, synaptum_lite.stores.transfer\n"
        "outside = sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names)"
        " - {'synaptum_lite', '__main__'})\nprint(outside)"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", program], capture_output=True, text=True, cwd=REPO
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    return {"python": minimum}


@afirmacion("limites.herramientas-en-serie")
async def _las_herramientas_de_un_turno_corren_una_detras_de_otra() -> None:
    order: list[str] = []

    @tool(risk=Risk.READ, idempotent=True)
    async def primera(x: str) -> str:
        """Una."""
        order.append("primera empieza")
        await asyncio.sleep(0)
        order.append("primera acaba")
        return "1"

    @tool(risk=Risk.READ, idempotent=True)
    async def segunda(x: str) -> str:
        """Otra."""
        order.append("segunda empieza")
        await asyncio.sleep(0)
        order.append("segunda acaba")
        return "2"

    both = ModelResponse(
        text=None,
        tool_calls=(*calls("primera", x="a").tool_calls, *calls("segunda", x="b").tool_calls),
    )
    gateway = ScriptedGateway([both, says("hecho")], tools=[primera, segunda])
    await _drive(_agent(primera, segunda), Session("r", gateway, MemoryCheckpointer()))
    assert order == ["primera empieza", "primera acaba", "segunda empieza", "segunda acaba"]


@afirmacion("limites.herramienta-sincrona")
async def _una_herramienta_sincrona_corre_en_el_hilo_del_bucle() -> None:
    threads: list[int] = []

    @tool(risk=Risk.READ, idempotent=True)
    def lenta(x: str) -> str:
        """Síncrona."""
        threads.append(threading.get_ident())
        return "hecho"

    gateway = ScriptedGateway([calls("lenta", x="a"), says("ok")], tools=[lenta])
    await _drive(_agent(lenta), Session("r", gateway, MemoryCheckpointer()))
    assert threads == [threading.get_ident()]


@afirmacion("limites.sin-plazo")
async def _una_herramienta_que_no_vuelve_deja_el_paso_intentado() -> None:
    started = asyncio.Event()

    @tool(risk=Risk.HARD_WRITE)
    async def colgada(x: str) -> str:
        """No vuelve nunca."""
        started.set()
        await asyncio.Event().wait()
        return "nunca"

    store = MemoryCheckpointer()
    gateway = ScriptedGateway([calls("colgada", x="a")], tools=[colgada])
    steps = _agent(colgada).run("tarea", session=Session("r", gateway, store))
    received = [await anext(steps) for _ in range(3)]  # model ×2, the tool's attempted
    assert received[-1].phase.value == "attempted"
    waiting = asyncio.ensure_future(anext(steps))  # the loop runs the tool now, and waits
    await started.wait()
    assert [(r.step_id, r.phase) for r in await store.records("r")][-1] == (
        "000001-tool",
        "attempted",
    )
    waiting.cancel()
    with contextlib.suppress(asyncio.CancelledError, BaseException):
        await waiting
    assert [(r.step_id, r.phase) for r in await store.records("r")][-1] == (
        "000001-tool",
        "attempted",
    )


@afirmacion("limites.max-steps-turnos")
async def _un_turno_que_pide_varias_herramientas_es_un_turno() -> None:
    runs: list[str] = []

    @tool(risk=Risk.READ, idempotent=True)
    def mirar(x: str) -> str:
        """Mira."""
        runs.append(x)
        return x

    three = ModelResponse(
        text=None, tool_calls=tuple(c for x in "abc" for c in calls("mirar", x=x).tool_calls)
    )
    gateway = ScriptedGateway([three, three], tools=[mirar])
    try:
        await _drive(_agent(mirar, max_steps=1), Session("r", gateway, MemoryCheckpointer()))
    except StepLimitExceeded as limit:
        assert (limit.max_steps, gateway.model_calls, runs) == (1, 1, ["a", "b", "c"])
    else:
        raise AssertionError("max_steps=1 let a second turn happen")


@afirmacion("limites.tipada-dataclass")
def _la_respuesta_tipada_es_una_dataclass() -> None:
    @dataclass
    class Saldo:
        euros: float

    _agent(output=Saldo)
    for not_a_dataclass in (dict, Saldo(1.0), type("Modelo", (), {"euros": 1.0})):
        try:
            _agent(output=not_a_dataclass)
        except (ConfigurationError, TypeError, ValueError):
            continue
        raise AssertionError(f"output={not_a_dataclass!r} was accepted")


@afirmacion("limites.reintento-en-stream")
async def _un_reintento_durante_un_stream_vuelve_a_empezar_el_texto() -> None:
    class Proveedor:
        """Fails once half way through a stream, then streams the whole answer."""

        def __init__(self) -> None:
            self.double, self.calls = ScriptedGateway([says("hola mundo")] * 2), 0

        async def complete(self, request):
            return await self.double.complete(request)

        async def stream(self, request):
            self.calls += 1
            yield "hola "
            if self.calls == 1:
                raise ProviderError("cortado", retryable=True, status=503)
            yield "mundo"
            yield ModelResponse(text="hola mundo", tool_calls=())

        async def call_tool(self, tool, arguments, context):
            return await self.double.call_tool(tool, arguments, context)

        def review(self, proposal):
            return self.double.review(proposal)

    async def no_wait(seconds: float) -> None:
        pass

    store = MemoryCheckpointer()
    session = Session("r", Proveedor(), store, sleep=no_wait)
    steps = [s async for s in _agent().stream("tarea", session=session)]
    fragments = [(s.text, s.call) for s in steps if isinstance(s, TextFragment)]
    assert fragments == [("hola ", 1), ("hola ", 2), ("mundo", 2)]  # call 2 starts again
    shown, last = "", 1
    for text, call in fragments:  # what a reader shows, starting again when `call` goes up
        shown = (shown if call == last else "") + text
        last = call
    assert shown == "hola mundo"
    texts = [e.response.text for e in await load_events(store, "r") if getattr(e, "response", None)]
    assert texts == ["hola mundo"]


@afirmacion("limites.subagente-sin-aprobacion")
async def _un_subagente_no_puede_pedir_aprobacion() -> None:
    @tool(risk=Risk.DESTRUCTIVE)
    def borrar(x: str) -> str:
        """Borra."""
        return "borrado"

    hijo = Agent("hijo", model="m", instructions="Borra.", tools=[borrar], description="Borra.")
    padre = Agent("padre", model="m", instructions="Delega.", delegates=[hijo])

    def responder(request):
        if request.messages[0].content.startswith(hijo.instructions):
            return calls("borrar", x="a")
        return calls("hijo", task="borra a")

    def policy(proposal):  # the tool inside the sub-run, not the delegation, needs a signature
        if proposal.kind == "tool" and proposal.risk is Risk.DESTRUCTIVE:
            return Verdict.require_approval("firma")
        return Verdict.allow()

    gateway = ScriptedGateway([responder] * 4, tools=[borrar], policy=policy)
    try:
        await _drive(padre, Session("r", gateway, MemoryCheckpointer()))
    except ConfigurationError as error:
        assert "approval" in str(error)
    else:
        raise AssertionError("a sub-run asked for an approval and the run went on")


@afirmacion("limites.subrun-en-el-mismo-almacen")
async def _el_subrun_va_en_el_almacen_del_padre_y_se_exporta_con_el() -> None:
    store, exported = await _a_run_with_a_sub_run()
    assert (await store.load("p/000001-delegate")).closed
    lines = [json.loads(line) for line in exported]
    assert {line["run_id"] for line in lines if "run_id" in line} == {"p", "p/000001-delegate"}


@afirmacion("limites.politica-y-modelo")
async def _a_una_llamada_al_modelo_no_se_la_puede_denegar() -> None:
    for verdict in (Verdict.deny("no"), Verdict.require_approval("firma")):
        gateway = ScriptedGateway([says("hola")], policy=lambda proposal, v=verdict: v)
        try:
            await _drive(_agent(), Session("r", gateway, MemoryCheckpointer()))
        except ConfigurationError:
            assert gateway.model_calls == 0
        else:
            raise AssertionError(f"{verdict.action.value} on a model call was accepted")


@afirmacion("limites.no-se-borra")
def _ningun_checkpointer_olvida_un_run() -> None:
    from synaptum_lite import Checkpointer, PostgresCheckpointer

    forgetting = ("delete", "forget", "expire", "purge", "drop", "remove", "prune")
    for kind in (Checkpointer, MemoryCheckpointer, SqliteCheckpointer, PostgresCheckpointer):
        public = [name for name in dir(kind) if not name.startswith("_")]
        assert not [n for n in public if n.startswith(forgetting)], (kind, public)


def _raw_data(database: Path) -> list:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        return [row[0] for row in connection.execute("SELECT data FROM events ORDER BY rowid")]


@afirmacion("limites.no-cifrado")
async def _el_journal_se_guarda_como_json_legible() -> None:
    @tool(risk=Risk.READ, idempotent=True)
    def secreto(x: str) -> str:
        """Devuelve algo."""
        return "la clave es 1234"

    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "runs.db"
        gateway = ScriptedGateway([calls("secreto", x="a"), says("vale")], tools=[secreto])
        await _drive(_agent(secreto), Session("r", gateway, SqliteCheckpointer(database)))
        assert any(isinstance(d, str) and "la clave es 1234" in d for d in _raw_data(database))


@afirmacion("limites.comprimidos")
async def _en_sqlite_un_registro_grande_va_comprimido() -> dict[str, Any]:
    import zlib

    threshold = 512  # bytes: a record this long is compressed, one byte shorter is not

    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "runs.db"
        store = SqliteCheckpointer(database)
        # an answer of 400 characters is kept as text: what the journal adds around it
        await _drive(_agent(), Session("medida", ScriptedGateway([says("x" * 400)]), store))
        around = len(_raw_data(database)[-2]) - 400  # the answer is the event before the final
        answers = {
            "largo " * 200: True,
            "x" * (threshold - around): True,
            "x" * (threshold - 1 - around): False,
        }
        for number, (text, compressed) in enumerate(answers.items()):
            gateway = ScriptedGateway([says(text)])
            await _drive(_agent(), Session(f"r{number}", gateway, store))
            stored = _raw_data(database)[-2]
            assert isinstance(stored, bytes) is compressed, (len(text), stored)
            if compressed:
                assert text[:20] in zlib.decompress(stored).decode()
            events = await load_events(store, f"r{number}")
            assert [e.response.text for e in events if getattr(e, "response", None)] == [text]
    return {"umbral_en_bytes": threshold}


@afirmacion("limites.formato-nuevo")
async def _un_journal_de_un_formato_mas_nuevo_se_rechaza_sin_tocarlo() -> None:
    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "runs.db"
        await _drive(
            _agent(), Session("r", ScriptedGateway([says("hola")]), SqliteCheckpointer(database))
        )
        with contextlib.closing(sqlite3.connect(database)) as connection:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            connection.execute(f"PRAGMA user_version = {version + 1}")
            connection.commit()
        before = database.read_bytes()
        try:
            await SqliteCheckpointer(database).load("r")
        except UnsupportedFormat as error:
            assert error.found == version + 1
        else:
            raise AssertionError("a newer format was read")
        assert database.read_bytes() == before


@afirmacion("limites.cambio-a-mano")
async def _un_cambio_a_mano_que_sigue_siendo_json_no_se_detecta_al_leer() -> None:
    store = MemoryCheckpointer()
    await _drive(_agent(), Session("r", ScriptedGateway([says("hola")]), store))
    lines = await export_run(store, "r")
    edited, broken = MemoryCheckpointer(), MemoryCheckpointer()
    # edited on purpose, its digest chain computed again (seal): the import takes it
    await import_run(edited, seal(line.replace("hola", "adiós") for line in lines))
    steps = await _drive(_agent(), Session("r", ScriptedGateway([]), edited))
    assert steps[-1].output == "adiós"  # read as if it had been said
    final = json.loads(lines[-1])
    final["data"] = "{no es json"
    try:  # refused on import, or on reading: either way it names the run and the record
        await import_run(broken, seal([*lines[:-1], json.dumps(final)]))
        await load_events(broken, "r")
    except CorruptJournal as error:
        assert (error.run_id, error.seq) == ("r", final["seq"])
    else:
        raise AssertionError("an unreadable record was read")


async def _a_run_with_a_sub_run() -> tuple[MemoryCheckpointer, list[str]]:
    """A closed run `p` that delegated once (its sub-run `p/000001-delegate`), and its export."""
    hijo = Agent("hijo", model="m", instructions="Contesta.", description="Contesta.")
    padre = Agent("padre", model="m", instructions="Delega.", delegates=[hijo])

    def responder(request):
        if request.messages[0].content.startswith(hijo.instructions):
            return says("hecho")
        if any(m.role is Role.TOOL for m in request.messages):
            return says("listo")
        return calls("hijo", task="hazlo")

    store = MemoryCheckpointer()
    await _drive(padre, Session("p", ScriptedGateway([responder] * 4), store))
    return store, await export_run(store, "p")


async def _refused(lines, key: bytes | None = None) -> RefusedExport:
    """The import of `lines` into an empty store, which must refuse them and write nothing."""
    target = MemoryCheckpointer()
    try:
        await import_runs(target, lines, key=key)
    except RefusedExport as error:
        assert "nothing was imported" in str(error)
        assert await target.run_ids() == [], "a refused import wrote a run"
        return error
    raise AssertionError("the import took an export it should refuse")


def _cli(*arguments: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "synaptum_lite", *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=HANG,  # only ends a hang
    )


@afirmacion("limites.exportacion-encadenada")
async def _una_exportacion_cambiada_se_rechaza_nombrando_el_evento() -> None:
    _, lines = await _a_run_with_a_sub_run()
    sub = next(n for n, line in enumerate(lines) if n and "synaptum_lite" in json.loads(line))
    head, events, sub_run = lines[0], lines[1:sub], lines[sub:]  # the run, then its sub-run
    last = json.loads(events[-1])
    changed = [head, *events[:-1], events[-1].replace("listo", "otra cosa"), *sub_run]
    removed = [head, events[0], *events[2:], *sub_run]
    added = [head, *events, json.dumps(last | {"seq": last["seq"] + 1}), *sub_run]
    for lied, seq in ((changed, last["seq"]), (removed, 1), (added, last["seq"] + 1)):
        error = await _refused(lied)
        assert (error.run_id, error.seq) == ("p", seq), str(error)
        assert "digest chain" in str(error) and f"event {seq}" in str(error), str(error)
    # without a key the chain proves nothing about who wrote it: anyone recomputes it
    await import_runs(MemoryCheckpointer(), seal(changed))
    # with a key, on export and on import (--key-file), the signature does
    with tempfile.TemporaryDirectory() as folder:
        database, key = Path(folder) / "runs.db", Path(folder) / "clave"
        key.write_bytes(b"una clave secreta\n")
        await _drive(
            _agent(), Session("r", ScriptedGateway([says("hola")]), SqliteCheckpointer(database))
        )
        signed = _cli("export", str(database), "r", "--key-file", str(key))
        assert signed.returncode == 0, signed.stderr
        resealed = "\n".join(seal(signed.stdout.replace("hola", "adiós"))) + "\n"
        for export, imported in ((signed.stdout, True), (resealed, False)):
            copy = Path(folder) / f"copia-{imported}.db"
            done = _cli("import", str(copy), "--key-file", str(key), stdin=export)
            assert (done.returncode == 0) is imported, done.stderr
        assert "not signed" in done.stderr and "nothing was imported" in done.stderr, done.stderr


@afirmacion("escalar.importacion")
async def _una_importacion_escribe_solo_su_run_y_comprueba_la_cadena() -> None:
    store, lines = await _a_run_with_a_sub_run()
    # the run and its own sub-run, nothing else; twice changes nothing
    target = MemoryCheckpointer()
    written = await import_runs(target, lines)
    assert [(w.run_id, w.new > 0) for w in written] == [("p", True), ("p/000001-delegate", True)]
    assert [w.new for w in await import_runs(target, lines)] == [0, 0]
    # over another journal under the same run_id: refused, nothing written
    other = MemoryCheckpointer()
    await _drive(_agent(), Session("p", ScriptedGateway([says("hola")]), other))
    before = await other.records("p")
    try:
        await import_runs(other, lines)
    except JournalError as error:
        assert "nothing was imported" in str(error), str(error)
    else:
        raise AssertionError("an import wrote over another journal with the same run_id")
    assert await other.records("p") == before
    assert await other.run_ids() == ["p"]
    await _drive(_agent(), Session("otro", ScriptedGateway([says("hola")]), store))
    stranger = await export_run(store, "otro")
    error = await _refused(seal([*lines, *stranger]))  # even with its chain made whole again
    assert error.run_id == "otro" and "'otro'" in str(error), str(error)
    # the chain is checked: an event changed in the sub-run, named
    changed = [*lines[:-1], lines[-1].replace("hecho", "otra cosa")]
    error = await _refused(changed)
    assert error.run_id == "p/000001-delegate" and "digest chain" in str(error), str(error)
    # signed with a key: refused unsigned or with another key, taken with the right one
    key = b"clave"
    await import_runs(MemoryCheckpointer(), await export_run(store, "p", key=key), key=key)
    assert "not signed" in str(await _refused(lines, key=key))
    other = await export_run(store, "p", key=b"otra")
    assert "signature does not match" in str(await _refused(other, key=key))
    # an export from before the chain: refused, saying to export it again
    old = []
    for line in lines:
        value = json.loads(line)
        for field in ("head", "chain", "signature"):
            value.pop(field, None)
        old.append(json.dumps(value))
    assert "export the run again with this version" in str(await _refused(old))


#: The sentence that says Windows is type-checked and not run, on Límites and in the README.
WINDOWS_NOT_RUN = "revisado por tipos, no ejecutado"
_RUN_VERB = re.compile(r"\b(?:lo corre|corre|se ejecuta|ejecuta|se prueba|pasa)\b")


def windows_problems(workflow: str, pages: dict[str, list[str]]) -> list[str]:
    """What the blocks claiming `limites.windows-sin-correr` (page → their words) say wrong
    about Windows, given the CI workflow: while its Windows job may fail (continue-on-error),
    every one says `WINDOWS_NOT_RUN` and no sentence says Windows runs; once it counts, none
    says it is not run."""
    import yaml

    job = yaml.safe_load(workflow)["jobs"]["portable"]
    on_windows = "windows-latest" in job["strategy"]["matrix"]["os"]
    excused = job.get("continue-on-error")
    may_fail = excused is True or (isinstance(excused, str) and "windows" in excused)
    problems = []
    for page, blocks in pages.items():
        if not blocks:
            problems.append(f"{page} no longer says how far Windows is checked")
        for words in blocks:
            says_not_run = WINDOWS_NOT_RUN in words
            if may_fail or not on_windows:
                if not says_not_run:
                    problems.append(f"{page} does not say «{WINDOWS_NOT_RUN}»: «{words}»")
                for sentence in re.split(r"(?<=[.:;])\s", words):
                    if "Windows" not in sentence:
                        continue
                    for verb in _RUN_VERB.finditer(sentence):
                        before = sentence[: verb.start()]
                        if not re.search(r"\b(?:no|nunca|no se)\s+$", before):
                            problems.append(
                                f"{page} says Windows runs («{sentence.strip()}»), and the "
                                "Windows CI job may fail without failing the workflow"
                            )
                            break  # one problem per sentence
            elif says_not_run:
                problems.append(
                    f"{page} says Windows is not run, and the Windows CI job now counts: say "
                    "that it runs"
                )
    return problems


def windows_blocks() -> dict[str, list[str]]:
    """The words of every block claiming `limites.windows-sin-correr`: Límites and README."""
    from scripts.claims import other_page_claim_blocks, page_claim_blocks

    found = {"docs/limites.md": [], "README.md": []}
    for path, read in (
        (REPO / "docs" / "limites.md", page_claim_blocks),
        (REPO / "README.md", other_page_claim_blocks),
    ):
        for block in read(path):
            if "limites.windows-sin-correr" in block.ids:
                found[relative_to_repo(path)].append(block.words)
    return found


def relative_to_repo(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


@afirmacion("limites.windows-sin-correr")
def _windows_se_revisa_por_tipos_y_no_se_ejecuta() -> None:
    workflow = (REPO / ".github" / "workflows" / "tests.yml").read_text(encoding="utf-8")
    problems = windows_problems(workflow, windows_blocks())
    assert problems == [], "\n".join(problems)
    assert "--platform win32" in (REPO / ".ci" / "run").read_text(encoding="utf-8")


@afirmacion("limites.consumo-del-doble")
async def _el_doble_cuenta_un_token_por_cada_cuatro_caracteres() -> None:
    gateway = ScriptedGateway([says("x" * 40)])
    steps = await _drive(_agent(), Session("r", gateway, MemoryCheckpointer()))
    usage = steps[-1].usage
    assert (usage.output_tokens, usage.cached_tokens) == (10, None)


# ── Glosario ─────────────────────────────────────────────────────────────────


@afirmacion("glosario.backoff")
def _el_backoff_dobla_cada_vez_con_un_factor_al_azar() -> None:
    from synaptum_lite import RetryPolicy

    fixed = RetryPolicy(max_attempts=6, base=0.5, cap=30.0, random=lambda: 1.0)
    assert [fixed.delay(n, None) for n in range(1, 6)] == [0.5, 1.0, 2.0, 4.0, 8.0]
    # the factor is between 0.5 and 1: random() == 0 halves each wait
    halved = RetryPolicy(max_attempts=6, base=0.5, cap=30.0, random=lambda: 0.0)
    assert [halved.delay(n, None) for n in range(1, 4)] == [0.25, 0.5, 1.0]
    assert fixed.delay(1, 7.0) == 7.0  # what the provider asks for (Retry-After), up to cap


@afirmacion("glosario.fases")
def _las_fases_se_guardan_en_ingles_y_se_imprimen_en_espanol() -> None:
    import importlib

    from synaptum_lite import Phase

    sys.path.insert(0, str(REPO / "notebooks"))
    try:
        comun = importlib.import_module("comun")
    finally:
        sys.path.remove(str(REPO / "notebooks"))
    assert {phase.value for phase in Phase} == {"attempted", "completed", "resolved"}
    assert comun.FASES == {
        "attempted": "intentado",
        "completed": "completado",
        "resolved": "resuelto",
    }


@afirmacion("conceptos.no-empezada")
async def _dejar_de_iterar_antes_de_una_herramienta_la_deja_no_empezada() -> None:
    done: list[str] = []

    @tool(risk=Risk.HARD_WRITE)
    def pagar(importe: float) -> str:
        """Paga."""
        done.append("pago")
        return "pagado"

    def responder(request):
        paid = any(m.role is Role.TOOL for m in request.messages)
        return says("hecho") if paid else calls("pagar", importe=10.0)

    store = MemoryCheckpointer()
    session = Session("r", ScriptedGateway([responder] * 3, tools=[pagar]), store)
    async with contextlib.aclosing(_agent(pagar).run("tarea", session=session)) as steps:
        async for step in steps:
            if isinstance(step, ToolStep) and step.phase.value == "attempted":
                break  # the tool has not begun: this process knows it, and says so
    assert done == []
    again = ScriptedGateway([responder] * 3, tools=[pagar])
    final = (await _drive(_agent(pagar), Session("r", again, store)))[-1]
    assert (final.output, done) == ("hecho", ["pago"])  # ran once, nobody was asked


@afirmacion("limites.un-candado-por-fichero")
async def _cualquier_nombre_del_fichero_llega_al_mismo_candado_y_un_enlace_duro_se_rechaza() -> (
    None
):
    import os

    from synaptum_lite import RunBusy

    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "runs.db"
        await _drive(
            _agent(), Session("r", ScriptedGateway([says("hola")]), SqliteCheckpointer(database))
        )
        (Path(folder) / "enlace.db").symlink_to(database)
        async with SqliteCheckpointer(database).hold("r"):
            try:
                async with SqliteCheckpointer(Path(folder) / "enlace.db").hold("r"):
                    raise AssertionError("a second name of the file took the run's lock")
            except RunBusy:
                pass
        os.link(database, Path(folder) / "duro.db")
        for name in ("runs.db", "duro.db"):
            try:
                async with SqliteCheckpointer(Path(folder) / name).hold("r"):
                    raise AssertionError(f"{name}, with two hard links, was driven")
            except ConfigurationError as error:
                assert "hard link" in str(error)


# ── Figuras ──────────────────────────────────────────────────────────────────


@afirmacion("figuras.fila-del-journal")
def _una_fila_de_events_es_la_clave_del_evento_su_posicion_y_su_json() -> None:
    # the very row docs/diagramas/fila.svg shows, journaled by the script that draws it
    from scripts.diagramas import journaled_row

    row = journaled_row()
    assert (row["step_id"], row["phase"], row["attempt"]) == ("000001-tool", "completed", 1)
    assert row["seq"] == 3, "the 4th event of the run, at position 3"
    assert row["typeof_data"] == "text" and json.loads(row["data"]) == {"content": "4.200,00 €"}
    assert row["run_id"] == "saldo-es91" and row["next_seq"] == 4


@afirmacion("cuadernos.los-que-matan")
def _los_cuadernos_que_matan_un_proceso_son_los_que_nombran_las_paginas() -> None:
    # 06 names the other notebooks that kill a real process, Límites all of them; which ones
    # do is read from the notebooks and their helper processes (notebooks_that_kill)
    from scripts.pages import notebooks_named, notebooks_that_kill, read_notebook, source_of

    kill = notebooks_that_kill()
    notebook = read_notebook(REPO / "notebooks" / "propiedades" / "06_kill_9.ipynb")
    in_06 = " ".join(
        source_of(cell) for cell in notebook["cells"] if cell["cell_type"] == "markdown"
    )
    in_limites = (REPO / "docs" / "limites.md").read_text(encoding="utf-8")
    for where, text, pattern, expected in (
        ("06", in_06, r"matan procesos de verdad \(([^)]*)\)", [n for n in kill if n != "06"]),
        ("Límites", in_limites, r"Los cuadernos ([\d, y]+) matan procesos", kill),
    ):
        named = notebooks_named(pattern, text)
        assert named is not None, f"{where} no longer says which notebooks kill a process"
        assert named == expected, (where, named, expected)


@afirmacion("probar.grabaciones")
def _las_grabaciones_pasan_por_el_adaptador_como_en_vivo() -> dict[str, Any]:
    import json

    from scripts import grabaciones
    from synaptum_lite import Message, ModelRequest
    from synaptum_lite.gateways.recording import RecordingGateway, SecretInRecording
    from synaptum_lite.gateways.replay import RecordingMismatch, ReplayGateway

    files = sorted(grabaciones.FOLDER.glob("*.jsonl"))
    results = json.loads((grabaciones.FOLDER / grabaciones.RESULTS).read_text("utf-8"))
    assert [f.stem for f in files] == sorted(grabaciones.ESCENAS) and len(files) == 7
    for scene in grabaciones.ESCENAS:
        assert grabaciones.replay(scene) == results[scene], scene  # what it gave live
    streamed = json.loads((grabaciones.FOLDER / "stream.jsonl").read_text("utf-8").split("\n")[1])
    assert len(streamed["response"]["chunks"]) > 1  # the stream's cuts, as they came
    statuses = sorted({r["error"]["status"] for r in results.values() if "error" in r})
    assert statuses == [400, 404] and results["error_400_stream"]["error"]["status"] == 400
    assert results["agente"]["tool_runs"] and results["stream_herramienta"]["response"]["calls"]
    for file in files:
        assert "authorization" not in file.read_text("utf-8").lower(), file
    other = grabaciones.TEXTO.messages[0], Message(Role.USER, "otra")
    replay = ReplayGateway(grabaciones.FOLDER / "texto.jsonl")
    try:
        asyncio.run(replay.complete(ModelRequest(grabaciones.MODEL, other)))
    except RecordingMismatch as mismatch:
        assert (mismatch.index, mismatch.where) == (0, "$.messages[1].content")
    else:
        raise AssertionError("a changed request was replayed")
    key = "sk-una-clave-de-prueba-0123"
    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / "r.jsonl"
        recorder = RecordingGateway("http://127.0.0.1:9/v1", file, api_key=key)
        leaky = ModelRequest(grabaciones.MODEL, (Message(Role.USER, f"mi clave: {key}"),))
        try:
            asyncio.run(recorder.complete(leaky))
        except SecretInRecording:
            assert key not in file.read_text("utf-8") and len(file.read_text().splitlines()) == 1
        else:
            raise AssertionError("an exchange holding the key was recorded")
    return {"errores": statuses, "grabaciones": len(files)}
