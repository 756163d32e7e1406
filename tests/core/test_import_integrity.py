"""What `synaptum-lite import` refuses, run as an operator runs it, on real SQLite files.

An export is written to the run it names and to that run's own sub-runs, nothing else: a file
that carries a section for another run (a forged answer for a boss's delegation, an unrelated
run) is refused naming it, and nothing is written. An export carries a digest chain over its
events: an event changed, removed, moved or added is refused naming the first one that does
not match. With `--key-file` the chain's head is signed, and an import given the key refuses
an export unsigned, signed with another key, or edited and re-chained by someone without it.
Without a key, an edit whose chain was computed again is accepted: the chain is not a
signature, and one test says so.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
from collections import Counter
from pathlib import Path

import pytest

from synaptum_lite import Agent, Risk, Role, Session, SqliteCheckpointer, tool
from synaptum_lite.stores.transfer import seal
from synaptum_lite.testing import ScriptedGateway, calls, says

from .test_cli import cli
from .test_kill import child, effects

pytestmark = pytest.mark.posix_signals  # the cashier's child dies by SIGKILL after its transfer


def exported(store: Path, run_id: str, *flags: str) -> list[str]:
    done = cli("export", str(store), run_id, *flags)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def journal(store: Path) -> dict[str, list[tuple[object, ...]]]:
    async def read() -> dict[str, list[tuple[object, ...]]]:
        checkpointer = SqliteCheckpointer(store)
        return {
            r: [tuple(x) for x in await checkpointer.records(r)]
            for r in await checkpointer.run_ids()
        }

    return asyncio.run(read())


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refused(store: Path, lines: list[str], *flags: str) -> str:
    """Import `lines` into `store`, which must be refused (exit 1) and leave `store` as it
    was; returns what the command said."""
    before = digest(store) if store.exists() else None
    done = cli("import", str(store), *flags, stdin=text(lines))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert done.stderr.endswith("nothing was imported\n"), done.stderr
    assert (digest(store) if store.exists() else None) == before  # not a byte written
    return done.stderr


@pytest.fixture
def cajero_run(tmp_path: Path) -> Path:
    """The cashier's whole run `r` in a SQLite file: 15 events."""
    store = tmp_path / "runs.db"
    assert child(str(store), tmp_path, "r").returncode == 0
    return store


# ── a boss waiting at its delegation, and a clerk who pays ──────────────────────────────────

PAID: Counter[str] = Counter()
FORGED = "Pagado: 500 € (falso)"


@tool(risk=Risk.HARD_WRITE)
def pagar(importe: float) -> str:
    """Paga un importe al proveedor."""
    PAID["pagar"] += 1
    return f"pagados {importe:.2f} €"


clerk = Agent("oficinista", model="m", instructions="Paga lo que te pidan.", tools=[pagar])
boss = Agent("jefe", model="m", instructions="Delega los pagos.", delegates=[clerk])


def honest(request):
    results = [m for m in request.messages if m.role is Role.TOOL]
    if request.messages[0].content.startswith("Paga"):  # the clerk
        return says(results[0].content) if results else calls("pagar", importe=500.0)
    return says(f"Hecho: {results[0].content}") if results else calls("oficinista", task="paga 500")


def forger(request):
    """The clerk answers that it paid, and never calls `pagar`."""
    if request.messages[0].content.startswith("Paga"):
        return says(FORGED)
    return honest(request)


async def drive_boss(store: Path, answer, *, stop_at_delegation: bool = False) -> list:
    steps = []
    session = Session(
        "boss", ScriptedGateway([answer] * 6, tools=[pagar]), SqliteCheckpointer(store)
    )
    iterator = boss.run("Paga 500 € al proveedor.", session=session)
    async for step in iterator:
        steps.append(step)
        if stop_at_delegation and step.step_id.endswith("-delegate"):
            break  # the boss waits at its delegation: its clerk has not started
    await iterator.aclose()
    return steps


