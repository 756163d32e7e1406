"""Pruébalo: every experiment a notebook proposes, run the way its page says, and its promise
checked.

Each property notebook ends with *Pruébalo* (Markdown, id `pruebalo`): one to three
experiments a learner can do, each a list item that names the change (a value of the
`parameters` cell, or one line of a named cell) and what the learner will then see, with a
claim id. After it come only code cells: any the experiments need (14 starts a process that
dies there), and last `comprobar-pruebalo`, whose `comun.afirma` checks each promise for
whatever value the notebook was given. The docs check runs it with the notebook as it is
(where a promise has another side, that side; where the experiment is off, nothing to
measure); this file runs each experiment:

- the notebook with that change, through papermill in the notebook's folder (as
  `test_parametros.py` does; a changed line is written into a copy first), with the variable
  `AFIRMACIONES_COMPROBADAS` pointing at a folder of its own;
- it must run to the end, and the experiment's claim must have been checked, and held, by the
  notebook's own `afirma` in *that* run (or, where the promise is that the change stops the
  notebook, as 05's tool that is not idempotent stops the resume, it must stop in that cell
  with that exception, whose message is then part of what the run shows);
- every fragment it promises (`se_ve`) must be written in the item and printed by the run, and
  at least one of them must not be printed by the notebook as it is: an experiment shows a
  change, and the words cannot promise what the runtime does not print;
- the item must name the change, as the learner would type it.

The experiments run four at a time, each in its own process (papermill changes the working
directory of the process that calls it), as `test_parametros.py` does: a kernel often waits on
a child process or a file, so four keep two cores busy. `-k` runs only the experiments of the
tests it selects.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from scripts.claims import (
    RECORD_FOLDER_VARIABLE,
    VERIFICATION_TAG,
    cell_blocks,
    cell_map,
    read_recorded,
)
from scripts.pages import (
    NOTEBOOKS,
    expected_block,
    property_notebooks,
    source_of,
)

from .papermill_runs import execute, in_the_session, notebook, on_the_double, run_folder

#: The ids of the Markdown cell of the experiments and of the code cell every property
#: notebook ends with, the one that checks them.
PRUEBALO_CELL = "pruebalo"
CHECK_CELL = "comprobar-pruebalo"


@dataclass(frozen=True)
class Experimento:
    claim: str  # "03.pruebalo-deniega": the item's id, and the notebook's number
    parametros: dict[str, Any] = field(default_factory=dict)  # as with papermill -p
    linea: tuple[str, str, str] | None = None  # (cell id, the line as it is, the line changed)
    #: (cell id, exception): where the change stops the notebook, when that is the promise
    #: (05: a tool that is not idempotent stops the resume with UncertainEffect).
    se_para: tuple[str, str] | None = None
    se_ve: tuple[str, ...] = ()  # what the run prints, word for word, as the item quotes it
    #: More checks on the run, for what printing cannot show (files, processes).
    comprueba: Callable[[Resultado], None] | None = None

    @property
    def cuaderno(self) -> str:
        return self.claim.split(".")[0]

    @property
    def cambio(self) -> list[str]:
        """How the item names the change: `concede = False`, or the changed line."""
        if self.linea:
            return [self.linea[2].strip()]
        return [f"{name} = {value!r}" for name, value in self.parametros.items()]


EXPERIMENTOS = [
    Experimento(
        "00.pruebalo-otro-run-id",
        linea=(
            "reanudar",
            "sesion = Session(run_id, puerta, SqliteCheckpointer(almacen))",
            'sesion = Session(f"{run_id}-otro", puerta, SqliteCheckpointer(almacen))',
        ),
        se_para=("afirmaciones", "AssertionError"),
        se_ve=("modelo ×2 · herramienta ×1", "la reanudación volvió a pagar"),
    ),
    Experimento(
        "01.pruebalo-otro-saldo",
        linea=("herramientas", 'return "4.200,00 €"', 'return "1.000,00 €"'),
        se_ve=(
            "convertir(importe=1000.0, moneda='USD')",
            "Hay 1.000,00 € en la cuenta, unos 1080.00 USD.",
        ),
    ),
    Experimento(
        "02.pruebalo-otro-run-id",
        linea=(
            "segunda-vuelta",
            "async for paso in agente.run(tarea, session=Session(run_id, otra_puerta, otro_checkpointer)):",  # noqa: E501
            'async for paso in agente.run(tarea, session=Session(f"{run_id}-otro", otra_puerta, otro_checkpointer)):',  # noqa: E501
        ),
        se_para=("segunda-vuelta", "AssertionError"),
        se_ve=("modelo ×2 · herramienta ×1", "un paso del journal no volvió del journal"),
    ),
    Experimento(
        "03.pruebalo-deniega",
        parametros={"concede": False},
        se_ve=(
            "denegada por marta",
            "transferencias ×0",
            "No he transferido nada: denied by marta: el cliente no la reconoce.",
            "preguntas ×0",
        ),
    ),
    Experimento(
        "04.pruebalo-trozos",
        linea=(
            "corte",
            "puerta = gateway(guion(), chunk_size=8)",
            "puerta = gateway(guion(), chunk_size=16)",
        ),
        se_ve=("«Es el registro de un run: cada paso, escrito ant»", "000000-model intentado"),
    ),
    Experimento(
        "05.pruebalo-no-idempotente",
        linea=(
            "herramientas",
            "@tool(risk=Risk.READ, idempotent=True)",
            "@tool(risk=Risk.READ, idempotent=False)",
        ),
        se_para=("consulta", "UncertainEffect"),
        se_ve=("UncertainEffect: run 'incierto-2', step 000001-tool: tool 'consultar_saldo'",),
    ),
    Experimento(
        "06.pruebalo-operadora",
        linea=(
            "operadora",
            "apunte = efecto_apuntado(sitio, incierto.tool, incierto.arguments)",
            "apunte = None",
        ),
        se_para=("totales", "AssertionError"),
        se_ve=(
            "dentro de transferir 7 4 1 2 1 igual allow_retry",
            "dentro de transferir: efecto repetido",
        ),
    ),
    Experimento(
        "07.pruebalo-corte",
        linea=(
            "run-a-medias",
            'if paso.kind == "tool" and paso.phase.value == "completed":',
            'if paso.kind == "model" and paso.phase.value == "completed":',
        ),
        se_ve=("journal: 2 eventos", "ConfigurationChanged · fields ['tools']"),
    ),
    Experimento(
        "21.pruebalo-sin-v1",
        linea=("fijar", "en_el_trabajador = [v1, v2]", "en_el_trabajador = [v2]"),
        se_para=("fijar", "VersionNotHeld"),
        se_ve=("runs on 'cajero' version 'v1'; the agents held are 'cajero' version 'v2'",),
    ),
    Experimento(
        "08.pruebalo-otro-almacen",
        linea=(
            "b-reanuda",
            "trabajador.TAREA, session=Session(run_id, puerta, SqliteCheckpointer(almacen))",
            'trabajador.TAREA, session=Session(run_id, puerta, SqliteCheckpointer(carpeta / "otro.db"))',  # noqa: E501
        ),
        se_para=("b-reanuda", "AssertionError"),
        se_ve=(
            "transferir ×2 (hecha por A, hecha por B)",
            "una transferencia ocurrió dos veces (o ninguna)",
        ),
    ),
    Experimento(
        "09.pruebalo-tope-cero",
        parametros={"tope": 0},
        se_ve=(
            "0 y la nota del runtime: [… 1679 characters omitted]",
            "los mismos bytes: sí",
        ),
    ),
    Experimento(
        "10.pruebalo-retry-after",
        parametros={"retry_after": 12.5},
        se_ve=(
            "12,5 s (lo que pidió Retry-After)",
            "1,0 s (backoff tras el 2º intento: 0,5 · 2¹)",
        ),
    ),
    Experimento(
        "11.pruebalo-bajar",
        parametros={"mas_pasos": 2},
        se_ve=(
            "con max_steps 2",
            "StepLimitExceeded en 000005-tool",
            "modelo ×0 · herramienta ×0: los turnos nuevos",
        ),
    ),
    Experimento(
        "12.pruebalo-otro-motivo",
        linea=("guion", '"noches": "tres"', '"noches": 3.5'),
        se_ve=(
            "output.noches must be integer, got 3.5",
            "respuestas que no valían: 1 (pagadas igual)",
        ),
    ),
    Experimento(
        "13.pruebalo-tarea",
        linea=(
            "agente",
            'tarea = "¿Cuánto suman las cuentas ES11 y ES22?"',
            'tarea = "¿Cuánto suman las cuentas ES11 y ES22, en euros?"',
        ),
        se_ve=("000000-model 35 5 sin medir —", "total 131 20 sin medir"),
    ),
    Experimento(
        "14.pruebalo-dentro",
        parametros={"muere_en": "dentro"},
        se_ve=(
            "muere con SIGKILL",
            "000001-delegate intentado",
            "000001-tool intentado · completado",
            "modelo ×2 (padre 1 · hijo 1) · buscar_vuelos ×0",
            "lo mismo que sin morir",
        ),
    ),
    Experimento(
        "14.pruebalo-despues",
        parametros={"muere_en": "despues"},
        se_ve=(
            "000001-delegate intentado · completado",
            "del subrun: 7 eventos",
            "modelo ×1 (padre 1 · hijo 0) · buscar_vuelos ×0",
        ),
    ),
    Experimento(
        "14.pruebalo-antes",
        parametros={"muere_en": "antes"},
        se_ve=("sin eventos", "modelo ×3 (padre 1 · hijo 2) · buscar_vuelos ×1"),
    ),
    Experimento(
        "15.pruebalo-denegar",
        linea=(
            "politica",
            'return Verdict.terminate("borrar correos no se hace desde un agente")',
            'return Verdict.deny("borrar correos no se hace desde un agente")',
        ),
        se_ve=(
            "denied by policy: borrar correos no se hace desde un agente",
            "reason=None",
            "vaciar_buzon ×0",
        ),
    ),
    Experimento(
        "15.pruebalo-riesgo",
        linea=("herramientas", "@tool(risk=Risk.DESTRUCTIVE)", "@tool(risk=Risk.SOFT_WRITE)"),
        se_para=("terminar", "AssertionError"),
        se_ve=("vaciar_buzon ×1",),
    ),
    Experimento(
        "16.pruebalo-a-mano",
        linea=(
            "importar",
            'await import_run(destino, exportacion.read_text(encoding="utf-8"))',
            'await import_run(destino, exportacion.read_text(encoding="utf-8").replace("12 en stock", "2 en stock"))',  # noqa: E501
        ),
        se_para=("importar", "RefusedExport"),
        se_ve=(
            "RefusedExport: the export does not match its digest chain at run 'pedido-1': "
            "event 3 (000001-tool completed)",
            "nothing was imported",
        ),
    ),
    Experimento(
        "16.pruebalo-sellado",
        linea=(
            "importar",
            'await import_run(destino, exportacion.read_text(encoding="utf-8"))',
            'await import_run(destino, seal(exportacion.read_text(encoding="utf-8").replace("12 en stock", "2 en stock")))',  # noqa: E501
        ),
        se_para=("importar", "ReplayDivergence"),
        se_ve=(
            "ReplayDivergence: run 'pedido-1' diverges from its journal at step 000002-model",
            "nothing was executed",
        ),
    ),
    Experimento(
        "17.pruebalo-idempotente",
        parametros={"muere_dentro": "asignar"},
        se_ve=(
            "asignar es idempotente, según el servidor: se llama otra vez, sin preguntar a nadie",
            "asignar ×2",
        ),
    ),
    Experimento(
        "18.pruebalo-el-primero",
        parametros={"muere_en": 1},
        se_ve=("dentro de la transferencia de cliente-1",),
    ),
    Experimento(
        "18.pruebalo-ocho",
        parametros={"cuantos": 8},
        se_ve=("8 runs · modelo ×3 y transferir ×1 en cada uno",),
    ),
    Experimento(
        "19.pruebalo-al-enviar",
        parametros={"muere": "al-enviar"},
        se_ve=(
            "con el mensaje ya enviado y su id aún sin escribir",
            "encontrada por el id de su mensaje (ListTasks), sin reenviar",
            "1 mensaje recibido",
        ),
    ),
    Experimento(
        "20.pruebalo-punto",
        parametros={"punto": "000004-model"},
        se_ve=(
            "antes de correr: ningún efecto nuevo",
            "modelo ×1 · consultar_saldo ×0 · transferir ×0",
            "órdenes recibidas: 1",
        ),
    ),
    Experimento(
        "23.pruebalo-muere-tarde",
        parametros={"muere_tras": 3},
        se_ve=("3 llamadas al modelo", "modelo ×1"),
    ),
    Experimento(
        "25.pruebalo-journal-interno",
        parametros={"journal_interno": True},
        se_ve=(
            "viaje-1-herramienta-corte/000001-tool, 5 eventos en runs.db",
            "dentro ×1 · buscar_vuelos ×0",
        ),
    ),
    Experimento(
        "24.pruebalo-otro-prefijo",
        parametros={"run_id_al_reanudar": "cadena-2"},
        se_ve=("modelo ×2", "leer_acta ×2"),
    ),
    Experimento(
        "22.pruebalo-antes",
        parametros={"muere": "ver_saldo"},
        se_ve=(
            "reproducidos, enlazados con la vuelta 1: 1 de 1",
            "lo que envió el hijo, con los mismos ids: 1 de 1",
        ),
    ),
    Experimento(
        "27.pruebalo-sintesis",
        parametros={"muere_en": "sintesis"},
        se_ve=("su respuesta vuelve del journal", "modelo ×1 · publicar_informe ×0"),
    ),
    Experimento(
        "28.pruebalo-al-final",
        parametros={"reloj_al_final": True},
        se_ve=("71 % de la caché", "ConfigurationChanged, modelo ×0: cambian instructions"),
    ),
    Experimento(
        "26.pruebalo-quitar-otra",
        parametros={"quitar": "borrar_pedido"},
        se_ve=("P-1043: en el almacén desde el 5 de marzo",),
    ),
]


# ── Running the experiments ─────────────────────────────────────────────────────────────


@dataclass
class Resultado:
    error: str | None  # papermill's message about the cell that raised
    impreso: str  # everything the run wrote to stdout
    #: (cell id, exception name, its message) of the cell that raised, if one did.
    fallo: tuple[str, str, str] | None
    comprobadas: set[str]  # the claim ids its afirma calls checked
    carpeta: Path  # scratch space of this run (where a changed copy of the notebook lives)


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def cell(notebook_json: dict[str, Any], cell_id: str) -> dict[str, Any]:
    (found,) = (c for c in notebook_json["cells"] if c.get("id") == cell_id)
    return found


def with_the_line_changed(experimento: Experimento, folder: Path) -> Path:
    """A copy of the notebook with the experiment's line changed (it must be there once)."""
    assert experimento.linea is not None
    cell_id, before, after = experimento.linea
    changed = read(notebook(experimento.cuaderno))
    target = cell(changed, cell_id)
    text = source_of(target)
    assert text.count(before) == 1, f"{experimento.claim}: «{before}» is not once in {cell_id}"
    target["source"] = text.replace(before, after)
    copy = folder / notebook(experimento.cuaderno).name
    copy.write_text(json.dumps(changed, ensure_ascii=False), encoding="utf-8")
    return copy


