"""One run of the docs check per test session: every property notebook in a fresh kernel, and
the site built once (`mkdocs build --strict`) while the kernels run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from scripts.kernel import NotebookRun, run_notebooks_sync
from scripts.pages import property_notebooks
from scripts.site import start_build


@dataclass
class DocsCheck:
    runs: dict[Path, NotebookRun]
    site_dir: Path
    build_returncode: int
    build_log: str


@pytest.fixture(scope="session")
def docs_check(tmp_path_factory: pytest.TempPathFactory) -> DocsCheck:
    site_dir = tmp_path_factory.mktemp("site")
    build = start_build(site_dir)
    notebooks = property_notebooks()
    try:
        runs = dict(zip(notebooks, run_notebooks_sync(notebooks), strict=True))
    finally:
        log, _ = build.communicate(timeout=300)
    return DocsCheck(runs, site_dir, build.returncode, log)
