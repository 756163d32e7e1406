"""The operator's command line attacked as an outside tester would: bad arguments, hostile
journals, closed pipes, full disks, damaged runs, and a live driver holding the run.

Every case runs the real command (`python -m synaptum_lite`) in a process of its own on real
journals: the cashier of `tests/core/agents.py` dies inside its transfer (SIGKILL: an uncertain
effect) or stalls there holding its run. What the command prints is checked against the journal
read on its own, with `sqlite3`, and a refused command is shown to have written nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from synaptum_lite import Agent, Session, SqliteCheckpointer, tool
from synaptum_lite.stores.transfer import seal
from synaptum_lite.testing import ScriptedGateway, calls, says
from tests.bounds import HANG

from .test_cli import STORE_KINDS, ask_approval, events_of, kill, stalled_owner, store_in
from .test_kill import ROOT, child, effects

pytestmark = pytest.mark.posix_signals  # drivers die by SIGKILL inside their transfer

NOT_RESOLVED = "synaptum-lite: "


def cli(
    *args: str | bytes, cwd: Path = ROOT, stdout: int | None = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "synaptum_lite", *args],
        cwd=cwd,
        # 80 columns; this tree's package, from any folder
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"PYTHONPATH": str(ROOT)},
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=HANG,
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder whose runs.db holds a closed run, an uncertain transfer and an approval."""
    folder = tmp_path_factory.mktemp("plantilla")
    store = str(folder / "runs.db")
    assert child(store, folder, "cerrado").returncode == 0
    assert child(store, folder, "incierto", "--die-in", "transferir").returncode == -9
    ask_approval(store)
    return folder


@pytest.fixture
def journal(template: Path, tmp_path: Path) -> Path:
    """A fresh copy of the template's journal, for a test to change."""
    folder = shutil.copytree(template, tmp_path / "copia")
    return folder / "runs.db"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ── output ──────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "args", [("runs",), ("show", "incierto"), ("export", "cerrado")], ids=lambda a: a[0]
)
def test_a_reader_that_stops_reading_ends_the_command_quietly_with_exit_6(
    journal: Path, args: tuple[str, ...]
) -> None:
    reading, writing = os.pipe()
    os.close(reading)  # as `| head` leaves it once it has its lines: nobody reads any more
    try:
        done = cli(args[0], str(journal), *args[1:], stdout=writing)
    finally:
        os.close(writing)
    assert (done.returncode, done.stderr) == (6, ""), done.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_stdout_that_cannot_be_written_is_said_and_a_resolve_says_its_decision_was_written(
    journal: Path,
) -> None:
    before = events_of(str(journal), "incierto")
    with open("/dev/full", "w") as full:
        shown = cli("show", str(journal), "incierto", stdout=full.fileno())
        resolved = cli(
            "resolve", str(journal), "incierto", "000003-tool", "--result", "hecha",
            stdout=full.fileno(),
        )  # fmt: skip
    assert shown.returncode == 6
    assert shown.stderr == "synaptum-lite: stdout could not be written (No space left on device)\n"
    assert resolved.returncode == 6  # not 1, which says the store failed
    assert resolved.stderr == (
        "synaptum-lite: the decision (result recorded by operator) was written, but stdout "
        "could not be written (No space left on device)\n"
    )
    assert events_of(str(journal), "incierto") == before + 1  # it was: said as it is


