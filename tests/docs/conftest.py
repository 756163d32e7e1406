"""One run of the docs check per test session: every property notebook in a fresh kernel, and
the site built once (`mkdocs build --strict`).

The build is the slowest part and does not depend on running anything, so it starts as soon
as collection ends, while the rest of the suite (tests/core…) runs; the kernels start when the
first page test needs them.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from scripts.claims import recording
from scripts.kernel import NotebookRun, run_notebooks_sync
from scripts.pages import property_notebooks
from scripts.site import start_build

_early_build: tuple[subprocess.Popen[str], Path] | None = None
_finished_build: tuple[Path, int, str] | None = None
#: Fixtures that need the built site: requesting any of them starts the build early.
_NEEDS_THE_SITE = ("docs_check", "built_site")


def pytest_collection_finish(session: pytest.Session) -> None:
    global _early_build
    wanted = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    if wanted & set(_NEEDS_THE_SITE):
        site_dir = Path(tempfile.mkdtemp(prefix="synaptum-site-"))
        _early_build = (start_build(site_dir), site_dir)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _early_build:
        build, site_dir = _early_build
        if build.poll() is None:
            build.kill()
        build.wait()
        shutil.rmtree(site_dir, ignore_errors=True)


def finished_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    """The session's one site build, finished: its directory, return code and log.

    Waits for the build started when collection ended; builds now when none was started.
    tests/site reads the same build.
    """
    global _finished_build
    if _finished_build is None:
        if _early_build:
            build, site_dir = _early_build
        else:
            site_dir = tmp_path_factory.mktemp("site")
            build = start_build(site_dir)
        log, _ = build.communicate(timeout=300)
        _finished_build = (site_dir, build.returncode, log)
    return _finished_build


@dataclass
class DocsCheck:
    runs: dict[Path, NotebookRun]
    site_dir: Path
    build_returncode: int
    build_log: str
    #: The claim ids that `comun.afirma` checked (and found true) while the notebooks ran.
    claims_checked: set[str] = field(default_factory=set)


_docs_check: DocsCheck | None = None


@pytest.fixture(scope="session")
def docs_check(tmp_path_factory: pytest.TempPathFactory) -> DocsCheck:
    return run_docs_check(tmp_path_factory)


def run_docs_check(tmp_path_factory: pytest.TempPathFactory) -> DocsCheck:
    """The session's one docs check: tests/site's `docs_check` reads the same runs (a fixture
    imported into another conftest would run every notebook a second time)."""
    global _early_build, _docs_check
    if _docs_check is not None:
        return _docs_check
    if not _early_build and not _finished_build:  # the build runs while the kernels do
        site_dir = tmp_path_factory.mktemp("site")
        _early_build = (start_build(site_dir), site_dir)
    notebooks = property_notebooks()
    try:
        with recording() as claims_checked:
            runs = dict(zip(notebooks, run_notebooks_sync(notebooks), strict=True))
    finally:
        site_dir, returncode, log = finished_build(tmp_path_factory)
    _docs_check = DocsCheck(runs, site_dir, returncode, log, claims_checked)
    return _docs_check
