"""The operator's command line, run as a person runs it: `python -m synaptum_lite` in a process
of its own, on a SQLite file and on a PostgreSQL schema.

The journals are real: the cashier of `tests/core/agents.py` runs in a child process, which
dies inside its transfer (SIGKILL: an uncertain effect), stops half way (an open run) or
stalls holding its run (a driver holds it now); an approval is asked by a policy.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from synaptum_lite import Agent, Proposal, Session, SqliteCheckpointer, Verdict, load_events
from synaptum_lite.testing import ScriptedGateway, says
from tests.bounds import HANG
from tests.postgres.store import postgres_location, require_server

from .agents import HERRAMIENTAS, TASK, cajero, open_store, responder
from .test_kill import ROOT, child, effects

pytestmark = pytest.mark.posix_signals  # a child dies by SIGKILL inside its transfer

STORE_KINDS = ["sqlite", "postgres"]


def cli(*args: str, stdin: str | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "synaptum_lite", *args],
        cwd=cwd,
        input=stdin,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},  # 80 columns, as documented
        capture_output=True,
        text=True,
        timeout=HANG,
    )


def store_in(kind: str, tmp: Path) -> str:
    tmp.mkdir(exist_ok=True)
    return str(tmp / "runs.db") if kind == "sqlite" else postgres_location(tmp)


def ask_approval(store: str, run_id: str = "aprobar") -> None:
    """Run `run_id` until the policy asks a person about its transfer."""

    def policy(proposal: Proposal) -> Verdict:
        if proposal.tool == "transferir":
            return Verdict.require_approval("más de 50 €")
        return Verdict.allow()

    async def drive() -> None:
        gateway = ScriptedGateway([responder] * 20, tools=HERRAMIENTAS, policy=policy)
        async for _ in cajero().run(TASK, session=Session(run_id, gateway, open_store(store))):
            pass

    asyncio.run(drive())


@pytest.fixture(params=STORE_KINDS)
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store with four runs: closed, uncertain, open, waiting for approval."""
    store = store_in(request.param, tmp_path)
    assert child(store, tmp_path, "cerrado").returncode == 0
    assert child(store, tmp_path, "incierto", "--die-in", "transferir").returncode == -9
    assert child(store, tmp_path, "abierto", "--stop-at", "3").returncode == 0
    ask_approval(store)
    return store


def events_of(store: str, run_id: str) -> int:
    return len(asyncio.run(load_events(open_store(store), run_id)))


def test_runs_lists_every_run_with_its_state_and_usage(journal: str) -> None:
    listed = cli("runs", journal)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split()[:4] for line in listed.stdout.splitlines()[1:]]
    assert rows == [
        ["cerrado", "closed", "15", "135/35"],
        ["incierto", "uncertain", "7", "38/19"],
        ["abierto", "open", "3", "15/5"],
        ["aprobar", "approval", "7", "38/19"],
    ]
    assert "answered" in listed.stdout.splitlines()[1]
    assert all(len(line) <= 80 for line in listed.stdout.splitlines())
    waiting = cli("runs", journal, "--state", "waiting", "--json")
    found = [json.loads(line) for line in waiting.stdout.splitlines()]
    assert [(r["run"], r["state"]) for r in found] == [
        ("incierto", "uncertain"),
        ("aprobar", "approval"),
    ]
    assert found[0]["usage"] == {"in": 38, "out": 19}
    assert found[0]["detail"].startswith("000003-tool: transferir(origen='ES91'")


