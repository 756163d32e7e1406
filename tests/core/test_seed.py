"""The seed page's acceptance test: its program, imports pointed at synaptum_lite, run as a
plain script, prints the seed's "Lo que imprime" block byte for byte; and notebook 02, its
executable page, promises exactly that block too.

`seed_02_durabilidad.salida.txt` is a verbatim copy of `shared/seed/02_durabilidad.salida.txt`
(the seed's own text, spacing included), kept here so a clone carries what it is held to.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from scripts.pages import expected_block, read_notebook
from tests.bounds import HANG

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SEED_OUTPUT = (HERE / "seed_02_durabilidad.salida.txt").read_text(encoding="utf-8")
MODEL_VARIABLES = ("SYNAPTUM_", "AXONIUM_")


def test_the_seed_program_prints_the_seed_block_byte_for_byte(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(MODEL_VARIABLES)}
    env["TMPDIR"] = str(tmp_path)  # the seed's `tempfile.mkdtemp()` is never removed
    result = subprocess.run(
        [sys.executable, str(HERE / "seed_02_durabilidad.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=HANG,
        check=True,
    )
    assert result.stdout == SEED_OUTPUT


def test_notebook_02_promises_the_seed_block_exactly():
    notebook = read_notebook(ROOT / "notebooks" / "propiedades" / "02_durabilidad.ipynb")
    assert expected_block(notebook).text == SEED_OUTPUT