def test_an_export_cannot_plant_the_answer_of_another_runs_delegation(
    tmp_path: Path, cajero_run: Path
) -> None:
    """The attack of issue 28: an export of run `r` that also carries `boss/000001-delegate`,
    a clerk's sub-run closed on a forged answer. Before, it was «imported run r … 0 new» and
    the boss resumed on the forged answer: the clerk never paid."""
    PAID.clear()
    victim = tmp_path / "victima.db"
    asyncio.run(drive_boss(victim, honest, stop_at_delegation=True))
    assert list(journal(victim)) == ["boss"] and PAID["pagar"] == 0
    scratch = tmp_path / "falsa.db"  # the forger runs the same agents where the clerk lies
    asyncio.run(drive_boss(scratch, forger))
    planted = exported(scratch, "boss")
    start = next(i for i, line in enumerate(planted) if '"run_id":"boss/000001-delegate"' in line)
    forged = exported(cajero_run, "r") + planted[start:]
    before = journal(victim)

    for attempt in (forged, seal(forged)):  # as appended, and with its chain computed again
        said = refused(victim, attempt)
        assert "carries run 'boss/000001-delegate', which is neither that run nor" in said, said
        assert "the export names run 'r'" in said
    assert journal(victim) == before  # neither `r` nor the clerk's sub-run was written

    steps = asyncio.run(drive_boss(victim, honest))  # the boss resumes: its clerk pays
    assert PAID["pagar"] == 1
    assert steps[-1].output == "Hecho: pagados 500.00 €" and FORGED not in steps[-1].output


def test_an_export_carrying_an_unrelated_run_is_refused_naming_it(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    for run_id in ("mine", "victim"):
        assert child(str(store), tmp_path, run_id, "--stop-at", "6").returncode == 0
    both = exported(store, "mine") + exported(store, "victim")
    copy = tmp_path / "copia.db"
    for attempt in (both, seal(both)):
        said = refused(copy, attempt)
        assert "the export names run 'mine' but also carries run 'victim'" in said, said
        assert not copy.exists()  # before: both imported, and only `mine` named
    twice = exported(store, "mine")
    twice = seal(twice + twice)  # the run itself, a second time
    assert "also carries run 'mine', again" in refused(copy, twice)


def test_the_command_says_every_run_it_wrote(tmp_path: Path) -> None:
    PAID.clear()
    source, copy = tmp_path / "runs.db", tmp_path / "copia.db"
    asyncio.run(drive_boss(source, honest))
    lines = exported(source, "boss")
    done = cli("import", str(copy), stdin=text(lines))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "imported run boss into copia.db: 7 events, 7 new",
        "imported run boss/000001-delegate into copia.db: 7 events, 7 new",
    ]
    again = cli("import", str(copy), stdin=text(lines))
    assert again.stdout.splitlines() == [
        "imported run boss into copia.db: 7 events, 0 new",
        "imported run boss/000001-delegate into copia.db: 7 events, 0 new",
    ]
    assert journal(copy) == journal(source)


# ── the digest chain ────────────────────────────────────────────────────────────────────────


def edited(lines: list[str]) -> list[str]:
    return [line.replace("ES91: 4.200,00", "ES91: 9.999.200,00") for line in lines]


def renumbered(rows: list[str], first: int = 0) -> list[str]:
    """Event rows with their positions written again from `first`, as if nothing was moved."""
    return [
        json.dumps(json.loads(row) | {"seq": seq}, ensure_ascii=False)
        for seq, row in enumerate(rows, first)
    ]


