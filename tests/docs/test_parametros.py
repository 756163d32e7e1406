"""Parameters are inputs: every notebook, run the way a learner runs it (papermill, in the
notebook's folder), with changed parameters.

Each case either runs to the end, so every `assert` of the notebook held with those values, or
stops in the cell right after `parameters` (`comprobar-parametros`) with
`comun.ParametroInvalido`: one Spanish line that names the parameter and its value and says what
the notebook accepts, no code frames, and nothing printed before it.

papermill starts one kernel per case; the cases run four at a time, each in its own process
(papermill changes the working directory of the process that calls it, so two calls in threads
of one process would start kernels in each other's folder).
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from scripts.kernel import MODEL_VARIABLE_PREFIXES
from scripts.pages import NOTEBOOKS, PROPERTY_NOTEBOOKS, REPO, how_to_run, property_notebooks
from tests.bounds import HANG

from .papermill_runs import execute, in_the_session, notebook, on_the_double, run_folder

#: The cell every notebook runs right after its `parameters` cell.
VALIDATION_CELL = "comprobar-parametros"

#: Stand-ins in a case's parameters, replaced by a path made for that case.
NEW_FOLDER = "<carpeta nueva>"  # a folder that does not exist yet
A_FILE = "<un fichero>"  # a path that is a file, not a folder


@dataclass(frozen=True)
class Case:
    notebook: str  # its number, "10"
    parameters: dict[str, Any]
    refused: str | None = None  # the parameter the notebook must refuse; None: it runs
    already_there: tuple[str, ...] = ()  # what `carpeta` holds before the run ("muerte-01/")
    note: str = ""  # why this value, for the list in the report

    @property
    def id(self) -> str:
        values = ",".join(f"{k}={v!r}" for k, v in self.parameters.items())
        there = "".join(f"+{name}" for name in self.already_there)
        return f"{self.notebook}:{values}{there}"


CASES = [
    Case("00", {"carpeta": NEW_FOLDER, "run_id": "primer-run-2"}),
    Case("00", {"run_id": "primer run"}, refused="run_id", note="a space: not a run_id"),
    Case("01", {"carpeta": NEW_FOLDER, "run_id": "bucle-2"}),
    Case("01", {"run_id": 5}, refused="run_id", note="-p run_id 5 arrives as an int"),
    Case("02", {"carpeta": NEW_FOLDER, "run_id": "run-7"}),
    Case(
        "02",
        {"carpeta": NEW_FOLDER},
        refused="carpeta",
        already_there=("runs.db",),
        note="a second run into the same folder would resume, not start",
    ),
    Case("03", {"run_id": "aprobacion-2"}),
    Case("03", {"run_id": ""}, refused="run_id"),
    Case("03", {"concede": "no"}, refused="concede", note="the decision is True or False"),
    Case("04", {"run_entero": "entero", "run_cortado": "cortado"}),
    Case(
        "04",
        {"run_cortado": "streaming-1"},
        refused="run_cortado",
        note="the same run as run_entero",
    ),
    Case("05", {"run_transferencia": "a", "run_consulta": "b", "run_cobro": "c"}),
    Case("05", {"run_cobro": "incierto/3"}, refused="run_cobro", note="/ names a subrun"),
    Case("06", {"carpeta": NEW_FOLDER, "run_id": "kill-b"}),
    Case("06", {"carpeta": NEW_FOLDER}, refused="carpeta", already_there=("muerte-01/",)),
    Case("07", {"run_id": "viejo", "run_id_nuevo": "nuevo"}),
    Case("07", {"run_id_nuevo": "run-1"}, refused="run_id_nuevo", note="the same run as run_id"),
    Case("08", {"carpeta": NEW_FOLDER, "run_id": "run-b"}),
    Case("08", {"carpeta": NEW_FOLDER}, refused="carpeta", already_there=("efectos.txt",)),
    Case("09", {"tope": 0}, note="the smallest cap: only the note enters"),
    Case("09", {"tope": 1678}, note="one character less than the result"),
    Case("09", {"tope": 1679}, refused="tope", note="the whole result: nothing to cut"),
    Case("09", {"tope": 12.5}, refused="tope"),
    Case("10", {"retry_after": 30}, note="the cap"),
    Case("10", {"retry_after": 0.5}),
    Case("10", {"retry_after": 60}, refused="retry_after", note="above the cap: it waits 30"),
    Case("10", {"retry_after": 2.25}, refused="retry_after", note="printed with one decimal"),
    Case("10", {"retry_after": "7"}, refused="retry_after"),
    Case("11", {"max_pasos": 1, "mas_pasos": 12}),
    Case("11", {"max_pasos": 5, "mas_pasos": 3}, note="a lower limit on the same run"),
    Case("11", {"max_pasos": 0}, refused="max_pasos"),
    Case("11", {"mas_pasos": 13}, refused="mas_pasos", note="the script has 12 answers"),
    Case("12", {"run_id": "presupuesto-2"}),
    Case("12", {"run_id": "presupuesto 1"}, refused="run_id"),
    Case("13", {"carpeta": NEW_FOLDER, "run_id": "consumo-2"}),
    Case("13", {"carpeta": A_FILE}, refused="carpeta"),
    Case("14", {"run_id": "viaje-2"}),
    Case("14", {"run_id": None}, refused="run_id"),
    Case("14", {"muere_en": "durante"}, refused="muere_en", note="antes, dentro or despues"),
    Case("15", {"run_correo": "c", "run_buzon": "b"}),
    Case("15", {"run_buzon": "correo-1"}, refused="run_buzon", note="the same run as run_correo"),
    Case("16", {"carpeta": NEW_FOLDER, "run_id": "pedido-2"}),
    Case("16", {"carpeta": NEW_FOLDER}, refused="carpeta", already_there=("copia.db",)),
    Case(
        "17",
        {"carpeta": NEW_FOLDER, "run_entero": "a", "run_muerte": "b", "muere_dentro": "comentar"},
        note="the server dies inside the annotated non-idempotent tool",
    ),
    Case("17", {"muere_dentro": "consultar"}, refused="muere_dentro", note="a read: no effect"),
    Case("17", {"carpeta": NEW_FOLDER}, refused="carpeta", already_there=("efectos-1.jsonl",)),
    Case("18", {"carpeta": NEW_FOLDER, "cuantos": 2, "muere_en": 2}, note="the last one dies"),
    Case("18", {"cuantos": 4, "muere_en": 1}, note="the first one dies: none ahead of it"),
    Case("18", {"cuantos": 3, "muere_en": 4}, refused="muere_en", note="not one of the runs"),
    Case("18", {"cuantos": 1}, refused="cuantos", note="one run is not side by side"),
    Case("18", {"carpeta": NEW_FOLDER}, refused="carpeta", already_there=("muerto/",)),
    Case("19", {"carpeta": NEW_FOLDER, "run_id": "remoto-2"}),
    Case("19", {"muere": "dentro"}, refused="muere", note="not one of the two kill points"),
    Case("19", {"carpeta": NEW_FOLDER}, refused="carpeta", already_there=("runs.db",)),
    Case("20", {"carpeta": NEW_FOLDER, "run_id": "pedido-9", "punto": "000001-tool"}),
    Case("20", {"punto": "000005-final"}, refused="punto", note="a fork ends with its own final"),
    Case("20", {"run_id_ana": "pedido-1"}, refused="run_id_ana", note="the same run as run_id"),
    Case("23", {"carpeta": NEW_FOLDER, "run_id": "presupuesto-2", "muere_tras": 4}),
    Case("23", {"muere_tras": 5}, refused="muere_tras", note="the budget stops the child first"),
    Case("23", {"carpeta": NEW_FOLDER}, refused="carpeta", already_there=("llamadas.txt",)),
    Case("22", {"carpeta": NEW_FOLDER, "run_id": "trazas-2", "muere": "ver_movimientos"}),
    Case("22", {"muere": "notificar"}, refused="muere", note="not one of the agent's tools"),
    Case("22", {"carpeta": NEW_FOLDER}, refused="carpeta", already_there=("vivo-1.jsonl",)),
    Case("25", {"carpeta": NEW_FOLDER, "run_id": "viaje-7", "journal_interno": True}),
    Case("25", {"journal_interno": "no"}, refused="journal_interno", note="True or False"),
    Case("25", {"carpeta": NEW_FOLDER}, refused="carpeta", already_there=("runs.db",)),
    Case("21", {"carpeta": NEW_FOLDER, "run_id": "viejo", "run_id_migrado": "migrado"}),
    Case("21", {"run_id_migrado": "pedido-1"}, refused="run_id_migrado", note="the same run"),
    Case("21", {"carpeta": NEW_FOLDER}, refused="carpeta", already_there=("runs.db",)),
    Case(
        "26",
        {"carpeta": NEW_FOLDER, "run_id": "c-1", "run_trampa": "c-2", "quitar": "crear_pedido"},
    ),
    Case(
        "26", {"quitar": "consultar_factura"}, refused="quitar", note="one of the five pedido tools"
    ),
    Case("26", {"run_trampa": "catalogo-1"}, refused="run_trampa", note="the same run as run_id"),
    Case("26", {"carpeta": NEW_FOLDER}, refused="carpeta", already_there=("runs.db",)),
    Case("27", {"carpeta": NEW_FOLDER, "run_id": "paralelo-9", "muere_en": "sintesis"}),
    Case("27", {"muere_en": "sintesís"}, refused="muere_en", note="ramas or sintesis"),
    Case("27", {"run_id": "paralelo/1"}, refused="run_id", note="/ names a subrun"),
    Case("27", {"carpeta": NEW_FOLDER}, refused="carpeta", already_there=("efectos.jsonl",)),
    Case("28", {"carpeta": NEW_FOLDER, "clientes": 2, "reloj_al_final": True}),
    Case("28", {"clientes": 1}, refused="clientes", note="two to compare"),
    Case("28", {"clientes": 3.0}, refused="clientes", note="a whole number"),
    Case("28", {"reloj_al_final": "no"}, refused="reloj_al_final", note="True or False"),
    Case("28", {"carpeta": NEW_FOLDER}, refused="carpeta", already_there=("runs.db",)),
    Case("24", {"carpeta": NEW_FOLDER, "run_id": "cadena-9", "run_id_al_reanudar": "otra"}),
    Case("24", {"run_id_al_reanudar": "cadena-1"}, refused="run_id_al_reanudar", note="same"),
    Case("24", {"run_id": "cadena/1"}, refused="run_id", note="/ names a subrun"),
    Case("24", {"carpeta": NEW_FOLDER}, refused="carpeta", already_there=("efectos.jsonl",)),
]


def cells(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source(cell: dict[str, Any]) -> str:
    return "".join(cell["source"])


def parameter_names(path: Path) -> list[str]:
    (cell,) = (c for c in cells(path) if "parameters" in c["metadata"].get("tags", []))
    return [
        target.id
        for node in ast.parse(source(cell)).body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    ]


# ── Running the cases ───────────────────────────────────────────────────────────────────


@dataclass
class Failure:
    """What papermill reports about the cell that raised."""

    ename: str
    evalue: str
    traceback: list[str]
    text: str  # papermill's whole message


@dataclass
class Outcome:
    parameters: dict[str, Any]  # as passed, stand-ins replaced
    error: Failure | None = None
    printed: list[str] = field(default_factory=list)  # stdout of each cell, in order
    folder: Path | None = None
    workdir: Path | None = None  # the run's own folder: the output, the kernel's TMPDIR


def prepare(case: Case, workdir: Path) -> dict[str, Any]:
    parameters = dict(case.parameters)
    if parameters.get("carpeta") == NEW_FOLDER:
        folder = workdir / "carpeta"
        for name in case.already_there:
            if name.endswith("/"):
                (folder / name).mkdir(parents=True)
            else:
                folder.mkdir(exist_ok=True)
                (folder / name).write_text("de otra ejecución\n", encoding="utf-8")
        parameters["carpeta"] = str(folder)
    elif parameters.get("carpeta") == A_FILE:
        (workdir / "un-fichero").write_text("no es una carpeta\n", encoding="utf-8")
        parameters["carpeta"] = str(workdir / "un-fichero")
    return parameters


def run_case(case: Case, root: Path) -> Outcome:
    workdir = run_folder(root, f"{case.notebook}-")
    parameters = prepare(case, workdir)
    output = workdir / "salida.ipynb"
    outcome = Outcome(parameters, workdir=workdir)
    error = execute(notebook(case.notebook), output, parameters)
    if error is not None:
        outcome.error = Failure(error.ename, error.evalue, error.traceback, str(error))
    executed = cells(output)
    outcome.printed = [
        "".join(o.get("text", "")) if o.get("name") == "stdout" else ""
        for c in executed
        if c["cell_type"] == "code"
        for o in c["outputs"] or [{}]
    ]
    if "carpeta" in parameters and parameters["carpeta"] is not None:
        outcome.folder = Path(parameters["carpeta"])
    return outcome


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every case through papermill (`on_the_double`)."""
    run = in_the_session(run_case, tmp_path_factory, "parametros")
    return dict(zip((c.id for c in CASES), on_the_double(run, CASES), strict=True))


