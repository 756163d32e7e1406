"""The checks of the claims of *Escalar*'s section «Un almacén detrás de HTTP»: tests of
tests/core against real store server processes, each run once in a pytest process of its own
(`afirmaciones_paginas._run_once`), or held by the session that ran them (`afirmaciones_sesion`).
Imported by `afirmaciones_paginas`, which registers them.
"""

from __future__ import annotations

import contextlib
import io
import tomllib

from scripts.pages import REPO
from tests.docs import afirmaciones_sesion
from tests.docs.afirmaciones_md import afirmacion
from tests.docs.afirmaciones_paginas import _run_once, _tests_pass

#: What each claim runs: tests of tests/core (`file::function`, or `file::function[case]`).
HTTP_STORE_TESTS: dict[str, tuple[str, ...]] = {
    "escalar.http-servidor": (
        "core/test_http_store.py::test_the_server_refuses_to_start_without_a_token",
        "core/test_http_store.py::test_the_server_serves_a_postgresql_journal_too",
        "core/test_http_store.py::test_an_append_whose_answer_was_lost_is_sent_again_and_written_once[memory]",
        "ejemplos/test_escalar_http.py::test_un_run_conducido_a_traves_del_servidor_queda_en_su_fichero",
    ),
    "escalar.http-candado": (
        "core/test_http_store.py::test_a_run_held_by_a_client_killed_with_sigkill_is_busy_until_then_and_free_after",
        "core/test_http_store.py::test_a_driver_whose_hold_was_lost_writes_nothing_after_the_next_one_took_the_run",
        "core/test_http_store.py::test_the_server_serves_a_postgresql_journal_too",
    ),
    "escalar.http-reintento": (
        "core/test_http_store.py::test_an_append_whose_answer_was_lost_is_sent_again_and_written_once",
    ),
    "escalar.http-fallos": (
        "core/test_http_store.py::test_a_server_killed_with_sigkill_mid_append_loses_nothing_it_acknowledged",
    ),
    "escalar.http-clave": (
        "core/test_http_store.py::test_a_missing_or_wrong_token_is_refused_and_nothing_is_read_or_written",
        "core/test_http_store.py::test_the_token_appears_in_no_error_message_repr_or_log_line",
        "core/test_http_store.py::test_bad_arguments_are_refused_before_anything_is_sent",
    ),
    "escalar.http-errores": (
        "core/test_http_store.py::test_a_server_that_is_not_there_says_so_and_how_to_start_one",
        "core/test_http_store.py::test_a_server_that_answers_garbage_says_what_it_answered_and_what_to_check",
        "core/test_http_store.py::test_a_missing_or_wrong_token_is_refused_and_nothing_is_read_or_written",
    ),
    "escalar.http-cli": (
        "core/test_cli_http_store.py::test_runs_and_show_through_the_server_print_what_they_print_on_the_file",
        "core/test_cli_http_store.py::test_resolve_through_the_server_is_written_once_and_the_run_ends_without_paying_again",
        "core/test_cli_http_store.py::test_a_missing_or_wrong_token_is_refused_and_nothing_is_read_or_written",
        "core/test_cli_http_store.py::test_a_bad_store_server_url_is_refused_naming_it_without_its_password",
    ),
}  # fmt: skip

#: The kill tests of tests/core/test_kill.py that SIGKILL a child: their cases through the server.
KILLING = (
    "test_a_run_killed_at_every_boundary_resumes_to_the_same_end",
    "test_a_kill_inside_a_tool_after_its_effect_is_never_repeated",
    "test_a_kill_right_after_a_non_idempotent_tools_attempted_event_leaves_it_uncertain",
)


def _passed(claim: str) -> int:
    return _tests_pass(HTTP_STORE_TESTS, "tests", claim)


#: Whole files whose cases on the HTTP store (`-k http`) back claims, and the claims.
THROUGH_THE_SERVER = {
    "tests/core/test_conformance.py": ["escalar.http-conformidad"],
    "tests/core/test_kill.py": ["escalar.http-conformidad", "escalar.http-muertes"],
}