def test_runs_cuts_a_run_id_too_long_for_the_width_and_wide_or_json_print_it_whole(
    tmp_path: Path,
) -> None:
    long_id = "pedido-" + "x" * 2990 + "-fin"  # 3,001 characters
    store = tmp_path / "runs.db"

    async def closed(run_id: str) -> None:
        session = Session(run_id, ScriptedGateway([says("ok")]), SqliteCheckpointer(store))
        async for _ in Agent("a", model="m", instructions="Contesta.").run("t", session=session):
            pass

    for run_id in ("corto", long_id):
        asyncio.run(closed(run_id))

    for width in ("80", "50"):
        listed = cli("runs", str(store), "--width", width)
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        assert all(len(line) <= int(width) for line in lines), [len(line) for line in lines]
    assert [line.split()[:3] for line in lines[1:]] == [  # at 50 columns: 8 for the id
        ["corto", "closed", "3"],
        ["pedido-…", "closed", "3"],
    ]
    at_80 = cli("runs", str(store)).stdout.splitlines()  # 80 by default
    assert at_80[2].startswith("pedido-" + "x" * 30 + "…  closed ")  # 38 columns for the id
    assert all(len(line) <= 80 for line in at_80)
    wide = cli("runs", str(store), "--wide").stdout.splitlines()
    assert wide[2].startswith(long_id + "  closed ")  # whole, the line as long as it needs
    whole = [
        json.loads(line)["run"] for line in cli("runs", str(store), "--json").stdout.splitlines()
    ]
    assert whole == ["corto", long_id]
    assert "--wide" in cli("runs", "--help").stdout
    shown = cli("show", str(store), long_id)  # the whole id, as --wide printed it, finds the run
    assert shown.returncode == 0 and " · 3 events · " in shown.stdout


def test_show_prints_each_step_its_phases_and_what_waits_within_80_columns(journal: str) -> None:
    shown = cli("show", journal, "incierto")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "run incierto · agent cajero · model guionizado"
    assert lines[2] == "uncertain · 7 events · tokens in/out 38/19"
    assert (
        "000003-tool     a       transferir(origen='ES91', destino='ES12', importe=100.0)" in lines
    )
    assert lines[-1].strip() == "uncertain effect: resolve --result TEXT or --retry"
    assert all(len(line) <= 80 for line in lines)
    narrow = cli("show", journal, "incierto", "--width", "50").stdout.splitlines()
    assert all(len(line) <= 50 for line in narrow)
    assert "000003-tool     a       transferir(origen='ES91',…" in narrow  # cut, and said so
    approval = cli("show", journal, "aprobar").stdout
    assert "asks approval: más de 50 €" in approval and "resolve --approve or --deny" in approval


def test_resolve_records_the_result_and_the_run_ends_without_repeating_the_transfer(
    journal: str, tmp_path: Path
) -> None:
    resolved = cli(
        "resolve", journal, "incierto", "000003-tool", "--result", "hecha", "--by", "ana"
    )
    assert resolved.returncode == 0, resolved.stderr
    assert resolved.stdout.startswith("incierto 000003-tool: result recorded by ana\n")
    assert "result recorded by ana" in cli("show", journal, "incierto").stdout
    resumed = child(journal, tmp_path, "incierto")  # no operator in the child: the CLI was it
    assert resumed.returncode == 0 and "final" in resumed.stdout, resumed.stderr
    assert effects(tmp_path, "incierto")["transferir"] == 1


def test_resolve_allows_a_retry_and_the_transfer_runs_once_more(
    journal: str, tmp_path: Path
) -> None:
    assert cli("resolve", journal, "incierto", "000003-tool", "--retry").returncode == 0
    assert "retry allowed by operator" in cli("show", journal, "incierto").stdout
    resumed = child(journal, tmp_path, "incierto")
    assert resumed.returncode == 0, resumed.stderr
    assert effects(tmp_path, "incierto")["transferir"] == 2  # allowed by a person, on record


def test_resolve_approves_or_denies_an_approval_request(journal: str) -> None:
    denied = cli("resolve", journal, "aprobar", "000003-approval", "--deny", "--reason", "no")
    assert denied.returncode == 0, denied.stderr
    assert "denied by operator: no\n" in cli("show", journal, "aprobar").stdout  # no clock
    timed = cli("show", journal, "aprobar", "--times").stdout  # when asked: as journaled
    assert re.search(r"denied by operator: no at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", timed)
    again = cli("resolve", journal, "aprobar", "000003-approval", "--approve")
    assert again.returncode == 4
    assert "step 000003-approval is waiting for nobody, not for --approve" in again.stderr