@pytest.mark.parametrize("case", [c for c in CASES if c.refused is None], ids=lambda c: c.id)
def test_a_notebook_runs_to_the_end_with_a_value_it_can_show(case, outcomes) -> None:
    outcome = outcomes[case.id]
    assert outcome.error is None, f"{case.id} should run, and raised:\n{outcome.error.text}"
    if outcome.folder is not None:  # the notebook wrote where it was told
        assert any(outcome.folder.iterdir()), f"{case.id}: nothing written in {outcome.folder}"


def test_what_a_notebook_makes_with_tempfile_stays_in_its_run_folder(outcomes) -> None:
    """With `carpeta = None` a notebook makes its folder with `tempfile.mkdtemp()`: in its
    kernel's `TMPDIR`, inside the run's folder, which pytest clears (the machine's own
    temporary folder kept thousands of them)."""
    ran = [
        (case, outcomes[case.id])
        for case in CASES
        if case.refused is None and outcomes[case.id].parameters.get("carpeta") is None
    ]
    assert ran, "no case runs a notebook with carpeta = None"
    for case, outcome in ran:
        assert outcome.workdir is not None
        made = list((outcome.workdir / "tmp").iterdir())
        assert made, f"{case.id}: nothing in its kernel's TMPDIR, {outcome.workdir / 'tmp'}"


