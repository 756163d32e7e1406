"""`synaptum-lite migrate`, run as an operator runs it (a process of its own), and what `show`
says of a migrated run, on a SQLite file and on a PostgreSQL schema."""

from __future__ import annotations

from pathlib import Path

import pytest

from .agents import ANSWER
from .busy_child import held_elsewhere
from .test_cli import STORE_KINDS, cli, store_in
from .test_kill import child, effects

pytestmark = pytest.mark.posix_signals

V2 = "tests.core.agents:cajero_v2"


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_migrate_writes_the_migration_show_says_it_and_the_run_ends_on_the_new_version(
    kind: str, tmp_path: Path
) -> None:
    store = store_in(kind, tmp_path)
    assert child(store, tmp_path, "r", "--stop-at", "8").returncode == 0
    migrated = cli("migrate", store, "r", "--to", V2, "--by", "ana")
    assert migrated.returncode == 0, migrated.stderr
    assert migrated.stdout.splitlines() == [
        "r 000004-migration: migrated by ana",
        "  version: None → 'v2'",
        "  instructions: 'Opera con cuidado.' → 'Opera con cuidado y confirma cada paso.'",
        "the run goes on from its next step when the new agent runs it with the same run_id",
    ]
    shown = cli("show", store, "r").stdout.splitlines()
    assert shown[0] == "run r · agent cajero · version v2 · model guionizado"
    at = shown.index("000004-migration  c       migrated by ana")
    assert shown[at + 1 : at + 3] == [
        " " * 26 + "version: None → 'v2'",
        " " * 26 + "instructions: 'Opera con cuidado.' → 'Opera con cuida…",
    ]
    resumed = child(store, tmp_path, "r", "--pinned")
    assert "agent v2" in resumed.stdout and f"final {ANSWER}" in resumed.stdout
    assert effects(tmp_path, "r") == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}
    closed = cli("migrate", store, "r", "--to", "tests.core.agents:cajero", "--by", "ana")
    assert closed.returncode == 4
    assert closed.stderr == (
        "synaptum-lite: run 'r' cannot be migrated: it is closed, and a closed run runs no "
        "step again; nothing was written\n"
    )


def test_migrate_refuses_what_names_no_agent_or_no_run_and_a_held_run(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    assert child(store, tmp_path, "r", "--stop-at", "8").returncode == 0
    for to, said in (
        ("cajero_v2", "--to 'cajero_v2' names no agent; give MODULE:NAME"),
        ("no_such_module:x", "module 'no_such_module' cannot be imported"),
        ("tests.core.agents:nadie", "module 'tests.core.agents' has no 'nadie'"),
        ("tests.core.agents:TASK", "is a str, not an Agent"),
    ):
        refused = cli("migrate", store, "r", "--to", to)
        assert (refused.returncode, said in refused.stderr) == (2, True), refused.stderr
    missing = cli("migrate", store, "otro", "--to", V2)
    assert missing.returncode == 3 and "no run 'otro'" in missing.stderr
    with held_elsewhere(store, "pago", tmp_path / "suelta"):
        busy = cli("migrate", store, "pago", "--to", V2)
        assert busy.returncode == 5, busy.stderr
        assert busy.stderr.endswith("; nothing was written\n")
    assert "migration" not in cli("show", store, "r").stdout
