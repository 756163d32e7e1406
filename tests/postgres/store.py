"""The PostgreSQL server the tests use, and a fresh schema per test.

The tests that need a server run when `SYNAPTUM_TEST_POSTGRES_URL` names one, and are skipped
otherwise, with the way to enable them. In CI (`CI=true`) they must run: a missing URL fails.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import uuid
from pathlib import Path

import pytest

URL = os.environ.get("SYNAPTUM_TEST_POSTGRES_URL", "")
DIR = os.environ.get("SYNAPTUM_TEST_POSTGRES_DIR", "")
ENABLE = (
    'PostgreSQL tests need a server: run `eval "$(scripts/postgres_local.sh start)"` '
    "(or set SYNAPTUM_TEST_POSTGRES_URL=postgresql://user@host:port/db), then pytest again"
)
SESSION = uuid.uuid4().hex[:8]  # this test session's schemas, dropped when it ends
PREFIX = f"test_{SESSION}_"


def require_server() -> str:
    """The server's URL; skips the test (fails it, in CI) when there is none."""
    if not URL:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "CI must run the PostgreSQL tests, but SYNAPTUM_TEST_POSTGRES_URL is not set. "
                + ENABLE
            )
        pytest.skip(ENABLE)
    return URL


def import_psycopg():
    """psycopg, or a skip of the whole module when neither it nor a server is configured."""
    try:
        import psycopg
    except ImportError:
        if URL or os.environ.get("CI") == "true":
            raise
        pytest.skip(
            ENABLE + "; they also need psycopg: uv sync --extra postgres", allow_module_level=True
        )
    return psycopg


def schema_for(tmp: Path | str) -> str:
    """A schema of this session, one per test (derived from its temporary directory)."""
    return PREFIX + hashlib.sha256(str(tmp).encode()).hexdigest()[:12]


def postgres_store(tmp: Path):
    """A checkpointer on the test server, in the schema of the test that owns `tmp`."""
    url = require_server()
    from synaptum_lite.postgres import PostgresCheckpointer

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
    """Drop the schemas this session made."""
    import psycopg

    with psycopg.connect(URL, autocommit=True) as connection:
        names = [
            n
            for (n,) in connection.execute(
                "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, %s)", (PREFIX,)
            )
        ]
        for name in names:
            connection.execute(f'DROP SCHEMA "{name}" CASCADE')
