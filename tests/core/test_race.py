"""Two processes racing to drive one run: one drives, the other is told "busy" at once;
after the owner is SIGKILLed, the run resumes immediately and no effect happens twice.
On SQLite and on PostgreSQL (the server of tests/postgres/store.py)."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from .agents import ANSWER
from .test_kill import ROOT, STORE_KINDS, child, effects, store_in

pytestmark = pytest.mark.posix_signals  # it SIGKILLs child processes


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_second_driver_is_refused_at_once_and_a_killed_owner_never_blocks(tmp_path, kind):
    store = store_in(kind, tmp_path)
    owner = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.core.agents",
            store,
            "r",
            str(tmp_path / "r.effects"),
            "--stall-in",
            "transferir",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout.readline().strip() == "stalled"  # inside the transfer, holding the run

        second = child(store, tmp_path, "r")
        assert second.returncode == 4, second.stderr
        assert second.stdout.strip() == "busy r"
        assert effects(tmp_path, "r") == {"consultar_saldo": 1, "transferir": 1}
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        owner.stdout.close()
    assert owner.returncode == -signal.SIGKILL

    # the owner died holding the run: its lock died with it; the transfer is uncertain
    resumed = child(store, tmp_path, "r", "--operator")
    assert resumed.returncode == 0, resumed.stderr
    assert "uncertain 000003-tool transferir" in resumed.stdout
    assert f"final {ANSWER}" in resumed.stdout
    assert effects(tmp_path, "r") == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}
