"""`scripts/postgres_local.sh`, for whoever wants the tests on a system PostgreSQL: it starts a
throwaway cluster, prints the lines to export, restarts it (the fault test's restart) and stops
it. It runs a system server, so this test runs where one is installed; elsewhere it is skipped
(the script would install one with apt-get, which the suite never does)."""

from __future__ import annotations

import glob
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.bounds import HANG

from .store import import_psycopg

psycopg = import_psycopg()

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_SERVER = bool(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl") or shutil.which("pg_ctl"))


def script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "scripts/postgres_local.sh", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
        check=True,
    )


@pytest.mark.skipif(
    not SYSTEM_SERVER, reason="no system PostgreSQL here (apt-get install postgresql)"
)
def test_postgres_local_starts_prints_its_url_restarts_and_stops_a_system_server():
    # not under pytest's tmp_path: as root the server runs as `postgres`, who may not enter it
    parent = Path(tempfile.mkdtemp(prefix="synaptum-pg-local-"))
    parent.chmod(0o755)
    folder = parent / "pg"
    started = script("start", str(folder))
    try:
        lines = started.stdout.splitlines()
        assert lines[0].startswith("export SYNAPTUM_TEST_POSTGRES_URL=postgresql://synaptum@")
        assert lines[1] == f"export SYNAPTUM_TEST_POSTGRES_DIR={folder}"
        url = lines[0].partition("=")[2]
        with psycopg.connect(url, autocommit=True) as db:
            before = db.execute("SELECT pg_postmaster_start_time()").fetchone()[0]
        script("restart", str(folder))
        with psycopg.connect(url, autocommit=True) as db:  # the same URL after the restart
            assert db.execute("SELECT pg_postmaster_start_time()").fetchone()[0] > before
        assert script("env", str(folder)).stdout == started.stdout
    finally:
        script("stop", str(folder))
        shutil.rmtree(parent, ignore_errors=True)
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=2)
