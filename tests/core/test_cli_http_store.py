"""The command line on a store server (`python -m synaptum_lite.stores.http_server`): its URL
is a STORE like a file or a PostgreSQL URL, reached with the token in SYNAPTUM_STORE_TOKEN."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bounds import HANG

from .http_store import TOKEN, StoreServer
from .test_cli import ask_approval, cli, events_of
from .test_kill import ROOT, child, effects

pytestmark = pytest.mark.posix_signals  # a child dies by SIGKILL inside its transfer


def cli_with(token: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v for k, v in os.environ.items() if k not in ("COLUMNS", "SYNAPTUM_STORE_TOKEN")
    }
    if token is not None:
        environment["SYNAPTUM_STORE_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "synaptum_lite", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=HANG,
    )


@pytest.fixture
def served(tmp_path: Path) -> tuple[str, StoreServer]:
    """runs.db with an uncertain transfer (incierto) and an approval asked (aprobar), and a
    store server over it."""
    db = str(tmp_path / "runs.db")
    died = child(db, tmp_path, "incierto", "--die-in", "transferir")
    assert died.returncode == -signal.SIGKILL
    ask_approval(db)
    return db, StoreServer(Path(db), log=tmp_path / "server.log")


def test_runs_and_show_through_the_server_print_what_they_print_on_the_file(served) -> None:
    db, server = served
    for command in (["runs", "{}"], ["runs", "{}", "--json"], ["show", "{}", "incierto"]):
        on_file = cli(*[part.format(db) for part in command])
        through = cli_with(TOKEN, *[part.format(server.url) for part in command])
        assert on_file.returncode == 0 and through.returncode == 0, through.stderr
        assert "incierto" in on_file.stdout and "aprobar" in cli("runs", db).stdout
        assert through.stdout == on_file.stdout, command
        assert TOKEN not in through.stdout + through.stderr


def test_resolve_through_the_server_is_written_once_and_the_run_ends_without_paying_again(
    served, tmp_path: Path
) -> None:
    db, server = served
    resolved = cli_with(
        TOKEN, "resolve", server.url, "incierto", "000003-tool", "--result", "hecha"
    )
    assert resolved.returncode == 0, resolved.stderr
    approved = cli_with(TOKEN, "resolve", server.url, "aprobar", "000003-approval", "--approve")
    assert approved.returncode == 0, approved.stderr
    assert "result recorded by operator" in cli("show", db, "incierto").stdout  # in the file
    resumed = child(db, tmp_path, "incierto")
    assert resumed.returncode == 0 and "final" in resumed.stdout, resumed.stderr
    assert effects(tmp_path, "incierto")["transferir"] == 1


def test_a_missing_or_wrong_token_is_refused_and_nothing_is_read_or_written(served) -> None:
    db, server = served
    before = events_of(db, "incierto")
    missing = cli_with(None, "resolve", server.url, "incierto", "000003-tool", "--retry")
    assert missing.returncode == 2 and missing.stdout == ""
    assert "set SYNAPTUM_STORE_TOKEN to the token the server was started with" in missing.stderr
    wrong = cli_with("otro-token", "resolve", server.url, "incierto", "000003-tool", "--retry")
    assert wrong.returncode == 1 and wrong.stdout == "", wrong.stderr
    assert "token" in wrong.stderr and "otro-token" not in wrong.stderr
    assert events_of(db, "incierto") == before


def test_a_bad_store_server_url_is_refused_naming_it_without_its_password(served) -> None:
    _, server = served
    with_password = server.url.replace("http://", "http://ana:s3creto@")
    refused = cli_with(TOKEN, "runs", with_password)
    assert refused.returncode == 2 and "carries credentials" in refused.stderr
    assert "s3creto" not in refused.stderr
    schema = cli_with(TOKEN, "runs", server.url, "--schema", "otro")
    assert schema.returncode == 2 and "--schema is for a PostgreSQL URL" in schema.stderr
    server.stop()
    gone = cli_with(TOKEN, "runs", server.url)
    assert gone.returncode == 1 and f"cannot read {server.url}" in gone.stderr, gone.stderr
    other = cli_with(TOKEN, "runs", "ftp://example.org/runs")
    assert other.returncode == 2 and "a store server's http:// URL" in other.stderr