def run(experimento: Experimento, root: Path) -> Resultado:
    folder = run_folder(root, f"{experimento.cuaderno}-")
    claims = folder / "afirmaciones"
    claims.mkdir()
    os.environ[RECORD_FOLDER_VARIABLE] = str(claims)  # this process runs one case at a time
    source = notebook(experimento.cuaderno)
    if experimento.linea:
        source = with_the_line_changed(experimento, folder)
    output = folder / "salida.ipynb"
    error, fallo = None, None
    failure = execute(source, output, experimento.parametros)
    if failure is not None:
        error = str(failure)
        raised = next(
            (
                c.get("id")
                for c in read(output)["cells"]
                if any(o.get("output_type") == "error" for o in c.get("outputs", []))
            ),
            None,
        )
        fallo = (raised, failure.ename, failure.evalue)
    printed = "".join(
        "".join(o.get("text", ""))
        for c in read(output)["cells"]
        if c["cell_type"] == "code"
        for o in c["outputs"]
        if o.get("name") == "stdout"
    )
    return Resultado(error, printed, fallo, read_recorded(claims), folder)


@pytest.fixture(scope="module")
def resultados(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Resultado]:
    """Every experiment a selected test needs (all of them, unless `-k` picks fewer) through
    papermill, four at a time, without the variables that pick a real model (the notebooks
    answer from their scripts, as in the docs check)."""
    wanted = {
        item.callspec.params["experimento"].claim
        for item in request.session.items
        if "experimento" in getattr(getattr(item, "callspec", None), "params", {})
    }
    selected = [e for e in EXPERIMENTOS if e.claim in wanted]
    done = on_the_double(in_the_session(run, tmp_path_factory, "pruebalo"), selected)
    return dict(zip((e.claim for e in selected), done, strict=True))