def test_a_command_started_with_stdout_closed_says_so_and_what_it_wrote(journal: Path) -> None:
    def closed(*args: str) -> subprocess.CompletedProcess[str]:
        command = " ".join([sys.executable, "-m", "synaptum_lite", *args, ">&-"])
        return subprocess.run(
            ["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=HANG
        )

    listed = closed("runs", str(journal))
    assert (listed.returncode, listed.stderr) == (  # before: 1 and a traceback
        6,
        "synaptum-lite: stdout could not be written (it is closed)\n",
    )
    resolved = closed("resolve", str(journal), "incierto", "000003-tool", "--retry")
    assert (resolved.returncode, resolved.stderr) == (
        6,
        "synaptum-lite: the decision (retry allowed by operator) was written, but stdout could "
        "not be written (it is closed)\n",
    )
    assert "retry allowed by operator" in cli("show", str(journal), "incierto").stdout


@tool
def consultar(cuenta: str) -> str:
    """El saldo de una cuenta."""
    return "ok\x1b[2K\x1b[1A\rfalso\x07 \u202eodnum\x9b31m"


HOSTILE_RUNS = [
    "a\nfalso     closed      15  1/1       answered",  # a row of its own, if printed raw
    "\x1b[31mrojo\x1b[0m",
    "tab\taqui",
    "\u202emal",
]


def hostile_journal(database: Path) -> None:
    """Runs whose ids, task, tool arguments, result and answer hold what steers a terminal."""
    import asyncio

    agent = Agent("cajero", model="m", instructions="Contesta.", tools=[consultar])

    async def drive() -> None:
        for run_id in HOSTILE_RUNS:
            script = [calls("consultar", cuenta="E\x1b[1mS"), says("fin\x1b]0;titulo\x07")]
            session = Session(run_id, ScriptedGateway(script), SqliteCheckpointer(database))
            async for _ in agent.run("tarea\x1b[2J", session=session):
                pass

    asyncio.run(drive())


def test_characters_that_steer_a_terminal_are_printed_as_escapes_never_obeyed(
    tmp_path: Path,
) -> None:
    database = tmp_path / "hostil.db"
    hostile_journal(database)
    listed = cli("runs", str(database), "--wide")  # ids whole, as long as they are
    assert listed.returncode == 0, listed.stderr
    rows = listed.stdout.splitlines()
    assert len(rows) == 1 + len(HOSTILE_RUNS)  # before: the newline made a fifth, false row
    cut = cli("runs", str(database)).stdout.splitlines()  # 80 columns: the long id is cut
    assert cut[1].startswith("a\\nfalso     closed      15  1/1     …  closed ")  # 38 columns
    assert all(len(row) <= 80 for row in cut)
    assert [row[:6] for row in cut[2:]] == ["\\x1b[3", "tab\\ta", "\\u202e"]
    column = rows[0].index("STATE")
    assert [row[:column].rstrip() for row in rows[1:]] == [
        "a\\nfalso     closed      15  1/1       answered",
        "\\x1b[31mrojo\\x1b[0m",
        "tab\\taqui",
        "\\u202emal",
    ]
    shown = cli("show", str(database), "\x1b[31mrojo\x1b[0m")
    assert shown.returncode == 0, shown.stderr
    assert "→ ok\\x1b[2K\\x1b[1A falso\\x07 \\u202eodnum\\x9b31m" in shown.stdout
    assert "says «fin\\x1b]0;titulo\\x07»" in shown.stdout
    assert "task: tarea\\x1b[2J" in shown.stdout
    for printed in (listed.stdout, shown.stdout):
        assert not any(c in printed for c in "\x1b\x07\r\t\x9b\u202e"), printed
    as_json = cli("runs", str(database), "--json").stdout
    assert not any(c in as_json for c in "\x1b\x9b\u202e")
    assert [json.loads(line)["run"] for line in as_json.splitlines()] == HOSTILE_RUNS
    missing = cli("show", str(database), "\x1b[2Jotro")
    assert missing.returncode == 3 and "\x1b" not in missing.stderr


# ── reading changes nothing, and hides nothing ─────────────────────────────────────────────


def test_reading_a_sqlite_database_without_tables_leaves_it_as_it_was(tmp_path: Path) -> None:
    database = tmp_path / "otra.db"
    with sqlite3.connect(database) as connection:  # another program's file, not yet filled
        connection.execute("CREATE TABLE t (x)")
        connection.execute("DROP TABLE t")
    before = digest(database)
    for args in (("runs",), ("show", "r"), ("export", "r")):
        done = cli(args[0], str(database), *args[1:])
        assert done.returncode == 1, (args, done)
        assert done.stderr == (
            f"synaptum-lite: {database} is a SQLite database without tables, not a "
            "synaptum_lite journal; nothing was changed: name a journal\n"
        )
    assert digest(database) == before  # before: the first `runs` made it a journal


def test_a_damaged_run_is_listed_as_damaged_and_every_other_run_still_is(journal: Path) -> None:
    with sqlite3.connect(journal) as connection:
        connection.execute("UPDATE events SET data = '{roto' WHERE run_id = 'incierto' AND seq = 2")
    listed = cli("runs", str(journal))
    assert listed.returncode == 1
    assert [row.split()[:3] for row in listed.stdout.splitlines()[1:]] == [
        ["cerrado", "closed", "15"],
        ["incierto", "damaged", "-"],
        ["aprobar", "approval", "7"],
    ]  # before: no row at all, only the damaged run's error
    assert listed.stderr == (
        "synaptum-lite: 1 run(s) could not be read: 'incierto'; see why with synaptum-lite "
        "show STORE RUN\n"
    )
    waiting = cli("runs", str(journal), "--state", "waiting", "--json")
    assert [json.loads(line)["run"] for line in waiting.stdout.splitlines()] == ["aprobar"]
    assert waiting.returncode == 1  # a run it could not read might be waiting too: said
    for command in ("show", "export"):
        why = cli(command, str(journal), "incierto")
        assert (why.returncode, why.stdout) == (1, ""), why
        assert why.stderr.startswith("synaptum-lite: run 'incierto': journal record 2 cannot be ")
        assert why.stderr.endswith(  # before: "... or export the run", which fails the same way
            "; restore the journal from a backup; the other runs can still be read "
            "(synaptum-lite runs STORE)\n"
        )


def independent_reading(database: Path) -> list[dict[str, object]]:
    """Each run as `sqlite3` and `json` read it, without the package: its events, whether it
    ended, its tokens, and its non-idempotent tool steps attempted and never finished."""
    rows = []
    with sqlite3.connect(database) as connection:
        for run_id, header, final in connection.execute(
            "SELECT run_id, header, final_seq FROM runs ORDER BY rowid"
        ):
            tools = json.loads(header)["agent"]["tools"]
            events, tokens = 0, [0, 0]
            phases: dict[str, list[str]] = {}
            called: dict[str, str] = {}
            for step_id, phase, data in connection.execute(
                "SELECT step_id, phase, data FROM events WHERE run_id = ? ORDER BY seq",
                (run_id,),
            ):
                events += 1
                record = json.loads(zlib.decompress(data) if isinstance(data, bytes) else data)
                phases.setdefault(step_id, []).append(phase)
                if step_id.endswith("-model") and phase == "completed":
                    tokens = [tokens[0] + record["usage"]["in"], tokens[1] + record["usage"]["out"]]
                if "call" in record and phase == "attempted":
                    called[step_id] = record["call"]["name"]
            unfinished = [
                step
                for step, seen in phases.items()
                if seen == ["attempted"]
                and step in called
                and not tools.get(called[step], {}).get("idempotent")
            ]
            rows.append(
                {"run": run_id, "closed": final is not None, "events": events, "usage": tokens}
                | {"unfinished": unfinished}
            )
    return rows


def test_every_state_and_count_printed_is_what_the_journal_holds(journal: Path) -> None:
    truth = independent_reading(journal)
    printed = [json.loads(line) for line in cli("runs", str(journal), "--json").stdout.splitlines()]
    assert len(printed) == len(truth) == 3
    for row, true in zip(printed, truth, strict=True):
        assert row["run"] == true["run"]
        assert row["events"] == true["events"]
        assert [row["usage"]["in"], row["usage"]["out"]] == true["usage"]
        assert (row["state"] == "closed") == true["closed"]
        waiting = {"uncertain": "-tool", "approval": "-approval"}.get(row["state"])
        assert [step for step in true["unfinished"] if step.endswith("-tool")] == (
            [row["detail"].split(":")[0]] if waiting == "-tool" else []
        )
    shown = cli("show", str(journal), "incierto").stdout.splitlines()
    phases = {line.split()[0]: line[16:24].split() for line in shown[5:] if line[:1] != " "}
    assert phases == {
        "000000-model": ["a", "c"],
        "000001-tool": ["a", "c"],
        "000002-model": ["a", "c"],
        "000003-tool": ["a"],
    }
    assert shown[2] == f"uncertain · {truth[1]['events']} events · tokens in/out 38/19"


# ── bad arguments ───────────────────────────────────────────────────────────────────────────


def test_empty_blank_or_non_utf8_arguments_are_bad_usage_and_write_nothing(
    journal: Path,
) -> None:
    store = str(journal)
    resolve = ("resolve", store, "incierto", "000003-tool", "--retry")
    cases: dict[tuple[str | bytes, ...], str] = {
        ("runs", ""): "STORE is empty; name a journal file or a PostgreSQL URL",
        ("show", store, ""): "RUN is empty; name a run",
        ("resolve", store, "incierto", "", "--retry"): "STEP is empty; name a step",
        (*resolve, "--by", ""): "--by is empty; name who decides",
        (*resolve, "--by", "  "): "--by is empty; name who decides",
        (*resolve, "--by", "ana\n000009-tool  a c  falso"): (
            "--by 'ana\\n000009-tool  a c  falso' holds a control character; give a name"
        ),
        (*resolve, "--by", b"Mar\xeda"): (
            "--by is not UTF-8 text (byte 0xed at index 3); give it in UTF-8"
        ),  # a Latin-1 terminal's María
        ("show", store, b"incierto\xff"): "RUN is not UTF-8 text (byte 0xff at index 8)",
    }
    before = digest(journal), events_of(store, "incierto")
    for args, message in cases.items():
        done = cli(*args)
        assert (done.returncode, done.stdout) == (2, ""), (args, done)
        assert done.stderr.startswith(f"synaptum-lite: {message}"), (args, done.stderr)
    exclusive = {  # argparse's own words (checks: these were refused before too)
        (): "one of the arguments --retry --approve --deny --result is required",
        ("--retry", "--result", "hecha"): "argument --result: not allowed with argument --retry",
        ("--approve", "--deny"): "argument --deny: not allowed with argument --approve",
    }
    for decisions, message in exclusive.items():
        done = cli("resolve", store, "incierto", "000003-tool", *decisions)
        assert (done.returncode, done.stdout) == (2, "") and message in done.stderr, done
    assert (digest(journal), events_of(store, "incierto")) == before
    assert "retry allowed by operator" not in cli("show", store, "incierto").stdout


def test_a_url_in_another_case_scheme_or_form_never_prints_its_password(tmp_path: Path) -> None:
    cases = {
        # a scheme in capitals is still PostgreSQL's (before: a file "that does not exist",
        # printed with its password)
        "POSTGRESQL://ana:s3creto@127.0.0.1:1/journal": (1, "cannot read postgresql://ana@"),
        "mysql://ana:s3creto@127.0.0.1/journal": (2, "mysql://ana:***@127.0.0.1/journal is a "),
        "host=127.0.0.1 password=s3creto": (3, "host=127.0.0.1 password=*** does not exist"),
        "postgresql://ana:s3creto@127.0.0.1:99999/journal": (
            2,
            "the URL's port '99999' is not a port (1 to 65535); fix the URL",
        ),
        "postgresql://ana:s3creto@[::1/journal": (2, "the URL cannot be read (Invalid IPv6 URL)"),
    }
    for url, (code, message) in cases.items():
        done = cli("runs", url, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (code, ""), (url, done)
        assert done.stderr.startswith(f"synaptum-lite: {message}"), (url, done.stderr)
        assert "s3creto" not in done.stderr
    assert list(tmp_path.iterdir()) == []  # no file was made of a URL


# ── resolving ───────────────────────────────────────────────────────────────────────────────


def test_resolving_a_step_twice_names_the_decision_already_journaled(journal: Path) -> None:
    store = str(journal)
    first = cli("resolve", store, "incierto", "000003-tool", "--result", "hecha", "--by", "ana")
    assert first.returncode == 0, first.stderr
    after = events_of(store, "incierto")
    for decision in (("--retry",), ("--result", "otra")):
        again = cli("resolve", store, "incierto", "000003-tool", *decision, "--by", "eva")
        assert again.returncode == 4
        assert "it was already resolved (result recorded by ana); see the step with" in (
            again.stderr
        )
    assert events_of(store, "incierto") == after


@pytest.fixture
def stalled(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A store whose run `r` is held by a live driver stalled inside its transfer (the effect
    done, the step not completed); killed at the end."""
    store = store_in(request.param, tmp_path)
    owner = stalled_owner(store, tmp_path)
    try:
        yield store, tmp_path
    finally:
        kill(owner)


@pytest.mark.parametrize("stalled", STORE_KINDS, indirect=True)
def test_a_step_a_live_driver_is_running_is_never_called_uncertain_nor_resolved(
    stalled: tuple[str, Path],
) -> None:
    store, folder = stalled
    before = events_of(store, "r")
    shown = cli("show", store, "r")
    assert shown.returncode == 0, shown.stderr
    assert "uncertain effect" not in shown.stdout  # before: it told the operator to resolve
    assert shown.stdout.splitlines()[-1].strip() == (
        "a driver holds the run: it may be running this step"
    )
    busy = (
        "synaptum-lite: a driver holds run 'r' now; nothing was written: wait for its driver to "
        "let go (or stop it), then resolve again\n"
    )
    for step, decision in (("000003-tool", "--approve"), ("000001-tool", "--retry")):
        refused = cli("resolve", store, "r", step, decision)
        # before: exit 4, "use --result TEXT or --retry", which a driver would then refuse
        assert (refused.returncode, refused.stderr) == (5, busy), (step, refused.stderr)
    assert events_of(store, "r") == before
    assert effects(folder, "r")["transferir"] == 1


def test_after_its_driver_is_killed_the_step_is_uncertain_and_resolved_once(
    tmp_path: Path,
) -> None:
    store = store_in("sqlite", tmp_path)
    kill(stalled_owner(store, tmp_path))
    assert cli("show", store, "r").stdout.splitlines()[-1].strip() == (
        "uncertain effect: resolve --result TEXT or --retry"
    )
    assert cli("resolve", store, "r", "000003-tool", "--result", "hecha").returncode == 0
    resumed = child(store, tmp_path, "r")
    assert resumed.returncode == 0 and "final" in resumed.stdout, resumed.stderr
    assert effects(tmp_path, "r")["transferir"] == 1  # resolved by the operator, never rerun


# ── reading never takes the run from a driver ───────────────────────────────────────────────

HOLDER = """
import asyncio, os, sys
from synaptum_lite import RunBusy
from tests.core.agents import open_store

async def main(store, stop):
    checkpointer, taken, busy = open_store(store), 0, 0
    print("ready", flush=True)
    while not os.path.exists(stop):  # a driver taking the run again and again, as workers do
        try:
            async with checkpointer.hold("r"):
                taken += 1
        except RunBusy:
            busy += 1
    print(taken, busy)

asyncio.run(main(*sys.argv[1:]))
"""
LOOKER = """
import asyncio, contextlib, io, sys
from synaptum_lite import cli

async def main(store, times):
    for _ in range(int(times)):
        with contextlib.redirect_stdout(io.StringIO()):
            assert await cli.run(["show", store, "r"]) == 0

asyncio.run(main(*sys.argv[1:]))
"""


LOOKS = {"sqlite": 150, "postgres": 40}  # a PostgreSQL look connects: slower, and as likely


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_looking_at_a_run_never_makes_a_driver_that_asks_for_it_find_it_busy(
    kind: str, tmp_path: Path
) -> None:
    """`show` and `runs` ask whether a driver holds the run. Asked by taking the lock and
    letting it go, a driver asking in that instant was told the run was busy (before: 150
    looks at a SQLite run made it busy 3-194 times, 40 at a PostgreSQL run 35-108); asked
    without taking it, never."""
    store = store_in(kind, tmp_path)
    assert child(store, tmp_path, "r", "--stop-at", "3").returncode == 0  # an open run
    stop = tmp_path / "basta"
    python = [sys.executable, "-c"]
    driver = subprocess.Popen(
        [*python, HOLDER, store, str(stop)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert driver.stdout is not None and driver.stdout.readline() == "ready\n"
        looked = subprocess.run([*python, LOOKER, store, str(LOOKS[kind])], cwd=ROOT, timeout=HANG)
        assert looked.returncode == 0
    finally:
        stop.touch()
        out, _ = driver.communicate(timeout=HANG)
    taken, busy = map(int, out.split())
    assert taken > 0 and busy == 0, f"the driver took the run {taken} times, found it busy {busy}"


# ── import's stdin, and Ctrl-C ──────────────────────────────────────────────────────────────


def test_import_without_an_export_on_stdin_says_so_and_creates_nothing(tmp_path: Path) -> None:
    def imported(stdin: bytes | None) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "synaptum_lite", "import", "nuevo.db"],
            cwd=tmp_path,
            env=os.environ | {"PYTHONPATH": str(ROOT)},
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            capture_output=True,
            timeout=HANG,
        )

    closed = subprocess.run(  # no stdin at all: `synaptum-lite import nuevo.db <&-`
        ["bash", "-c", f"{sys.executable} -m synaptum_lite import nuevo.db <&-"],
        cwd=tmp_path,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert closed.returncode == 2, closed.stderr  # before: 1, "AttributeError: 'NoneType' ..."
    assert closed.stderr == (
        "synaptum-lite: import reads a run as synaptum-lite export writes it from stdin, and "
        "there is none: give it as synaptum-lite import STORE < run.jsonl\n"
    )
    latin1 = imported("{'run_id': 'María'}\n".encode("latin-1"))
    assert latin1.returncode == 1  # before: "UnicodeDecodeError: 'utf-8' codec can't ..."
    assert latin1.stderr.decode() == (
        "synaptum-lite: stdin is not UTF-8 text (byte 0xed at 15), so not a run as "
        "synaptum-lite export writes it\n"
    )
    empty = imported(None)
    assert empty.returncode == 1
    assert empty.stderr.decode() == (
        "synaptum-lite: the export is not a synaptum_lite journal (it is empty); nothing was "
        "imported: give a run as synaptum-lite export writes it\n"
    )  # before: "...; point the checkpointer at a new file or at a journal it wrote"
    assert list(tmp_path.iterdir()) == []


#: `python -m synaptum_lite` started as a terminal starts the program in front of it: with SIGINT
#: at its default, whatever this test's own process was given. A shell that starts a job in the
#: background without job control (`command &` in a script) starts it with SIGINT ignored, and
#: every process below inherits that (exec keeps a signal ignored): Python then installs no
#: handler, asyncio none either, and Ctrl-C does nothing, as the convention wants. A suite run
#: that way (two load runs in the background) saw the listing end 0 with nothing on stderr.
AS_FROM_A_TERMINAL = (
    "import runpy, signal\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)  # what Python sets at SIG_DFL\n"
    "runpy.run_module('synaptum_lite', run_name='__main__', alter_sys=True)\n"
)


def test_ctrl_c_in_the_middle_of_a_listing_ends_with_130_and_no_traceback(tmp_path: Path) -> None:
    import asyncio
    import fcntl  # POSIX, as SIGINT is here

    database = tmp_path / "muchos.db"
    count, long = 200, 3000  # 600 kB of rows (ids printed whole): many times what a pipe holds

    async def closed_runs() -> None:
        agent = Agent("a", model="m", instructions="Contesta.")
        checkpointer = SqliteCheckpointer(database, durability="normal")
        for number in range(count):
            session = Session(
                f"{number:05d}-{'x' * long}", ScriptedGateway([says("ok")]), checkpointer
            )
            async for _ in agent.run("t", session=session):
                pass
        await checkpointer.close()

    asyncio.run(closed_runs())
    listing = subprocess.Popen(
        [sys.executable, "-c", AS_FROM_A_TERMINAL, "runs", str(database), "--wide"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert listing.stdout is not None
    # Ordered by events, not by speed: the listing cannot end before we read on, because what
    # it writes is many times what the pipe holds (checked where the OS says its size), and we
    # read only its first line: it is listing, and blocks on the pipe until we read.
    if hasattr(fcntl, "F_GETPIPE_SZ"):
        assert fcntl.fcntl(listing.stdout, fcntl.F_GETPIPE_SZ) * 4 < count * long
    assert listing.stdout.readline().startswith("RUN ")
    # Popen.send_signal sends nothing to a process it finds ended: say which it was, so that a
    # failure tells a listing that ended before the signal from one that did not obey it.
    alive = listing.poll() is None
    listing.send_signal(signal.SIGINT)
    rest, errors = listing.communicate(timeout=HANG)
    assert listing.returncode == 130, (
        f"exit {listing.returncode}; alive when signalled: {alive}; read after the signal: "
        f"{len(rest)} characters; stderr: {errors!r}"
    )
    assert errors == (
        "synaptum-lite: interrupted: a decision is written whole or not at all (show says "
        "which); an import may be cut short, and importing the same export again adds the rest\n"
    )
    assert rest  # the rows the listing wrote after the signal, while it was being cancelled


# ── imports the store would keep but not read back ──────────────────────────────────────────


def with_header(export: str, run_id: str, header: object) -> str:
    """`export` under another run id, with `header` in place of its run's header."""
    first, rest = export.split("\n", 1)
    row = json.loads(first) | {"run_id": run_id, "header": header}
    return json.dumps(row) + "\n" + rest


def test_runs_with_headers_of_any_shape_an_import_took_are_listed_and_shown(
    journal: Path,
) -> None:
    export = cli("export", str(journal), "incierto").stdout
    odd = {"cadena": {"agent": "cajero", "task": 5}, "herramientas": {"agent": {"tools": "x"}}}
    for run_id, header in odd.items():
        imported = subprocess.run(
            [sys.executable, "-m", "synaptum_lite", "import", str(journal)],
            input="\n".join(seal(with_header(export, run_id, header))) + "\n",
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=HANG,
        )
        assert imported.returncode == 0, imported.stderr  # the store takes them
    listed = cli("runs", str(journal))
    assert listed.returncode == 0, listed.stderr  # before: "AttributeError: 'str' object ..."
    assert [row.split()[:2] for row in listed.stdout.splitlines()[1:]] == [
        ["cerrado", "closed"],
        ["incierto", "uncertain"],
        ["aprobar", "approval"],
        ["cadena", "uncertain"],  # no tool says it is idempotent: a person decides
        ["herramientas", "uncertain"],
    ]
    shown = cli("show", str(journal), "cadena")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[:2] == ["run cadena · agent None · model None", "task: 5"]


def test_a_refused_import_creates_no_store_and_leaves_no_unreadable_run(
    journal: Path, tmp_path: Path
) -> None:
    export = cli("export", str(journal), "incierto").stdout
    first_line_only_good = export.split("\n", 1)[0] + '\n{"roto": 1}\n'
    no_agent = with_header(export, "sin-agente", {"task": "x"})

    def imported(store: Path, text: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "synaptum_lite", "import", str(store)],
            input=text,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=HANG,
        )

    damaged = imported(tmp_path / "nuevo.db", first_line_only_good)
    assert damaged.returncode == 1
    assert damaged.stderr.startswith("synaptum-lite: the export is damaged (run 'incierto': ")
    assert damaged.stderr.endswith("; nothing was imported\n")
    assert not (tmp_path / "nuevo.db").exists()  # before: an empty journal was left there
    before = digest(journal)
    headless = imported(journal, no_agent)
    assert headless.returncode == 1
    assert headless.stderr == (
        "synaptum-lite: the export is not a synaptum_lite journal (the run header on line 1 "
        "has no agent); nothing was imported: give a run as synaptum-lite export writes it\n"
    )
    assert digest(journal) == before  # before: 'sin-agente' was started, then unreadable
    assert cli("runs", str(journal)).returncode == 0


# ── the operator's promise, at every kill point ─────────────────────────────────────────────


def killed_then_operated(tmp_path: Path, flags: tuple[str, ...]) -> dict[str, object]:
    """Kill the cashier at `flags`, let an operator decide through the command line only by
    what it shows and what the bank's own record (the effects file) says, and run it again."""
    folder = tmp_path / "-".join(flags).strip("-")
    folder.mkdir()
    store = str(folder / "runs.db")
    assert child(store, folder, "r", *flags).returncode == -signal.SIGKILL
    listed = [json.loads(line) for line in cli("runs", store, "--json").stdout.splitlines()]
    (row,) = listed
    truth = independent_reading(Path(store))[0]
    decided = ""
    if row["state"] == "uncertain":
        step = str(row["detail"]).split(":")[0]
        assert truth["unfinished"] == [step]  # what it shows is what the journal holds
        tool = str(row["detail"]).split(": ", 1)[1].split("(")[0]
        happened = effects(folder, "r")[tool]
        decision = ("--result", "transferencia de 100.00 € hecha") if happened else ("--retry",)
        resolved = cli("resolve", store, "r", step, *decision, "--by", "ana")
        assert resolved.returncode == 0, resolved.stderr
        decided = decision[0]
    else:
        assert row["state"] == "open" and truth["unfinished"] == [], (row, truth)
    resumed = child(store, folder, "r")
    assert resumed.returncode == 0 and "final" in resumed.stdout, (flags, resumed.stderr)
    closed = json.loads(cli("runs", store, "--json").stdout)
    return {"decided": decided, "effects": effects(folder, "r"), "state": closed["state"]}


def test_at_every_kill_point_the_operator_resolves_by_what_it_sees_and_nothing_repeats(
    tmp_path: Path,
) -> None:
    """Eight kills around the two tools that are not idempotent (after the event before each
    one's attempt, after its attempt, after its completion, and inside it after its effect),
    on SQLite: the operator decides only where the command line says a person must, and the
    transfer and the notice each happen exactly once. (Killed after events 1-5, 9, 13 and 14,
    nobody is asked, and it holds too: tried once, 16 kills in 27 s.)"""
    from concurrent.futures import ThreadPoolExecutor

    points = [("--die-at", str(n)) for n in (6, 7, 8, 10, 11, 12)]
    points += [("--die-in", tool) for tool in ("transferir", "notificar")]
    with ThreadPoolExecutor(3) as pool:
        done = pool.map(lambda flags: killed_then_operated(tmp_path, flags), points)
        outcomes = dict(zip(points, done, strict=True))
    for flags, outcome in outcomes.items():
        assert outcome["state"] == "closed", (flags, outcome)
        counted = outcome["effects"]
        assert counted["transferir"] == 1 and counted["notificar"] == 1, (flags, outcome)
    asked = {flags: o["decided"] for flags, o in outcomes.items() if o["decided"]}
    assert asked == {
        ("--die-at", "7"): "--retry",  # the transfer attempted, killed before it ran
        ("--die-at", "11"): "--retry",  # the notice attempted, killed before it ran
        ("--die-in", "transferir"): "--result",  # done, its step not completed
        ("--die-in", "notificar"): "--result",
    }


# ── a delegation whose sub-run waits for a person ───────────────────────────────────────────

DELEGATING = """
import asyncio, os, signal, sys
from synaptum_lite import Agent, Risk, Role, Session, SqliteCheckpointer, tool
from synaptum_lite.testing import ScriptedGateway, calls, says

store, payments, die = sys.argv[1], sys.argv[2], sys.argv[3] == "die"

@tool(risk=Risk.HARD_WRITE)
def pagar(importe: float) -> str:
    \"\"\"Paga una factura.\"\"\"
    with open(payments, "a") as record:
        record.write("pago\\n")
    if die:
        os.kill(os.getpid(), signal.SIGKILL)
    return "pagado"

def responder(request):
    if any(m.role is Role.TOOL for m in request.messages):
        return says("hecho")
    if any(spec.name == "pagar" for spec in request.tools):
        return calls("pagar", importe=10.0)
    return calls("tesorero", task="paga 10")

tesorero = Agent("tesorero", model="m", instructions="Paga.", tools=[pagar],
                 description="Paga facturas.")
jefe = Agent("jefe", model="m", instructions="Delega.", delegates=[tesorero])

async def main():
    gateway = ScriptedGateway([responder] * 10, tools=[pagar])
    session = Session("padre", gateway, SqliteCheckpointer(store))
    async for event in jefe.run("paga", session=session):
        pass
    print("final")

asyncio.run(main())
"""


def test_a_run_whose_delegation_waits_in_its_sub_run_says_where_and_is_resolved_there(
    tmp_path: Path,
) -> None:
    store, payments = str(tmp_path / "runs.db"), tmp_path / "pagos"

    def drive(mode: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", DELEGATING, store, str(payments), mode]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=HANG)

    assert drive("die").returncode == -signal.SIGKILL  # inside the payment, after it was made
    listed = cli("runs", store, "--state", "waiting", "--width", "140").stdout.splitlines()
    assert [row.split()[:2] for row in listed[1:]] == [
        ["padre", "uncertain"],  # before: "open", as if running it again would go on
        ["padre/000001-delegate", "uncertain"],
    ]
    assert listed[1].endswith(
        "000001-delegate: in padre/000001-delegate: 000001-tool: pagar(importe=10.0)"
    )
    shown = cli("show", store, "padre").stdout.splitlines()
    assert shown[-1].strip() == "waits in its sub-run padre/000001-delegate"
    here = cli("resolve", store, "padre", "000001-delegate", "--result", "pagado")
    assert here.returncode == 4
    assert here.stderr == (
        "synaptum-lite: run 'padre', step 000001-delegate is a delegation; what waits is in its "
        "sub-run 'padre/000001-delegate'; nothing was written: resolve it there (see "
        "synaptum-lite show STORE padre/000001-delegate)\n"
    )
    there = cli("resolve", store, "padre/000001-delegate", "000001-tool", "--result", "pagado")
    assert there.returncode == 0, there.stderr
    resumed = drive("live")
    assert resumed.stdout == "final\n", resumed.stderr
    assert payments.read_text() == "pago\n"  # made once, recorded by the operator
    import asyncio

    from synaptum_lite import run_usage

    total = asyncio.run(run_usage(SqliteCheckpointer(store), "padre")).total
    assert total.input_tokens is not None and total.output_tokens is not None
    padre, sub = [json.loads(line) for line in cli("runs", store, "--json").stdout.splitlines()]
    assert padre["usage"] == {"in": total.input_tokens, "out": total.output_tokens}
    assert padre["usage"]["in"] > sub["usage"]["in"]  # the sub-run's usage is in its parent's
    assert [row.split()[1] for row in cli("runs", store).stdout.splitlines()[1:]] == [
        "closed",
        "closed",
    ]


# ── 80 columns, whatever the journal's characters ──────────────────────────────────────────


def on_screen(line: str) -> int:
    """The columns a terminal gives `line`: East Asian wide and full-width characters two,
    combining marks none (as wcwidth counts them)."""
    import unicodedata

    return sum(
        0
        if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf")
        else 2
        if unicodedata.east_asian_width(c) in "WF"
        else 1
        for c in line
    )


@tool
def buscar(consulta: str) -> str:
    """Busca en el archivo."""
    return "見つかりました：請求書は三件あります。支払い期限は来週の金曜日です。🎉🎉🎉🎉"


def test_wide_characters_from_the_journal_still_fit_the_columns_asked_for(tmp_path: Path) -> None:
    import asyncio

    database = tmp_path / "ancho.db"
    agent = Agent("archivista", model="m", instructions="Busca.", tools=[buscar])
    script = [calls("buscar", consulta="請求書の一覧を見せてください"), says("¡Hecho! 🎉 " * 12)]

    async def drive() -> None:
        session = Session("日本語の実行", ScriptedGateway(script), SqliteCheckpointer(database))
        async for _ in agent.run(
            "請求書を探して、支払い期限を教えてください。" * 2, session=session
        ):
            pass

    asyncio.run(drive())
    for width in (80, 60):
        for args in (("runs",), ("show", "日本語の実行")):
            done = cli(args[0], str(database), *args[1:], "--width", str(width))
            assert done.returncode == 0, done.stderr
            lines = done.stdout.splitlines()
            if args[0] == "show":
                lines = lines[1:]  # the first names the run whole, to be copied
            too_wide = [line for line in lines if on_screen(line) > width]
            assert too_wide == [], (width, too_wide)  # before: cut by characters, not columns
            assert "…" in done.stdout or args[0] == "runs"  # cut, and said so
    listed = cli("runs", str(database)).stdout.splitlines()
    assert listed[1].startswith("日本語の実行  closed")  # its column as wide as it shows
    assert on_screen(listed[0].split("STATE")[0]) == on_screen(listed[1].split("closed")[0])


def test_a_width_below_40_columns_or_not_a_number_is_refused() -> None:
    for width in ("0", "39", "-5", "ancho"):
        done = cli("runs", "runs.db", "--width", width)
        assert done.returncode == 2, (width, done.stderr)  # before: 0 meant "the terminal's"
        assert f"argument --width: {width!r} is not a number of columns, 40 or more" in (
            done.stderr
        )


def test_a_pipe_or_a_device_named_as_the_store_is_said_to_be_one(tmp_path: Path) -> None:
    fifo = tmp_path / "tuberia"
    os.mkfifo(fifo)
    for store in (str(fifo), "/dev/zero"):
        done = cli("runs", store)
        assert done.returncode == 1
        assert done.stderr == (  # before: "... is empty, not a synaptum_lite journal"
            f"synaptum-lite: {store} is not a regular file (a device, a pipe or a socket); name "
            "a journal\n"
        )


def test_on_postgresql_a_damaged_run_is_listed_and_the_others_still_are(tmp_path: Path) -> None:
    import psycopg

    store = store_in("postgres", tmp_path)
    assert child(store, tmp_path, "cerrado").returncode == 0
    assert child(store, tmp_path, "incierto", "--die-in", "transferir").returncode == -9
    url, _, schema = store.partition("#")
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            f"UPDATE {schema}.events SET data = '{{roto' WHERE seq = 2 AND run = "
            f"(SELECT id FROM {schema}.runs WHERE run_id = 'incierto')"
        )
    listed = cli("runs", store)
    assert listed.returncode == 1
    assert [row.split()[:3] for row in listed.stdout.splitlines()[1:]] == [
        ["cerrado", "closed", "15"],
        ["incierto", "damaged", "-"],
    ]
    assert "1 run(s) could not be read: 'incierto'" in listed.stderr


def test_a_reason_the_journal_cannot_keep_is_refused_rather_than_lost(journal: Path) -> None:
    store = str(journal)
    before = events_of(store, "incierto")
    for decision in (("--retry",), ("--result", "hecha")):
        done = cli("resolve", store, "incierto", "000003-tool", *decision, "--reason", "por qué")
        assert (done.returncode, done.stdout) == (2, ""), done  # before: 0, the reason dropped
        assert done.stderr == (
            "synaptum-lite: --reason is kept with --approve or --deny; the journal has no place "
            f"for it with {decision[0]}, and it would be lost: leave it out\n"
        )
    assert events_of(store, "incierto") == before
    kept = cli("resolve", store, "aprobar", "000003-approval", "--deny", "--reason", "por qué")
    assert kept.returncode == 0, kept.stderr
    assert "denied by operator: por qué" in cli("show", store, "aprobar").stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_the_exit_code_is_the_answer_even_when_stderr_cannot_be_written(journal: Path) -> None:
    for redirect in ("2>/dev/full", "2>&-"):
        for args, code in ((("runs", "falta.db"), 3), (("show", str(journal), "otro"), 3)):
            command = " ".join([sys.executable, "-m", "synaptum_lite", *args, redirect])
            done = subprocess.run(["bash", "-c", command], cwd=ROOT, timeout=HANG)
            assert done.returncode == code, (redirect, args)  # before: 1, its traceback lost


def test_an_export_saved_by_a_windows_editor_imports_as_it_was(
    journal: Path, tmp_path: Path
) -> None:
    export = cli("export", str(journal), "incierto").stdout
    saved = ("\ufeff" + export.replace("\n", "\r\n")).encode()  # BOM and CRLF, as Notepad
    copy = tmp_path / "copia.db"
    imported = subprocess.run(
        [sys.executable, "-m", "synaptum_lite", "import", str(copy)],
        input=saved,
        cwd=ROOT,
        capture_output=True,
        timeout=HANG,
    )
    assert imported.returncode == 0, imported.stderr  # before: "not a synaptum_lite journal"
    assert cli("export", str(copy), "incierto").stdout == export


def test_a_message_about_a_huge_value_or_a_long_run_stays_a_few_lines(tmp_path: Path) -> None:
    import asyncio

    database = tmp_path / "largo.db"
    agent = Agent("archivista", model="m", instructions="Busca.", tools=[buscar])
    script = [calls("buscar", consulta=f"página {n}") for n in range(20)] + [says("listo")]

    async def drive() -> None:
        session = Session("largo", ScriptedGateway(script), SqliteCheckpointer(database))
        async for _ in agent.run("Busca las 20 páginas.", session=session):
            pass

    asyncio.run(drive())
    huge = "x" * 5000
    cases = {
        ("show", huge): f"no run '{'x' * 59}…' (5000 characters) in largo.db",
        ("resolve", "largo", huge, "--retry"): f"run 'largo' has no step '{'x' * 59}…' (5000 ",
        ("resolve", "largo", "000999-tool", "--retry"): (
            "run 'largo' has no step 000999-tool (it has: 000000-model, 000001-tool, "
            "000002-model, …, 000040-model, 000041-final, 42 steps)\n"
        ),
    }
    for args, message in cases.items():
        done = cli(args[0], str(database), *args[1:])
        assert done.returncode == 3, done.stderr
        assert message in done.stderr, done.stderr[:300]
        assert len(done.stderr) < 300  # before: 5,000 characters, or every one of 42 steps


def test_the_usage_listed_is_the_total_run_usage_computes(journal: Path) -> None:
    """`runs` adds usage up from the events it has read (`run_usage` reads them again); the
    totals are the same (a parent's, with its sub-runs', in the delegation test)."""
    import asyncio

    from synaptum_lite import load_events, run_usage
    from synaptum_lite.cli.runview import usage_of

    async def both(store: SqliteCheckpointer, run_id: str) -> tuple[object, object]:
        events = await load_events(store, run_id)
        return usage_of(events), (await run_usage(store, run_id)).total

    store = SqliteCheckpointer(journal)
    for run_id in ("cerrado", "incierto", "aprobar"):
        mine, theirs = asyncio.run(both(store, run_id))
        assert mine == theirs, run_id


def test_every_help_fits_80_columns_and_names_every_exit_code() -> None:
    commands = ("runs",), ("show",), ("resolve",), ("export",), ("import",), ("fork",)
    for command in ((), *commands):
        shown = subprocess.run(
            [sys.executable, "-m", "synaptum_lite", *command, "--help"],
            cwd=ROOT,
            env=os.environ | {"COLUMNS": "80"},
            capture_output=True,
            text=True,
            timeout=HANG,
        ).stdout
        assert [line for line in shown.splitlines() if len(line) > 80] == [], command
        assert all(f"\n  {code}  " in shown for code in (0, 1, 2, 3, 4, 5, 6, 130)), command