DAMAGE = {  # what is done to the export's lines -> the link the import names
    "a tool result edited": (edited, "event 3 (000001-tool completed)"),
    "the last event removed": (lambda x: x[:-1], "event 14 is missing"),
    "an event added": (lambda x: [*x, x[-1].replace('"seq":14', '"seq":15')], "event 15 ("),
    "two events swapped": (
        lambda x: [x[0], *renumbered([x[2], x[1], *x[3:]])],
        "event 0 (000000-model completed)",
    ),
    "the payment removed, the rest renumbered": (
        lambda x: [*x[:7], *renumbered(x[9:], first=6)],
        "event 6 (000004-model attempted)",
    ),
    "the task edited": (
        lambda x: [x[0].replace("Transfiere 100 €", "Transfiere 900 €"), *x[1:]],
        "run 'r': its description",
    ),
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_an_export_changed_after_it_was_written_is_refused_naming_the_first_event_changed(
    tmp_path: Path, cajero_run: Path, damage: str
) -> None:
    change, named = DAMAGE[damage]
    lines = change(exported(cajero_run, "r"))
    copy = tmp_path / "copia.db"
    said = refused(copy, lines)
    assert "does not match its digest chain at run 'r': " in said, said
    assert named in said, said
    assert not copy.exists()  # before: imported, and `show` printed what the file said


def test_an_export_without_its_payment_step_is_refused_so_it_cannot_pay_twice(
    tmp_path: Path,
) -> None:
    """Killed right after its transfer was journaled, the run is exported without the transfer's
    two events (the last two): before, that imported, and the resume transferred again."""
    store, copy = tmp_path / "runs.db", tmp_path / "copia.db"
    killed = child(str(store), tmp_path, "r", "--die-at", "8")
    assert killed.returncode == -signal.SIGKILL
    assert effects(tmp_path, "r")["transferir"] == 1
    lines = exported(store, "r")
    assert '"step_id":"000003-tool","phase":"completed"' in lines[-1]
    said = refused(copy, lines[:-2])
    assert "the chain lists 8 events and the export holds 6: event 6 is missing" in said, said
    said = refused(copy, lines[:-2] + [lines[-2]])
    assert "event 7 is missing" in said
    # the head as well as each link: the whole run cut at its end, with its links kept
    cut = [json.dumps(json.loads(lines[0]) | {"chain": json.loads(lines[0])["chain"][:7]})]
    assert "at its end (its head)" in refused(copy, cut + lines[1:-2])
    assert not copy.exists()
    assert effects(tmp_path, "r")["transferir"] == 1


def test_an_export_without_a_digest_chain_is_refused_saying_to_export_it_again(
    tmp_path: Path, cajero_run: Path
) -> None:
    lines = exported(cajero_run, "r")
    first = {k: v for k, v in json.loads(lines[0]).items() if k not in ("chain", "head")}
    said = refused(tmp_path / "copia.db", [json.dumps(first), *lines[1:]])
    assert "carries no digest chain: it was written by an earlier synaptum-lite" in said
    assert "export the run again with this version (synaptum-lite export STORE RUN)" in said


# ── signed with a key ───────────────────────────────────────────────────────────────────────


@pytest.fixture
def keys(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "clave").write_bytes(bytes(range(32)) + b"\n")
    (tmp_path / "otra").write_text("otra clave\n")
    return str(tmp_path / "clave"), str(tmp_path / "otra")


def test_a_signed_export_imports_with_its_key_and_is_refused_with_another(
    tmp_path: Path, cajero_run: Path, keys: tuple[str, str]
) -> None:
    key, other = keys
    signed = exported(cajero_run, "r", "--key-file", key)
    assert "signature" in json.loads(signed[0])
    assert "signed with another key" in refused(tmp_path / "a.db", signed, "--key-file", other)
    done = cli("import", str(tmp_path / "b.db"), "--key-file", key, stdin=text(signed))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "imported run r into b.db: 15 events, 15 new\n"
    unkeyed = cli("import", str(tmp_path / "c.db"), stdin=text(signed))  # the chain is checked
    assert unkeyed.stdout.splitlines()[1] == (
        "its signature was not checked: give the key with --key-file to check it"
    )
    unsigned = exported(cajero_run, "r")
    said = refused(tmp_path / "d.db", unsigned, "--key-file", key)
    assert "the export is not signed, and a key was given" in said
    odd = [json.dumps(json.loads(signed[0]) | {"signature": "ñ\ud800"}), *signed[1:]]
    assert "signed with another key" in refused(tmp_path / "e.db", odd, "--key-file", key)


@pytest.mark.parametrize("damage", ["a tool result edited", "the last event removed"])
def test_an_edit_whose_chain_was_computed_again_is_caught_by_the_key_only(
    tmp_path: Path, cajero_run: Path, keys: tuple[str, str], damage: str
) -> None:
    """Without the key, whoever edits can compute the chain again (`seal`): an import without
    a key takes it. With the key, the signature no longer matches."""
    key, other = keys
    change, _ = DAMAGE[damage]
    signed = exported(cajero_run, "r", "--key-file", key)
    for forged in (seal(change(signed)), seal(change(signed), key=Path(other).read_bytes())):
        said = refused(tmp_path / "a.db", forged, "--key-file", key)
        assert "changed after it was signed" in said or "is not signed" in said, said
    taken = cli("import", str(tmp_path / "b.db"), stdin=text(seal(change(signed))))
    assert taken.returncode == 0  # the honest limit of a chain without a key


def test_a_key_file_that_is_missing_or_empty_is_refused_before_anything_is_written(
    tmp_path: Path, cajero_run: Path
) -> None:
    lines = exported(cajero_run, "r")
    copy = tmp_path / "copia.db"
    missing = cli("import", str(copy), "--key-file", str(tmp_path / "nada"), stdin=text(lines))
    assert missing.returncode == 3 and "--key-file" in missing.stderr
    assert "does not exist; name the file that holds the key" in missing.stderr
    (tmp_path / "vacia").write_text("\n")
    empty = cli("export", str(cajero_run), "r", "--key-file", str(tmp_path / "vacia"))
    assert empty.returncode == 2 and empty.stdout == "" and "is empty" in empty.stderr
    assert not copy.exists()


# ── guards: what an import already refused, and no test proved ──────────────────────────────


def test_an_import_with_the_same_steps_and_other_payloads_is_refused_naming_the_step(
    tmp_path: Path,
) -> None:
    agent = Agent("saludo", model="m", instructions="Saluda.")

    async def said(store: Path, text: str) -> None:
        session = Session("r", ScriptedGateway([says(text)]), SqliteCheckpointer(store))
        async for _ in agent.run("saluda", session=session):
            pass

    ours, theirs = tmp_path / "nuestro.db", tmp_path / "suyo.db"
    asyncio.run(said(ours, "hola"))
    asyncio.run(said(theirs, "adiós"))  # the same header, the same keys, another answer
    before = journal(ours)
    message = refused(ours, exported(theirs, "r"))
    assert "differs from the export at position 1: the store holds step 000000-model " in message
    assert "completed there, the export another payload" in message
    assert journal(ours) == before


def test_an_event_field_this_version_would_drop_is_refused(
    tmp_path: Path, cajero_run: Path
) -> None:
    lines = exported(cajero_run, "r")
    final = json.loads(lines[-1])
    data = json.loads(final["data"]) | {"firmado_por": "nadie"}  # a field no step of 0.1.0 has
    in_data = seal([*lines[:-1], json.dumps(final | {"data": json.dumps(data)})])
    said = refused(tmp_path / "a.db", in_data)
    assert (
        "journal record 14 cannot be decoded (it holds fields this version does not know)" in said
    )
    # beside its data: outside what the chain covers, so the chain still matches
    beside = [*lines[:-1], json.dumps(final | {"firmado_por": "nadie"})]
    said = refused(tmp_path / "b.db", beside)
    assert "it holds fields this version does not know: ['firmado_por']" in said, said
    assert not (tmp_path / "a.db").exists() and not (tmp_path / "b.db").exists()


def test_an_event_repeated_under_a_new_position_is_refused_before_anything_is_written(
    tmp_path: Path, cajero_run: Path
) -> None:
    """The store keeps one event per key: before, the import wrote the run, then said «16
    events imported, 15 stored»."""
    lines = exported(cajero_run, "r")
    again = seal([*lines, lines[-1].replace('"seq":14', '"seq":15')])
    said = refused(tmp_path / "copia.db", again)
    assert "journal record 15 cannot be decoded (it repeats 000007-final completed)" in said
    assert not (tmp_path / "copia.db").exists()