# ── What each experiment promises ───────────────────────────────────────────────────────


def items(path: Path) -> dict[str, str]:
    """The items of a notebook's *Pruébalo* cell: claim id → the item's words on one line."""
    found = {}
    pruebalo = cell(read(path), PRUEBALO_CELL)
    entries = cell_map(pruebalo)
    for (kind, body), entry in zip(cell_blocks(pruebalo), entries, strict=True):
        if kind != "item":
            continue
        (claim,) = entry["ids"]
        found[claim] = " ".join(body.split())
    return found


def one_line(text: str) -> str:
    """The text with its runs of spaces and line breaks as one space: an item quotes a table
    row («000000-model 33 5 sin medir») as prose, the run prints it in columns."""
    return " ".join(text.split())


def printed_by_the_page(path: Path) -> str:
    """What the notebook prints as it is: its *Lo que imprime* block."""
    return expected_block(read(path)).text


by_experiment = pytest.mark.parametrize("experimento", EXPERIMENTOS, ids=lambda e: e.claim)


@by_experiment
def test_an_experiment_runs_to_the_end_and_its_own_assertion_held(experimento, resultados):
    resultado = resultados[experimento.claim]
    if experimento.se_para:  # the promise is where it stops; the cells after it do not run
        assert resultado.fallo and resultado.fallo[:2] == experimento.se_para, (
            f"{experimento.claim} should stop in {experimento.se_para}:\n{resultado.error}"
        )
        return
    assert resultado.error is None, f"{experimento.claim} raised:\n{resultado.error}"
    assert experimento.claim in resultado.comprobadas, (
        f'{experimento.claim}: the notebook\'s afirma("{experimento.claim}", …) did not run in '
        f"the experiment's run; it checked {sorted(resultado.comprobadas)}"
    )


