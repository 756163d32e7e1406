"""One run of the docs check per test session: every property notebook in a fresh kernel, and
the site built once (`mkdocs build --strict`).

The build is the slowest part and does not depend on running anything, so it starts as soon
as collection ends, while the rest of the suite (tests/core…) runs; the kernels start when the
first page test needs them.

With pytest-xdist (the suite runs on several workers), the session is each worker's, yet the
build and the notebooks' runs are still made once: the first worker to need one makes it, in a
folder every worker of the run shares, and the others wait for its result file (an event, not
a clock: the wait is bounded only to end a hang) and read it. The builder publishes the build
from a thread as soon as it ends, whether or not its own tests still need it.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from scripts.claims import recording
from scripts.kernel import NotebookRun, run_notebooks_sync
from scripts.pages import property_notebooks
from scripts.site import start_build

_early_build: tuple[subprocess.Popen[str], Path] | None = None
_finished_build: tuple[Path, int, str] | None = None
_publishing: threading.Thread | None = None  # xdist: the builder's thread that publishes it
#: Fixtures that need the built site: requesting any of them starts the build early.
_NEEDS_THE_SITE = ("docs_check", "built_site")
#: How long a worker waits for another worker's build or notebook runs before calling it a hang.
_HANG = 1800.0


def _shared_folder(factory: pytest.TempPathFactory) -> Path | None:
    """The folder every xdist worker of this run shares, or None without xdist."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    folder = factory.getbasetemp().parent / "docs-check-shared"
    folder.mkdir(exist_ok=True)
    return folder


def _first_to_claim(folder: Path, name: str) -> bool:
    """True for the one worker that creates `name` first (an atomic create)."""
    try:
        os.close(os.open(folder / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _publish(path: Path, value: object) -> None:
    part = path.with_suffix(".part")
    part.write_bytes(pickle.dumps(value))
    os.replace(part, path)  # readers see the whole file or none


def _wait_for(path: Path, what: str) -> Any:
    bound = time.monotonic() + _HANG
    while not path.exists():
        if time.monotonic() > bound:
            pytest.fail(f"another xdist worker never published {what} ({path})", pytrace=False)
        time.sleep(0.2)
    value = pickle.loads(path.read_bytes())
    if isinstance(value, _Failed):
        pytest.fail(f"the xdist worker that made {what} failed: {value.error}", pytrace=False)
    return value


@dataclass
class _Failed:
    error: str


def pytest_collection_finish(session: pytest.Session) -> None:
    global _early_build, _publishing
    wanted = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    if not wanted & set(_NEEDS_THE_SITE):
        return
    shared = _shared_folder(session.config._tmp_path_factory)  # type: ignore[attr-defined]
    if shared is None:
        site_dir = Path(tempfile.mkdtemp(prefix="synaptum-site-"))
        _early_build = (start_build(site_dir), site_dir)
    elif _first_to_claim(shared, "site.claimed"):
        site_dir = shared / "site"
        build = start_build(site_dir)
        _early_build = (build, site_dir)

        def publish() -> None:
            log, _ = build.communicate()
            _publish(shared / "site.done", (site_dir, build.returncode, log))

        _publishing = threading.Thread(target=publish, daemon=True)
        _publishing.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _publishing is not None:  # other workers may still wait for this worker's build
        _publishing.join(timeout=_HANG)
        return
    if _early_build and not os.environ.get("PYTEST_XDIST_WORKER"):
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
        shared = _shared_folder(tmp_path_factory)
        if shared is not None:
            if _first_to_claim(shared, "site.claimed"):  # nobody started it at collection
                site_dir = shared / "site"
                build = start_build(site_dir)
                log, _ = build.communicate(timeout=_HANG)
                _publish(shared / "site.done", (site_dir, build.returncode, log))
            _finished_build = _wait_for(shared / "site.done", "the site build")
            return _finished_build
        if _early_build:
            build, site_dir = _early_build
        else:
            site_dir = tmp_path_factory.mktemp("site")
            build = start_build(site_dir)
        log, _ = build.communicate(timeout=_HANG)
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
    shared = _shared_folder(tmp_path_factory)
    if shared is not None and not _first_to_claim(shared, "runs.claimed"):
        runs, claims_checked = _wait_for(shared / "runs.done", "the notebooks' runs")
        site_dir, returncode, log = finished_build(tmp_path_factory)
        _docs_check = DocsCheck(runs, site_dir, returncode, log, claims_checked)
        return _docs_check
    if shared is None and not _early_build and not _finished_build:
        site_dir = tmp_path_factory.mktemp("site")  # the build runs while the kernels do
        _early_build = (start_build(site_dir), site_dir)
    notebooks = property_notebooks()
    try:
        with recording() as claims_checked:
            runs = dict(zip(notebooks, run_notebooks_sync(notebooks), strict=True))
    except BaseException as error:
        if shared is not None:  # the others fail with the same error instead of waiting
            _publish(shared / "runs.done", _Failed(repr(error)))
        raise
    finally:
        site_dir, returncode, log = finished_build(tmp_path_factory)
    if shared is not None:
        _publish(shared / "runs.done", (runs, set(claims_checked)))
    _docs_check = DocsCheck(runs, site_dir, returncode, log, claims_checked)
    return _docs_check