@pytest.mark.parametrize("case", [c for c in CASES if c.refused], ids=lambda c: c.id)
def test_a_notebook_refuses_a_value_it_cannot_show_naming_the_parameter_and_the_value(
    case, outcomes
) -> None:
    outcome = outcomes[case.id]
    assert outcome.error is not None, f"{case.id} ran to the end; it should refuse {case.refused}"
    error = outcome.error
    value = outcome.parameters[case.refused]
    assert error.ename == "ParametroInvalido", f"{case.id}: {error.ename}: {error.evalue}"
    assert error.evalue.startswith(f"{case.refused} = {value!r} no vale en este cuaderno: admite ")
    assert error.traceback == [f"ParametroInvalido: {error.evalue}"], "no code frames, one line"
    assert not any(outcome.printed), f"{case.id} printed before refusing: {outcome.printed}"


# ── What the cases cover ────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("path", property_notebooks(), ids=lambda p: p.stem)
def test_every_parameter_is_checked_in_the_cell_after_the_parameters_cell(path) -> None:
    notebook_cells = cells(path)
    tags = [c["metadata"].get("tags", []) for c in notebook_cells]
    (position,) = (i for i, t in enumerate(tags) if "parameters" in t)
    validation = notebook_cells[position + 1]
    assert validation.get("id") == VALIDATION_CELL, f"{path.name}: no {VALIDATION_CELL} cell"
    checked = {
        node.id for node in ast.walk(ast.parse(source(validation))) if isinstance(node, ast.Name)
    }
    unchecked = set(parameter_names(path)) - checked
    assert not unchecked, f"{path.name}: parameters nobody checks: {sorted(unchecked)}"


