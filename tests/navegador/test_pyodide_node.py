"""The notebooks that can run in a browser print their page's block on Pyodide too.

Each runs under Node on the Pyodide that the site serves (pinned in `package.json`), with
this checkout's `synaptum_lite` and `notebooks/comun.py` unpacked from the same archive the
site serves (`scripts/navegador.py`), unpatched: one fresh Pyodide per notebook, its code
cells run in order with `runPythonAsync`. What it prints is compared with the page's block by
the same comparison as the kernel check, so a failure names the page, the notebook and the
cell. One line is treated specially: the header's mode line, which on Pyodide says there is no
model to export (`scripts.navegador.as_printed_locally`); every other line is compared exactly.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from scripts.kernel import CellRun, NotebookRun
from scripts.navegador import (
    NEEDS_A_PROCESS,
    as_printed_locally,
    browser_notebooks,
    package_archive,
)
from scripts.pages import REPO, mismatch, property_notebooks, read_notebook

RUNNER = REPO / "scripts" / "navegador_node.mjs"


def run_on_pyodide(node: str, notebooks: list[Path], scratch: Path) -> dict[Path, NotebookRun]:
    """Run `notebooks` on Pyodide under Node; one `NotebookRun` per notebook."""
    archive = scratch / "repo.zip"
    archive.write_bytes(package_archive())
    # Two Node processes, each its own half: loading Pyodide is most of the time (24 s for the
    # thirteen in one process here, 16 s in two)
    halves = [notebooks[0::2], notebooks[1::2]]
    runners = [
        subprocess.Popen(
            [node, str(RUNNER), str(archive), *map(str, half)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for half in halves
        if half
    ]
    lines: dict[Path, str] = {}
    for runner, half in zip(runners, halves, strict=False):
        stdout, stderr = runner.communicate(timeout=600)
        assert runner.returncode == 0, f"the Node runner failed:\n{stderr[-3000:]}"
        lines.update(zip(half, stdout.splitlines(), strict=True))
    runs = {}
    for path in notebooks:
        line = lines[path]
        result = json.loads(line)
        cells = [
            CellRun(
                index=cell["index"],
                cell_id=cell["id"],
                source="",
                stdout=cell["stdout"],
                stderr=cell["stderr"],
                shown=["a value"] if cell["shown"] else [],
                error=cell["error"],
            )
            for cell in result["cells"]
        ]
        runs[path] = as_printed_locally(NotebookRun(path, cells, result["total_ms"] / 1000))
    return runs


@pytest.fixture(scope="module")
def pyodide_runs(node, tmp_path_factory) -> dict[Path, NotebookRun]:
    return run_on_pyodide(node, browser_notebooks(), tmp_path_factory.mktemp("pyodide"))


def test_every_notebook_runs_in_a_browser_unless_it_needs_a_real_process():
    names = {path.stem for path in property_notebooks()}
    assert set(NEEDS_A_PROCESS) <= names, "a notebook named in NEEDS_A_PROCESS does not exist"
    for path in set(property_notebooks()) - set(browser_notebooks()):
        # the notebook's cells, and the helpers beside it that carry its number (_hijo_19.py)
        helpers = sorted(path.parent.glob(f"_*_{path.stem[:2]}.py"))
        source = json.dumps(read_notebook(path)["cells"]) + "".join(
            helper.read_text(encoding="utf-8") for helper in helpers
        )
        # a child process, or a server started with this interpreter (MCP's stdio_client)
        assert "subprocess" in source or "sys.executable" in source, (
            f"{path.name} is kept out of the browser but neither it nor its helpers "
            f"({', '.join(h.name for h in helpers) or 'none'}) start a process"
        )


@pytest.mark.parametrize("notebook", browser_notebooks(), ids=lambda path: path.stem)
def test_on_pyodide_the_notebook_prints_its_pages_block(notebook: Path, pyodide_runs) -> None:
    problem = mismatch(notebook, read_notebook(notebook), pyodide_runs[notebook])
    if problem:
        pytest.fail(f"On Pyodide (Node): {problem}", pytrace=False)
