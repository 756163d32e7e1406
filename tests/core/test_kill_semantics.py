"""Real kills (SIGKILL of a child process) in the middle of the richer behaviours: an
approved call, a delegation, a streamed model step. The resumed run repeats nothing."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.bounds import HANG

from .test_kill import ROOT

pytestmark = pytest.mark.posix_signals  # it SIGKILLs child processes


def child(tmp: Path, scenario: str, action: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.core.semantics_child",
            scenario,
            str(tmp / "runs.db"),
            str(tmp / "effects"),
            action,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG,
    )


def effects(tmp: Path) -> Counter[str]:
    path = tmp / "effects"
    return Counter(path.read_text().splitlines()) if path.exists() else Counter()


def test_an_approved_call_then_a_crash_before_the_final_step_runs_once(tmp_path):
    waiting = child(tmp_path, "approval", "run")
    assert "waiting 000001-approval" in waiting.stdout and effects(tmp_path) == {}
    assert child(tmp_path, "approval", "grant").stdout.strip() == "granted"
    killed = child(tmp_path, "approval", "die-after-tool")
    assert killed.returncode == -signal.SIGKILL
    assert effects(tmp_path) == {"transferir ES12": 1}

    resumed = child(tmp_path, "approval", "run")
    assert resumed.returncode == 0, resumed.stderr
    assert "final Hecho: transferido a ES12" in resumed.stdout
    assert "model_calls 1" in resumed.stdout  # only the answer after the transfer
    assert effects(tmp_path) == {"transferir ES12": 1}


def test_a_completed_delegation_then_a_crash_does_not_run_the_sub_agent_again(tmp_path):
    killed = child(tmp_path, "delegation", "die-after-delegation")
    assert killed.returncode == -signal.SIGKILL
    assert effects(tmp_path) == {"consultar ES91": 1}

    resumed = child(tmp_path, "delegation", "run")
    assert resumed.returncode == 0, resumed.stderr
    assert "final Saldo: ES91: 4.200,00 €" in resumed.stdout
    assert "model_calls 1" in resumed.stdout  # the parent's last answer; the child's run is closed
    assert effects(tmp_path) == {"consultar ES91": 1}


def test_a_crash_in_the_middle_of_a_streamed_model_step_streams_it_again_once(tmp_path):
    killed = child(tmp_path, "stream", "die-mid-stream")
    assert killed.returncode == -signal.SIGKILL

    resumed = child(tmp_path, "stream", "run")
    assert resumed.returncode == 0, resumed.stderr
    assert (
        "final El saldo de la cuenta ES91 es de 4.200,00 euros a día de hoy, sin movimientos."
        in resumed.stdout
    )
    assert "model_calls 1" in resumed.stdout
    assert "fragments 10" in resumed.stdout  # 78 characters in fragments of 8

    again = child(tmp_path, "stream", "run")
    assert (
        "model_calls 0" in again.stdout and "fragments 0" in again.stdout
    )  # closed: nothing replayed