@pytest.mark.parametrize("path", property_notebooks(), ids=lambda p: p.stem)
def test_every_notebook_has_a_case_that_runs_and_one_that_refuses(path) -> None:
    number = path.name[:2]
    mine = [c for c in CASES if c.notebook == number]
    assert any(c.refused is None and c.parameters for c in mine), f"{path.name}: no case runs"
    assert any(c.refused for c in mine), f"{path.name}: no case refuses"
    names = set(parameter_names(path))
    for case in mine:
        assert set(case.parameters) <= names, f"{case.id}: not a parameter of {path.name}"


def page_command(path: Path, output: Path) -> list[str]:
    """The papermill command the page's *Cómo correrlo* shows, writing to `output`."""
    (command,) = (c for c in how_to_run(path) if " papermill " in c)
    words = shlex.split(command.replace("\\\n", " "))
    assert words[:5] == ["uv", "run", "--group", "lab", "papermill"], words
    return [word if word != "salida.ipynb" else str(output) for word in words[4:]]


def test_the_cases_run_in_the_folder_the_page_command_names() -> None:
    words = page_command(notebook("01"), Path("salida.ipynb"))
    assert REPO / words[words.index("--cwd") + 1] == PROPERTY_NOTEBOOKS


def test_the_page_command_ends_with_the_message_when_a_value_is_refused(tmp_path) -> None:
    """The learner's command, as the page shows it, with `-p retry_after 60`: papermill prints
    its own traceback, and the last line says which parameter, which value and what the
    notebook accepts."""
    command = page_command(notebook("10"), tmp_path / "salida.ipynb")
    result = subprocess.run(
        [sys.executable, "-m", *command, "-p", "retry_after", "60"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith(MODEL_VARIABLE_PREFIXES)},
        timeout=HANG,
    )
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ParametroInvalido: retry_after = 60 no vale en este cuaderno: admite ")
    assert "entre 0 y 30" in last


