"""The seed's promise, kept: the same notebooks, untouched, run on a real model.

With `SYNAPTUM_LOCAL_MODEL_URL` naming a running server (`.ci/run` starts llama-server with
`scripts/modelo_local.py`), every property notebook runs in a fresh kernel with
`SYNAPTUM_BASE_URL` pointing at it. What the model says differs from the page, so the printed
output is not compared: each notebook must run to its end with its own asserts holding (they
are about the runtime: no effect twice, no turn paid twice, events on disk), and its header
must say it talks to the server. Notebooks that use the double by design say so on their page
and in their header (`comun.encabezado(titulo, siempre_el_doble=True)`): that call is the one
place that names them, and a test here, which needs no server, checks it against what each
notebook does (it never calls `comun.gateway`) and says (its page says «siempre sobre el doble»).

What each notebook printed is kept in `build/modelo-real/<notebook>.txt`
(`scripts.captura_modelo.CAPTURAS`): `python -m scripts.captura_modelo` turns two of them into
the excerpt on *Modelos*.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

from scripts.captura_modelo import write_captures
from scripts.kernel import News, run_notebooks_sync
from scripts.pages import NOTEBOOKS, property_notebooks, read_notebook, relative, source_of
from tests.real import NO_SERVER

BASE_URL = os.environ.get("SYNAPTUM_LOCAL_MODEL_URL")
MODEL = os.environ.get("SYNAPTUM_LOCAL_MODEL_NAME", "qwen2.5-coder-0.5b-instruct")
needs_a_server = pytest.mark.skipif(not BASE_URL, reason=NO_SERVER)

_ALWAYS_THE_DOUBLE = re.compile(r"\bencabezado\([^\n]*\bsiempre_el_doble=True\)")
_CALLS_THE_GATEWAY = re.compile(r"(?<![\w.])gateway\(")


def _code(notebook) -> str:
    return "\n".join(source_of(c) for c in notebook["cells"] if c["cell_type"] == "code")


def _code_and_helpers(path) -> str:
    """The notebook's code and its helper processes' (`_hijo_NN.py`, `_trabajador_NN.py`…)."""
    helpers = sorted(path.parent.glob(f"_*_{path.name[:2]}.py"))
    return "\n".join([_code(read_notebook(path)), *(h.read_text("utf-8") for h in helpers)])


def on_the_double_by_design() -> set[str]:
    """The notebooks whose point needs the double (each page says why), read from their
    header call, `encabezado(..., siempre_el_doble=True)`; *Modelos* lists them, generated
    from this same call (scripts/hechos.py, `always_the_double`)."""
    return {
        path.stem
        for path in property_notebooks()
        if _ALWAYS_THE_DOUBLE.search(_code(read_notebook(path)))
    }


def _comun():
    spec = importlib.util.spec_from_file_location("comun_de_los_cuadernos", NOTEBOOKS / "comun.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_notebooks_that_say_they_always_use_the_double_are_those_that_do():
    """No server needed: a header saying «usa siempre el doble» is true of what the notebook
    does (neither it nor its helper processes call `comun.gateway`, so no model variable
    reaches it) and of what its page
    says; a notebook that never calls the gateway and says nothing would print «exporta
    SYNAPTUM_BASE_URL…», which would change nothing."""
    by_design = on_the_double_by_design()
    assert by_design, "no notebook declares siempre_el_doble=True: the pattern went stale"
    for path in property_notebooks():
        notebook = read_notebook(path)
        calls_the_gateway = bool(_CALLS_THE_GATEWAY.search(_code_and_helpers(path)))
        assert (path.stem in by_design) != calls_the_gateway, (
            f"{relative(path)}: its header says siempre_el_doble={path.stem in by_design}, "
            f"and it {'calls' if calls_the_gateway else 'never calls'} comun.gateway"
        )
        prose = "\n".join(source_of(c) for c in notebook["cells"] if c["cell_type"] == "markdown")
        says_so = "siempre sobre el doble" in prose
        assert says_so == (path.stem in by_design), (
            f"{relative(path)}: its page {'says' if says_so else 'does not say'} it runs "
            "«siempre sobre el doble», its header the opposite"
        )


#: The server's log (`scripts/modelo_local.py` writes it): a line for each request it takes
#: and each one it ends, so a cell waiting for answers fails only when the server says nothing.
SERVER_LOG = os.environ.get("SYNAPTUM_LOCAL_MODEL_LOG")


@pytest.fixture(scope="module")
def runs():
    assert BASE_URL is not None
    # one server, one slot: running kernels side by side would only queue at the server
    runs = run_notebooks_sync(
        property_notebooks(),
        parallel=2,
        # 600 s without news (a hang bound): a cell's calls wait behind the other kernel's at
        # the server's one slot, so on a busy machine a cell that progresses outlasts any bound
        # on its whole length (12_salida_tipada did, under eight CPU hogs)
        timeout=600,
        news=News.of_file(Path(SERVER_LOG)) if SERVER_LOG else None,
        # a read waits up to 600 s (a hang bound): the server has one slot and, on a busy
        # machine, a request waits in its queue longer than the gateway's default 120 s
        model={"SYNAPTUM_BASE_URL": BASE_URL, "SYNAPTUM_MODEL": MODEL, "SYNAPTUM_TIMEOUT": "600"},
    )
    write_captures({run.path.stem: run.printed for run in runs if not run.problems()})
    return runs


@needs_a_server
def test_every_notebook_runs_to_its_end_on_the_real_model(runs):
    failures = [
        f"{relative(run.path)}:\n" + "\n".join(run.problems()) for run in runs if run.problems()
    ]
    for run in runs:  # what the model made of each notebook: for the log, not asserted
        sys.stdout.write(f"\n── {relative(run.path)} ({run.seconds:.1f} s)\n{run.printed}")
    assert not failures, "\n\n".join(failures)


@needs_a_server
def test_the_header_says_which_model_answers(runs):
    by_design = on_the_double_by_design()
    on_the_double = _comun().MODO_SIEMPRE_EL_DOBLE
    for run in runs:
        lines = run.printed.splitlines()
        mode = lines[3] if len(lines) > 3 else ""
        if run.path.stem in by_design:
            assert mode == on_the_double, (relative(run.path), mode)
        else:
            assert mode == f"HTTP directo · {BASE_URL}", (relative(run.path), mode)