@by_experiment
def test_what_an_experiment_promises_is_written_in_its_item_and_printed_by_its_run(
    experimento, resultados
):
    path = notebook(experimento.cuaderno)
    words = items(path)[experimento.claim]
    resultado = resultados[experimento.claim]
    assert experimento.se_ve, f"{experimento.claim} promises nothing a learner would see"
    shown = resultado.impreso  # and the error a cell raised, as JupyterLab shows it
    if resultado.fallo:
        shown += f"{resultado.fallo[1]}: {resultado.fallo[2]}\n"
    for fragment in experimento.se_ve:
        assert fragment in words, f"{experimento.claim}: the item does not say «{fragment}»"
        assert one_line(fragment) in one_line(shown), (
            f"{experimento.claim}: the run does not print «{fragment}»; it printed:\n{shown}"
        )
    as_it_is = one_line(printed_by_the_page(path))
    assert any(one_line(f) not in as_it_is for f in experimento.se_ve), (
        f"{experimento.claim}: the notebook as it is prints all of {experimento.se_ve}; the "
        "experiment changes nothing a learner sees"
    )
    for change in experimento.cambio:
        assert f"`{change}`" in words, f"{experimento.claim}: the item does not name `{change}`"
    if experimento.comprueba:
        experimento.comprueba(resultado)