# ── The helpers themselves ──────────────────────────────────────────────────────────────


@pytest.fixture
def comun(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(NOTEBOOKS))
    sys.modules.pop("comun", None)
    return importlib.import_module("comun")


def test_a_refused_value_renders_as_one_line_without_code(comun) -> None:
    with pytest.raises(comun.ParametroInvalido) as raised:
        comun.valida_numero("retry_after", 60, minimo=0, maximo=30, decimales=1, porque="el cap")
    error = raised.value
    assert (error.nombre, error.valor) == ("retry_after", 60)
    assert str(error) == (
        "retry_after = 60 no vale en este cuaderno: admite un número entre 0 y 30, con una "
        "cifra decimal como mucho (el cap). Cámbialo en la celda parameters (con papermill: "
        "-p retry_after VALOR)."
    )
    assert error._render_traceback_() == [f"ParametroInvalido: {error}"]


@pytest.mark.parametrize("value", [True, 3.0, float("nan"), "3", None, 0, 13, 10**400])
def test_an_integer_parameter_refuses_what_is_not_an_integer_in_range(comun, value) -> None:
    with pytest.raises(comun.ParametroInvalido, match=r"admite un entero entre 1 y 12"):
        comun.valida_numero("max_pasos", value, minimo=1, maximo=12, entero=True)


def test_run_ids_are_names_and_two_parameters_never_name_the_same_run(comun) -> None:
    comun.valida_run_ids(a="run-1", b="run_2.b")
    for bad in ("", " run", "viaje-1/000001-delegate", "año", 7):
        with pytest.raises(comun.ParametroInvalido):
            comun.valida_run_ids(a=bad)
    with pytest.raises(comun.ParametroInvalido, match=r"^b = 'x' .* distinto de a"):
        comun.valida_run_ids(a="x", b="x")


def test_a_folder_is_refused_when_it_holds_what_the_notebook_creates(comun, tmp_path) -> None:
    comun.valida_carpeta(None, crea=["runs.db"])
    comun.valida_carpeta(str(tmp_path / "nueva"), crea=["runs.db"])
    (tmp_path / "muerte-03").mkdir()
    with pytest.raises(comun.ParametroInvalido, match=r"ya tiene muerte-03"):
        comun.valida_carpeta(str(tmp_path), crea=["entero", "muerte-*"])
    (tmp_path / "runs.db").write_text("")
    with pytest.raises(comun.ParametroInvalido, match=r"es un fichero"):
        comun.valida_carpeta(str(tmp_path / "runs.db"), crea=["runs.db"])
    with pytest.raises(comun.ParametroInvalido, match=r"^carpeta = 3 "):
        comun.valida_carpeta(3, crea=["runs.db"])
