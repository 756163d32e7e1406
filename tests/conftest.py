"""The whole suite: bytecode is cached, the PostgreSQL server the tests started, if any, stops
when the session ends, and the summary says which PostgreSQL the tests ran on.

The suite runs on pytest-xdist workers (`-n`, set in pyproject.toml), one test file per worker
at a time (`--dist loadfile`: a file's module fixtures are made once). Each worker starts its
own PostgreSQL when one of its tests needs it; the summary names what each worker ran on."""

from __future__ import annotations

import os
import sys

import pytest

from tests.docs import afirmaciones_sesion, referencia_afirmaciones
from tests.postgres import store
from tests.real import NO_SERVER

# Imports are most of a kernel's start-up (about 1 s with .pyc files, 4 s without, here). uv
# no longer compiles the environment (pyproject.toml says why), so Python writes each .pyc the
# first time a module is imported; where PYTHONDONTWRITEBYTECODE is set (some machines and
# containers), it never would, and every kernel, child process and site build would compile its
# libraries again. The test session and the processes it starts write them, once.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

_stopped_in: list[float] = []
_from_workers: list[str] = []  # xdist: each worker's line about PostgreSQL

NO_SIGKILL = pytest.mark.skip(
    reason="SIGKILLs child processes, and Windows has no SIGKILL (marker posix_signals)"
)


#: The files whose tests take longest, longest first: the workers start them before the others.
#: xdist (`--dist loadfile`) hands out a file at a time, by default the files with the most tests
#: first; these few-test files then came last, and one worker ran the real model's notebooks
#: alone while the other sat idle (on a loaded machine, about 30 of a run's 72 minutes). Seconds at
#: rest (`--durations`): 154, 96, 61, 53, 48. pyproject.toml turns xdist's own order off
#: (`--no-loadscope-reorder`), so this one is kept.
LONGEST_FIRST = (
    "tests/real/test_notebooks_on_a_real_model.py",
    "tests/site/test_en_el_navegador.py",
    "tests/core/test_kill.py",
    "tests/site/test_lo_que_imprime.py",
    "tests/core/test_kill_migration.py",
)


def longest_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """`items` grouped by file: `LONGEST_FIRST`'s files in its order, then the others by their
    number of tests, most first (xdist's own order); within a file, as collected."""
    by_file: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.nodeid.partition("::")[0], []).append(item)

    first = {path: place for place, path in enumerate(LONGEST_FIRST)}

    def rank(path: str) -> tuple[int, int]:
        return (first[path], 0) if path in first else (len(first), -len(by_file[path]))

    return [item for path in sorted(by_file, key=rank) for item in by_file[path]]


def pytest_collection_modifyitems(config, items):
    missing = [path for path in LONGEST_FIRST if not (config.rootpath / path).is_file()]
    if missing:  # renamed or gone: say so rather than quietly schedule it last again
        raise pytest.UsageError(f"tests/conftest.py: LONGEST_FIRST names {missing}, not found")
    items[:] = longest_first(items)
    if sys.platform == "win32":
        for item in items:
            if item.get_closest_marker("posix_signals"):
                item.add_marker(NO_SIGKILL)


@pytest.fixture(autouse=True)
def _no_store_server_outlives_its_test():
    # A store server a test started stops when the test ends; one its module's fixtures started
    # (set up before this fixture: test_kill's store for every kill point) stops with the module
    # or, at the latest, with the session (pytest_sessionfinish).
    servers = sys.modules.get("tests.core.http_store")  # loaded only by tests that start one
    before = list(servers.RUNNING) if servers is not None else []
    yield
    servers = sys.modules.get("tests.core.http_store")
    if servers is not None:
        servers.stop_all(keep=before)


def pytest_configure(config):
    # The reference's docstrings are claims (tests/docs/referencia_afirmaciones.py): a test
    # bound to one must pass in the same session. The plugin records what ran and decides.
    config.pluginmanager.register(referencia_afirmaciones.Plugin(config), "referencia")
    # So are some pages' sentences: their tests, selected in the session, are not run twice.
    config.pluginmanager.register(afirmaciones_sesion.Plugin(config), "afirmaciones-sesion")


def pytest_sessionfinish(session, exitstatus):
    servers = sys.modules.get("tests.core.http_store")
    if servers is not None:
        servers.stop_all()
    took = store.stop_embedded()
    if took is not None:
        _stopped_in.append(took)
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller writes the summary
        workeroutput["postgres"] = _postgres_line()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    line = getattr(node, "workeroutput", {}).get("postgres")
    if line:
        _from_workers.append(f"{line} [{node.gateway.id}]")


def _postgres_line() -> str:
    line = store.which_server()
    if _stopped_in:
        line += f", stopped and deleted in {_stopped_in[0]:.1f} s"
    return line


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    url = os.environ.get("SYNAPTUM_LOCAL_MODEL_URL")  # tests/real: did the real model run?
    if url:
        terminalreporter.write_line(f"real model: llama-server at {url}")
    else:
        terminalreporter.write_line(NO_SERVER, yellow=True, bold=True)
    if _from_workers:
        for line in sorted(_from_workers):
            terminalreporter.write_line(line)
    else:
        terminalreporter.write_line(_postgres_line())