# ── Every notebook has its experiments ──────────────────────────────────────────────────


@pytest.mark.parametrize("path", property_notebooks(), ids=lambda p: p.stem)
def test_a_notebook_ends_with_pruebalo_and_the_cell_that_checks_it(path: Path) -> None:
    notebook_cells = read(path)["cells"]
    ids = [c.get("id") for c in notebook_cells]
    assert PRUEBALO_CELL in ids, f"{path.name} has no Pruébalo (a Markdown cell {PRUEBALO_CELL!r})"
    after = notebook_cells[ids.index(PRUEBALO_CELL) + 1 :]
    assert after and after[-1].get("id") == CHECK_CELL, (
        f"{path.name} does not end with {CHECK_CELL}"
    )
    assert all(
        c["cell_type"] == "code" or VERIFICATION_TAG in c["metadata"].get("tags", []) for c in after
    ), (
        f"{path.name}: after its Pruébalo come only the cells that run and check the experiments "
        "(and the note over the checks, off the page)"
    )
    heading = source_of(cell(read(path), PRUEBALO_CELL)).splitlines()[0]
    assert heading == "## Pruébalo", f"{path.name}: the Pruébalo cell starts with {heading!r}"


@pytest.mark.parametrize("path", property_notebooks(), ids=lambda p: p.stem)
def test_every_item_of_pruebalo_is_an_experiment_this_file_runs(path: Path) -> None:
    written = list(items(path))
    run_here = [e.claim for e in EXPERIMENTOS if e.cuaderno == path.name[:2]]
    assert 1 <= len(written) <= 3, f"{path.name}: {len(written)} experiments, not one to three"
    assert sorted(written) == sorted(run_here), (
        f"{path.name}: its Pruébalo says {written}, and this file runs {run_here}"
    )
    prefix = f"{path.name[:2]}.pruebalo-"
    assert all(claim.startswith(prefix) for claim in written), f"ids start with {prefix}"
    code = source_of(cell(read(path), CHECK_CELL))
    for claim in written:
        assert f'afirma(\n    "{claim}"' in code or f'afirma("{claim}"' in code, (
            f"{path.name}: {CHECK_CELL} does not check {claim}"
        )


