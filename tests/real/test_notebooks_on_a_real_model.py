"""The seed's promise, kept: the same notebooks, untouched, run on a real model.

With `SYNAPTUM_LOCAL_MODEL_URL` naming a running server (`.ci/run` starts llama-server with
`scripts/modelo_local.py`), every property notebook runs in a fresh kernel with
`SYNAPTUM_BASE_URL` pointing at it. What the model says differs from the page, so the printed
output is not compared: each notebook must run to its end with its own asserts holding (they
are about the runtime: no effect twice, no turn paid twice, events on disk), and its header
must say it talks to the server. Notebooks that use the double by design say so on their page
and in a line of their output.

What each notebook printed is kept in `build/modelo-real/<notebook>.txt`
(`scripts.captura_modelo.CAPTURAS`): `python -m scripts.captura_modelo` turns two of them into
the excerpt on *Modelos*.
"""

from __future__ import annotations

import os
import sys

import pytest

from scripts.captura_modelo import write_captures
from scripts.kernel import run_notebooks_sync
from scripts.pages import property_notebooks, relative
from tests.real import NO_SERVER

BASE_URL = os.environ.get("SYNAPTUM_LOCAL_MODEL_URL")
MODEL = os.environ.get("SYNAPTUM_LOCAL_MODEL_NAME", "qwen2.5-coder-0.5b-instruct")
pytestmark = pytest.mark.skipif(not BASE_URL, reason=NO_SERVER)

#: Notebooks whose point needs the double (their pages say why): 06 compares 18 killed runs
#: with one uninterrupted run, 09 compares the requests only the double keeps, 10 scripts
#: provider errors, 17 and 18 compare killed runs with uninterrupted ones, 19 counts the
#: messages a remote server receives across a kill.
ON_THE_DOUBLE_BY_DESIGN = {
    "06_kill_9",
    "09_contexto",
    "10_reintentos",
    "17_herramientas_mcp",
    "18_runs_a_la_vez",
    "19_agente_remoto",
}


@pytest.fixture(scope="module")
def runs():
    assert BASE_URL is not None
    # one server, one slot: running kernels side by side would only queue at the server
    runs = run_notebooks_sync(
        property_notebooks(),
        parallel=2,
        timeout=600,
        model={"SYNAPTUM_BASE_URL": BASE_URL, "SYNAPTUM_MODEL": MODEL},
    )
    write_captures({run.path.stem: run.printed for run in runs if not run.problems()})
    return runs


def test_every_notebook_runs_to_its_end_on_the_real_model(runs):
    failures = [
        f"{relative(run.path)}:\n" + "\n".join(run.problems()) for run in runs if run.problems()
    ]
    for run in runs:  # what the model made of each notebook: for the log, not asserted
        sys.stdout.write(f"\n── {relative(run.path)} ({run.seconds:.1f} s)\n{run.printed}")
    assert not failures, "\n\n".join(failures)


def test_the_header_says_which_model_answers(runs):
    for run in runs:
        lines = run.printed.splitlines()
        mode = lines[3] if len(lines) > 3 else ""
        if run.path.stem in ON_THE_DOUBLE_BY_DESIGN:
            assert "el doble" in run.printed or "guionizadas" in mode, relative(run.path)
        else:
            assert mode == f"HTTP directo · {BASE_URL}", (relative(run.path), mode)
