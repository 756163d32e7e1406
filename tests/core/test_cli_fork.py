"""`synaptum-lite fork`, run as a person runs it, on a SQLite file and on a PostgreSQL schema:
what it copies and, before anything runs, the effects the fork makes anew; what `show` says of
a fork and of a person's answer; and each refusal, with its exit code, writing nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from synaptum_lite import load_events

from .agents import cajero, double, open_store
from .busy_child import held_elsewhere
from .test_cli import cli, store_in
from .test_kill import child, effects

pytestmark = pytest.mark.posix_signals  # held_elsewhere's driver is stopped if it hangs


@pytest.fixture(params=["sqlite", "postgres"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store with the cashier's run `cerrado`, run to its end (its transfer made once)."""
    store = store_in(request.param, tmp_path)
    assert child(store, tmp_path, "cerrado").returncode == 0
    return store


def test_fork_says_what_it_copied_and_the_new_effects_before_anything_runs(
    journal: str, tmp_path: Path
) -> None:
    before = cli("export", journal, "cerrado").stdout
    done = cli("fork", journal, "cerrado", "3", "otra")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "forked cerrado at 000003-tool into otra: 6 events",
        "made again by the fork, each of these is a new, real effect (a key of its own):",
        "  000003-tool  transferir  key cerrado/000003-tool → otra/000003-tool",
        "  000005-tool  notificar  key cerrado/000005-tool → otra/000005-tool",
        "the fork goes on when its agent runs it with run_id 'otra'",
    ]
    assert cli("export", journal, "cerrado").stdout == before  # the original, as it was
    shown = cli("show", journal, "otra").stdout.splitlines()
    assert shown[2] == "forked from cerrado at 000003-tool"
    assert [line.split()[0] for line in shown[6:] if line[0] != " "] == [
        "000000-model",
        "000001-tool",
        "000002-model",
    ]
    resumed = child(journal, tmp_path, "otra")  # the same agent, on the fork
    assert resumed.returncode == 0, resumed.stderr
    assert "model_calls 2" in resumed.stdout  # the prefix's two model calls: not paid again
    assert effects(tmp_path, "otra") == {"transferir": 1, "notificar": 1}  # new, real effects


def test_fork_with_an_answer_journals_it_as_a_persons_and_show_says_so(journal: str) -> None:
    done = cli(
        "fork", journal, "cerrado", "000004-model", "otra", "--answer", "Hecho.", "--by", "ana"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == (
        "  step 000004-model: the answer of ana, in place of the model's (no model call)"
    )
    shown = cli("show", journal, "otra").stdout.splitlines()
    assert shown[-2:] == [
        "000004-model    a c     says «Hecho.»",
        "                        answered by ana in place of the model (a fork)",
    ]

    async def resume() -> tuple[int, str]:
        gateway = double()
        from synaptum_lite import Session

        async for step in cajero().run(
            "Transfiere 100 € de ES91 a ES12 y avisa.",
            session=Session("otra", gateway, open_store(journal)),
        ):
            last = step
        return gateway.model_calls, last.output

    assert asyncio.run(resume()) == (0, "Hecho.")


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (("cerrado", "9", "otra"), 3, "it has no step 9: its steps are 0 to 7 (000000-model to"),
        (("cerrado", "000003-model", "otra"), 3, "it has no step '000003-model': its steps are"),
        (("nadie", "0", "otra"), 3, "cannot fork run 'nadie': SqliteCheckpointer"),
        (("cerrado", "3", "cerrado"), 2, "run 'cerrado' is the run to fork: choose another"),
        (("cerrado", "3", "otra", "--answer", "x"), 2, "step 000003-tool is not a model step"),
        (("cerrado", "3", " "), 2, "NEW is empty; name a run"),
    ],
)
def test_fork_refuses_with_an_exit_code_and_what_to_do_and_writes_nothing(
    journal: str, args: tuple[str, ...], code: int, said: str
) -> None:
    if "SqliteCheckpointer" in said and journal.startswith("postgresql"):
        said = "cannot fork run 'nadie': PostgresCheckpointer"
    done = cli("fork", journal, *args)
    assert (done.returncode, done.stdout) == (code, "")
    assert done.stderr.startswith("synaptum-lite: ") and said in done.stderr, done.stderr
    assert cli("show", journal, "otra").returncode == 3  # no run was written


def test_fork_of_a_run_a_driver_in_another_process_holds_is_busy(
    journal: str, tmp_path: Path
) -> None:
    with held_elsewhere(journal, "pago", tmp_path / "suelta"):
        done = cli("fork", journal, "pago", "0", "otra")
    assert done.returncode == 5
    assert "a driver holds run 'pago' now" in done.stderr
    assert done.stderr.endswith("then fork again; nothing was written\n")
    assert asyncio.run(load_events(open_store(journal), "otra")) == []