# ── The helper the notebooks validate a yes/no parameter with ───────────────────────────


@pytest.fixture
def comun(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(NOTEBOOKS))
    sys.modules.pop("comun", None)
    return importlib.import_module("comun")


@pytest.mark.parametrize("value", [0, 1, "False", "no", None])
def test_a_yes_or_no_parameter_refuses_what_is_not_true_or_false(comun, value) -> None:
    comun.valida_si_o_no("concede", True)
    comun.valida_si_o_no("concede", False)
    with pytest.raises(comun.ParametroInvalido) as raised:
        comun.valida_si_o_no("concede", value)
    assert str(raised.value).startswith(f"concede = {value!r} no vale en este cuaderno: admite ")
    assert "True o False" in str(raised.value)


@pytest.mark.parametrize("value", ["fuera", "Dentro", 1, False])
def test_a_choice_parameter_refuses_what_is_not_one_of_its_choices(comun, value) -> None:
    choices = [None, "antes", "dentro", "despues"]
    for choice in choices:
        comun.valida_opcion("muere_en", choice, choices)
    with pytest.raises(comun.ParametroInvalido) as raised:
        comun.valida_opcion("muere_en", value, choices)
    assert str(raised.value).startswith(
        f"muere_en = {value!r} no vale en este cuaderno: admite None, 'antes', 'dentro' o "
        "'despues'."
    )
