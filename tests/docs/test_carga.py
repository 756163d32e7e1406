"""`scripts/carga.py`, the busy machine on purpose: what it reports, and what it leaves behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scripts.pages import REPO
from tests.bounds import HANG


def _carga(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scripts.carga", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=HANG,  # a hang, not a speed
    )


def test_each_run_is_reported_and_the_first_failure_stops_the_rest():
    done = _carga("--hogs", "2", "--times", "3", "--", sys.executable, "-c", "raise SystemExit(3)")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert "3 run(s) beside 2 hog(s)" in lines[0]
    assert lines[1].startswith("[carga] run 1/3: FAILED (exit 3) in ")
    assert lines[-1] == "[carga] 1 failing run(s)"
    assert not any("run 2/3" in line for line in lines)


def test_keep_going_runs_them_all_and_counts_the_failures():
    done = _carga("--hogs", "0", "--times", "2", "--keep-going", "--", sys.executable, "-c", "1/0")
    assert done.returncode == 2
    assert [line.split(":")[0] for line in done.stdout.splitlines()[1:3]] == [
        "[carga] run 1/2",
        "[carga] run 2/2",
    ]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux's /proc")
def test_the_hogs_are_gone_when_it_ends(tmp_path):
    pids = tmp_path / "pids"
    # the command it runs lists the hogs (its siblings: the children of carga's process)
    lister = (
        "import os, pathlib; parent = os.getppid(); "
        "kids = pathlib.Path(f'/proc/{parent}/task/{parent}/children').read_text().split(); "
        "siblings = [k for k in kids if int(k) != os.getpid()]; "
        f"pathlib.Path({str(pids)!r}).write_text(' '.join(siblings))"
    )
    done = _carga("--hogs", "3", "--times", "1", "--", sys.executable, "-c", lister)
    assert done.returncode == 0, done.stderr
    hogs = pids.read_text().split()
    assert len(hogs) == 3
    for pid in hogs:  # killed and reaped: no such process any more
        assert _state(pid) is None, f"hog {pid} outlived carga"


def _state(pid: str) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def test_the_warm_up_waits_for_the_load_and_gives_up_at_its_bound():
    from scripts import carga

    readings = iter([1.0, 4.0, 7.5, 9.0])
    naps: list[float] = []
    load, waited = carga.warm_up(7.0, read=lambda: next(readings), sleep=naps.append)
    assert (load, waited) == (7.5, 2 * carga.SAMPLE_EVERY) and len(naps) == 2
    never = carga.warm_up(7.0, bound=3 * carga.SAMPLE_EVERY, read=lambda: 1.0, sleep=naps.append)
    assert never == (1.0, 3 * carga.SAMPLE_EVERY)
    assert carga.warm_up(7.0, read=lambda: None, sleep=naps.append) == (None, 0.0)


def test_a_warm_up_short_of_its_load_says_so_and_runs_anyway():
    done = _carga("--hogs", "0", "--warm-up", "0", "--times", "1", "--", sys.executable, "-c", "")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith("[carga] warm-up: load ")
    refused = _carga("--warm-up", "nan", "--", sys.executable, "-c", "")
    assert refused.returncode == 2 and "--warm-up must be a load average" in refused.stderr
