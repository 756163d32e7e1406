"""notebooks/comun.py: the header every notebook prints, and the choice of model."""

from __future__ import annotations

import importlib
import sys

import pytest

from scripts.pages import NOTEBOOKS
from tests.bounds import HANG


@pytest.fixture
def comun(monkeypatch: pytest.MonkeyPatch):
    for name in ("SYNAPTUM_BASE_URL", "SYNAPTUM_MODEL", "AXONIUM_CLIENT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.syspath_prepend(str(NOTEBOOKS))
    sys.modules.pop("comun", None)
    return importlib.import_module("comun")


def test_the_header_is_a_blank_line_the_title_its_rule_the_mode_and_a_blank_line(
    comun, capsys
) -> None:
    comun.encabezado("02 · Reanudar")
    assert capsys.readouterr().out == (
        "\n02 · Reanudar\n─────────────\n"
        "sin inferencia · respuestas guionizadas "
        "(exporta SYNAPTUM_BASE_URL para usar un modelo real)\n\n"
    )


def test_a_notebook_always_on_the_double_says_so_with_or_without_a_model(
    comun, capsys, monkeypatch
) -> None:
    expected = (
        "\n10 · Reintentos\n───────────────\n"
        "sin inferencia · respuestas guionizadas (este cuaderno usa siempre el doble)\n\n"
    )
    comun.encabezado("10 · Reintentos", siempre_el_doble=True)
    assert capsys.readouterr().out == expected
    monkeypatch.setenv("SYNAPTUM_BASE_URL", "http://127.0.0.1:9/v1")
    comun.encabezado("10 · Reintentos", siempre_el_doble=True)
    assert capsys.readouterr().out == expected


def test_without_model_variables_the_gateway_is_the_scripted_double(comun) -> None:
    from synaptum_lite.testing import ScriptedGateway, says

    puerta = comun.gateway([says("hola")])
    assert isinstance(puerta, ScriptedGateway)
    assert puerta.model_calls == 0
    assert comun.nombre_del_modelo() == "guionizado"


def test_a_url_selects_the_http_gateway_and_the_header_says_so(comun, monkeypatch) -> None:
    pytest.importorskip("httpx")
    from synaptum_lite.gateways.http import OpenAICompatibleGateway

    monkeypatch.setenv("SYNAPTUM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SYNAPTUM_MODEL", "un-modelo")
    assert comun.nombre_del_modelo() == "un-modelo"
    assert comun.linea_de_modo() == "HTTP directo · http://127.0.0.1:9/v1"
    puerta = comun.gateway([], chunk_size=8)  # the double's option is ignored on a real model
    assert isinstance(puerta, OpenAICompatibleGateway)
    assert puerta.model_calls == 0


def test_axonium_takes_precedence_over_the_url(comun, monkeypatch) -> None:
    pytest.importorskip("axonium")
    from synaptum_lite.gateways.axonium import AxoniumGateway

    monkeypatch.setenv("SYNAPTUM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("AXONIUM_CLIENT_ID", "cliente")
    monkeypatch.setenv("AXONIUM_CLIENT_SECRET", "secreto")
    monkeypatch.setenv("SYNAPTUM_MODEL", "un-modelo")
    assert comun.linea_de_modo() == "vía SDK de plataforma · un-modelo"
    assert isinstance(comun.gateway([]), AxoniumGateway)


def test_vivo_says_a_process_exists_until_mata_kills_it_and_it_is_reaped(comun) -> None:
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert comun.vivo(child.pid)
    finally:
        comun.mata(child.pid)
    assert child.wait(timeout=HANG) == comun.CODIGO_DE_MUERTE
    assert not comun.vivo(child.pid)


def test_afirma_records_the_values_it_compared_and_the_check_reads_them_back(
    comun, tmp_path, monkeypatch
) -> None:
    import pickle

    from scripts.claims import RECORD_FOLDER_VARIABLE, CheckedClaim, read_recorded, values_of

    monkeypatch.setenv(RECORD_FOLDER_VARIABLE, str(tmp_path))
    eventos = 4
    comun.afirma("99.eventos", eventos == 4, "no se ve", eventos=eventos, fichero="runs.db")
    comun.afirma("99.eventos", True, "otra vez", eventos=5)
    comun.afirma("99.sin-valores", True, "nada")
    checked = read_recorded(tmp_path)
    assert checked == {"99.eventos", "99.sin-valores"}
    assert values_of(checked) == {
        "99.eventos": [{"eventos": 4, "fichero": "runs.db"}, {"eventos": 5}],
        "99.sin-valores": [{}],
    }
    # xdist workers receive the ids pickled: the values travel with them
    [again] = [c for c in pickle.loads(pickle.dumps(checked)) if c == "99.eventos"]
    assert isinstance(again, CheckedClaim) and again.values == (
        {"eventos": 4, "fichero": "runs.db"},
        {"eventos": 5},
    )
    # a false condition names the id, the message and the values it saw
    with pytest.raises(AssertionError, match=r"^99\.falsa: el saldo no cuadra \(eventos=6\)$"):
        comun.afirma("99.falsa", False, "el saldo no cuadra", eventos=6)