def test_resolve_refuses_a_step_not_waiting_for_that_decision_and_writes_nothing(
    journal: str,
) -> None:
    before = events_of(journal, "incierto")
    wrong = cli("resolve", journal, "incierto", "000003-tool", "--approve")
    assert wrong.returncode == 4
    assert wrong.stderr == (
        "synaptum-lite: run 'incierto', step 000003-tool waits for an uncertain effect, not for "
        "--approve; nothing was written: use --result TEXT or --retry\n"
    )
    done = cli("resolve", journal, "incierto", "000001-tool", "--retry")
    assert done.returncode == 4 and "000001-tool is waiting for nobody" in done.stderr
    idempotent = cli("resolve", journal, "abierto", "000001-tool", "--retry")
    assert idempotent.returncode == 4  # an idempotent tool runs again: nobody decides
    assert events_of(journal, "incierto") == before


def stalled_owner(store: str, tmp_path: Path) -> subprocess.Popen[str]:
    """A live driver of run `r`, stalled inside its transfer (the effect done, the step not
    completed): the process, once it says so."""
    owner = subprocess.Popen(
        [sys.executable, "-m", "tests.core.agents", store, "r", str(tmp_path / "r.effects")]
        + ["--stall-in", "transferir"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "stalled"
    except BaseException:
        kill(owner)
        raise
    return owner


def kill(owner: subprocess.Popen[str]) -> None:
    """SIGKILL the driver and reap it."""
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    if owner.stdout is not None:
        owner.stdout.close()


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_run_held_by_a_driver_in_another_process_is_shown_held_and_not_resolved(
    kind: str, tmp_path: Path
) -> None:
    store = store_in(kind, tmp_path)
    owner = stalled_owner(store, tmp_path)
    try:
        assert cli("runs", store).stdout.splitlines()[1].split()[:2] == ["r", "held"]
        held = cli("resolve", store, "r", "000003-tool", "--retry")
        assert held.returncode == 5
        assert "run 'r' is being driven by another worker" in held.stderr
        assert held.stderr.endswith("; nothing was written\n")
    finally:
        kill(owner)
    # its driver died: the lock died with it, and a person decides now
    assert cli("runs", store).stdout.splitlines()[1].split()[:2] == ["r", "uncertain"]
    assert cli("resolve", store, "r", "000003-tool", "--retry").returncode == 0


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_export_then_import_moves_a_run_and_importing_again_adds_nothing(
    kind: str, tmp_path: Path
) -> None:
    source = store_in(kind, tmp_path)
    assert child(source, tmp_path, "r", "--stop-at", "6").returncode == 0
    exported = cli("export", source, "r")
    assert exported.returncode == 0, exported.stderr
    assert len(exported.stdout.splitlines()) == 1 + 6
    copy = store_in(kind, tmp_path / "copia")  # another file, or another schema
    label = "runs.db" if kind == "sqlite" else "postgresql://"
    first = cli("import", copy, stdin=exported.stdout)
    assert first.stdout.startswith(f"imported run r into {label}"), first.stderr
    assert first.stdout.endswith(": 6 events, 6 new\n")
    second = cli("import", copy, stdin=exported.stdout)
    assert second.stdout.endswith(": 6 events, 0 new\n")
    assert cli("export", copy, "r").stdout == exported.stdout
    resumed = child(copy, tmp_path, "r")
    assert resumed.returncode == 0 and events_of(copy, "r") == 15


def test_bad_input_says_what_happened_and_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "notas.db").write_text("no es un journal\n")
    (tmp_path / "vacio.db").write_text("")
    store = str(tmp_path / "runs.db")
    assert child(store, tmp_path, "r").returncode == 0
    cases = {
        ("runs", "notas.db"): (
            1,
            "notas.db is not a synaptum_lite journal (SQLite says: file is not a database)",
        ),
        ("runs", "vacio.db"): (1, "vacio.db is empty, not a synaptum_lite journal"),
        ("runs", "falta.db"): (3, "falta.db does not exist; name a journal file"),
        ("show", "runs.db", "otro"): (3, "no run 'otro' in runs.db; list them"),
        ("resolve", "runs.db", "r", "000009-tool", "--retry"): (
            3,
            "run 'r' has no step 000009-tool (it has: 000000-model,",
        ),
        ("resolve", "runs.db", "r", "000003-tool", "--retry"): (
            4,
            "run 'r', step 000003-tool is waiting for nobody, not for --retry; nothing was "
            "written: see what waits with synaptum-lite runs STORE --state waiting",
        ),
        ("runs", "runs.db", "--schema", "otro"): (2, "--schema is for a PostgreSQL URL"),
        ("export", "runs.db", "otro"): (3, "no run 'otro' in runs.db"),
    }
    for args, (code, message) in cases.items():
        result = cli(*args, cwd=tmp_path)
        assert (result.returncode, result.stdout) == (code, ""), (args, result)
        assert result.stderr.startswith(f"synaptum-lite: {message}"), (args, result.stderr)
    garbage = cli("import", "nuevo.db", stdin='{"x": 1}\n', cwd=tmp_path)
    assert garbage.returncode == 1 and "the export is not a synaptum_lite journal" in garbage.stderr
    assert not (tmp_path / "nuevo.db").exists()  # a refused import creates nothing
    text = cli("import", "nuevo.db", stdin="esto no es JSON\n", cwd=tmp_path)
    assert text.returncode == 1 and "the export is not a synaptum_lite journal" in text.stderr


def test_a_password_in_the_url_is_never_printed() -> None:
    for url in (
        "postgresql://ana:s3creto@127.0.0.1:1/journal",
        "postgresql://ana:s3creto@127.0.0.1:notaport/journal",
        "postgresql://ana:s3creto@127.0.0.1:1/journal#Mal",
    ):
        result = cli("runs", url)
        assert result.returncode == (1 if url.endswith(":1/journal") else 2), result.stderr
        assert result.stderr.startswith("synaptum-lite: ")
        assert "s3creto" not in result.stdout + result.stderr, result.stderr
    refused = cli("runs", "postgresql://ana:s3creto@127.0.0.1:1/journal").stderr
    assert "postgresql://ana@127.0.0.1:1/journal (schema synaptum_lite)" in refused
    port = cli("runs", "postgresql://ana:s3creto@127.0.0.1:notaport/journal").stderr
    assert port == "synaptum-lite: the URL's port 'notaport' is not a number; fix the URL\n"


def test_a_postgresql_schema_without_a_journal_is_not_created_by_reading() -> None:
    url = require_server()
    result = cli("runs", f"{url}#sin_journal_aqui")
    assert result.returncode == 3
    assert "(schema sin_journal_aqui) holds no synaptum_lite journal" in result.stderr
    assert "sin_journal_aqui" not in _schemas(url)


def _schemas(url: str) -> set[str]:
    import psycopg

    with psycopg.connect(url) as connection:
        return {row[0] for row in connection.execute("SELECT nspname FROM pg_namespace")}


def test_help_documents_every_exit_code() -> None:
    shown = cli("--help").stdout
    assert all(f"\n  {code}  " in shown for code in range(6))
    assert all(cli(name, "--help").returncode == 0 for name in ("runs", "show", "resolve"))


def test_every_command_escalar_shows_runs_as_written(tmp_path: Path) -> None:
    """Escalar's *Operar* table, each line run by a shell as a person types it (without
    `uv run`, which only picks this environment), in a fresh copy of a folder whose runs.db
    holds pedido-1 (an uncertain transfer at 000003-tool) and pedido-2 (an approval asked), and
    the module a worker would import the cashier's next version from."""
    from tests.docs.test_commands import shown_commands

    template = tmp_path / "carpeta"
    template.mkdir()
    died = child(str(template / "runs.db"), tmp_path, "pedido-1", "--die-in", "transferir")
    assert died.returncode == -signal.SIGKILL
    ask_approval(str(template / "runs.db"), "pedido-2")
    (template / "pedido-1.jsonl").write_text(
        cli("export", "runs.db", "pedido-1", cwd=template).stdout
    )
    # the worker's module, which `migrate --to agentes:cajero_v2` imports from the folder
    (template / "agentes.py").write_text("from tests.core.agents import cajero_v2\n")
    environment = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment['PATH']}"
    environment["PYTHONPATH"] = str(ROOT)
    commands = shown_commands()["docs/escalar.md"]
    assert len(commands) == 9, commands
    for number, command in enumerate(commands):
        folder = shutil.copytree(template, tmp_path / f"copia-{number}")
        shell = command.removeprefix("uv run ")
        done = subprocess.run(
            ["bash", "-c", shell], cwd=folder, env=environment, capture_output=True, text=True
        )
        assert done.returncode == 0, (command, done.stderr)
        assert done.stderr == "", (command, done.stderr)