def _cases_through_the_server(path: str) -> dict[str, int]:
    """Every case of `path` on the HTTP store (`-k http`), asserted to pass: test → how many.

    Run once in a pytest process of their own, unless the session selected them (and every
    other bound test): then its verdict asserts they passed (`afirmaciones_sesion`)."""
    assert path in THROUGH_THE_SERVER, f"{path}: name it in THROUGH_THE_SERVER"
    counts: dict[str, int] = {}
    selected = afirmaciones_sesion.selected_cases(afirmaciones_sesion.Cases(path, store="http"))
    if selected is not None:
        for nodeid in selected:
            name = nodeid.split("::")[1].split("[")[0]
            counts[name] = counts.get(name, 0) + 1
        assert counts, f"{path}: no case on the HTTP store in this session"
        return counts
    outcomes = _run_once((path, "-k", "http"))
    assert outcomes, f"{path} -k http ran nothing"
    for name, found in outcomes.items():
        if "[" not in name:
            assert set(found) == {"passed"}, f"{path}::{name}: {found}"
            counts[name] = len(found)
    return counts


@afirmacion("escalar.http-servidor")
def _un_servidor_de_almacen_con_su_extra_su_orden_y_su_clave() -> dict:
    from synaptum_lite.stores import http_server

    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]["http-store"]
    assert {e.split(">")[0] for e in extras} == {"httpx", "starlette", "uvicorn"}, extras
    assert http_server.ENV_TOKEN == "SYNAPTUM_STORE_TOKEN"
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit):
        http_server.main(["--help"])
    assert all(option in shown.getvalue() for option in ("--db", "--memory", "--postgres"))
    from synaptum_lite import MemoryCheckpointer

    server = http_server.StoreServer(MemoryCheckpointer(), token="t")
    methods = {m for route in server._app.routes for m in route.methods or ()}
    assert methods == {"POST"}, methods
    return {"casos": _passed("escalar.http-servidor")}


@afirmacion("escalar.http-garantias")
def _cada_garantia_contra_un_servidor_de_verdad() -> dict:
    return {"casos": sum(_passed(claim) for claim in HTTP_STORE_TESTS)}


@afirmacion("escalar.http-conformidad")
def _la_bateria_de_conformidad_y_la_de_cada_frontera_a_traves_del_servidor() -> dict:
    ran = 0
    for path in ("tests/core/test_conformance.py", "tests/core/test_kill.py"):
        ran += sum(_cases_through_the_server(path).values())
    return {"casos": ran}


@afirmacion("escalar.http-candado")
def _un_conductor_por_run_y_quien_lo_pierde_no_escribe() -> dict:
    return {"casos": _passed("escalar.http-candado")}


@afirmacion("escalar.http-reintento")
def _una_escritura_reenviada_queda_una_vez() -> dict:
    return {"casos": _passed("escalar.http-reintento")}


@afirmacion("escalar.http-fallos")
def _lo_confirmado_sobrevive_al_servidor() -> dict:
    return {"casos": _passed("escalar.http-fallos")}


@afirmacion("escalar.http-clave")
def _sin_la_clave_nada_y_la_clave_en_ningun_sitio() -> dict:
    import inspect

    from synaptum_lite.stores import http_client

    assert "status == 401" in inspect.getsource(http_client._answer)
    return {"estado": 401, "casos": _passed("escalar.http-clave")}


@afirmacion("escalar.http-errores")
def _errores_que_dicen_que_hacer() -> dict:
    return {"casos": _passed("escalar.http-errores")}


@afirmacion("escalar.http-muertes")
def _las_muertes_contadas() -> dict:
    from tests.core import test_http_store

    kills = _cases_through_the_server("tests/core/test_kill.py")
    assert all(kills.get(name) for name in KILLING), kills
    through = sum(kills[name] for name in KILLING)
    assert _passed("escalar.http-candado") and _passed("escalar.http-fallos")
    return {"rondas": test_http_store.KILLS, "fronteras": through}


@afirmacion("escalar.http-cli")
def _la_linea_de_ordenes_a_traves_del_servidor() -> dict:
    from synaptum_lite.cli import runview
    from synaptum_lite.stores import http_server

    assert runview.ENV_TOKEN == http_server.ENV_TOKEN  # the variable the server reads
    return {"casos": _passed("escalar.http-cli")}
