"""What a notebook leaves behind after its last cell fails it: output that arrives after the
last cell is idle, a thread still alive, a child process still running. JupyterLab would show
what they print; the page cannot. (The Timer and `clear_output` cases on a copy of notebook 02
are in test_mentiras.py.)"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

from scripts.kernel import run_notebooks_sync


def notebook(folder: Path, name: str, code: str) -> Path:
    page = nbformat.v4.new_notebook()
    page.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    cell = nbformat.v4.new_code_cell(code)
    cell.id = "ultima"
    page.cells = [cell]
    path = folder / f"{name}.ipynb"
    nbformat.write(page, path)
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("quieto")
    paths = [
        notebook(
            folder,
            "tarde",
            "import threading, time\n"
            "threading.Thread(target=lambda: (time.sleep(0.05), print('tarde')), daemon=True)"
            ".start()",
        ),
        notebook(
            folder,
            "hijo",
            f"import subprocess\nhijo = subprocess.Popen([{sys.executable!r}, '-c', "
            "'import time; time.sleep(30)'])",
        ),
        notebook(
            folder,
            "limpio",
            "import threading\nt = threading.Thread(target=print)\nt.start()\nt.join()",
        ),
    ]
    return {run.path.stem: run for run in run_notebooks_sync(paths)}


def test_output_after_the_last_cell_fails_the_notebook(runs) -> None:
    assert runs["tarde"].problems() == [
        'output arrived after the last cell was idle (after cell 0 (id "ultima")), which '
        "JupyterLab shows and the page cannot:\ntarde\n"
    ]


@pytest.mark.skipif(sys.platform != "linux", reason="the kernel lists its children from /proc")
def test_a_child_process_left_running_fails_the_notebook(runs) -> None:
    assert runs["hijo"].problems() == [
        "the notebook leaves 1 child process(es) running after its last cell (after cell 0 (id "
        '"ultima")): wait for them (or kill them) before the notebook ends'
    ]


def test_a_thread_that_ended_leaves_nothing_behind(runs) -> None:
    assert runs["limpio"].problems() == []
    assert runs["limpio"].printed == "\n"
