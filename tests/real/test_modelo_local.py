"""`scripts/modelo_local.py` on a CPU that traps: it records the trap, goes one level down, and
says so; where every level traps, it exits 4 with one loud line, the environment's verdict.

The trapping binary is real: a C program whose first instruction is `ud2` (`__builtin_trap`),
which the CPU refuses with SIGILL, exactly as a llama-server built for an instruction set the
host lacks dies. Each test runs the script as a command, in a cache folder of its own.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import modelo_local
from scripts.pages import REPO

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() != "x86_64" or shutil.which("cc") is None,
    reason="the trap is an x86-64 `ud2` compiled with cc, on Linux",
)

SCRIPT = REPO / "scripts" / "modelo_local.py"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    folder.mkdir()
    monkeypatch.setenv("SYNAPTUM_CACHE", str(folder))
    return folder


def trapping_binary(where: Path) -> Path:
    source = where.with_suffix(".c")
    source.write_text("int main(void) { __builtin_trap(); }\n")
    subprocess.run(["cc", "-O0", "-o", str(where), str(source)], check=True)
    probe = subprocess.run([str(where)], check=False)
    assert probe.returncode == -4, "the probe should die of SIGILL"  # 4 = SIGILL on Linux
    return where


def place(build: modelo_local.Build, binary: Path) -> None:
    """Put `binary` in the cache as `build`, verified, as a finished build leaves it."""
    build.home.mkdir(parents=True, exist_ok=True)
    shutil.copy2(binary, build.binary)
    info = {"level": build.level.name, "verified": True, "build_seconds": 0}
    (build.home / "build.json").write_text(json.dumps(info))


def run_script(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *arguments],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=600,  # bounds a hang only
    )


def a_model_of_the_right_size(cache: Path) -> None:
    """`model_file` trusts a cached model of the pinned size; the trap dies before reading it."""
    with (cache / modelo_local.MODEL_FILE).open("wb") as sparse:
        sparse.truncate(modelo_local.MODEL_BYTES)


def test_a_host_that_traps_at_every_level_exits_4_and_says_so(cache: Path) -> None:
    a_model_of_the_right_size(cache)
    trap = trapping_binary(cache / "trap")
    levels = modelo_local.levels_for_this_cpu()
    assert [level.name for level in levels][-1] == "generic"
    for level in levels:
        place(modelo_local.Build(level), trap)

    first = run_script("start", "--port", str(modelo_local.free_port()))

    assert first.returncode == modelo_local.EXIT_HOST, first.stdout + first.stderr
    out = first.stdout
    assert out.count("TRAPPED: llama-server") == len(levels)
    assert "died of SIGILL (illegal instruction) at start" in out
    verdict = out.strip().splitlines()[-1]
    assert verdict.startswith("[modelo_local] THIS HOST CANNOT RUN THE REAL MODEL:")
    assert all(level.name in verdict for level in levels)
    recorded = json.loads((cache / "llama-server.traps.json").read_text())
    assert sorted(entry["level"] for entry in recorded.values()) == sorted(
        level.name for level in levels
    )
    # A second start does not try them again: the traps are remembered for this CPU.
    second = run_script("start", "--port", str(modelo_local.free_port()))
    assert second.returncode == modelo_local.EXIT_HOST
    assert "TRAPPED" not in second.stdout
    assert "every level it can build" in second.stdout


def test_a_cached_build_that_traps_makes_the_script_build_the_next_level(
    cache: Path,
) -> None:
    """The cached top-level build traps at start, the next level is not built: the script
    records the trap and builds the next level (here it stops at the build's first check, as
    PATH has no compiler, so the test compiles nothing for 20 minutes)."""
    a_model_of_the_right_size(cache)
    trap = trapping_binary(cache / "trap")
    levels = modelo_local.levels_for_this_cpu()
    if len(levels) < 2:
        pytest.skip("this CPU reports a single level")
    place(modelo_local.Build(levels[0]), trap)

    no_compiler = {**os.environ, "PATH": "/nonexistent"}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "start", "--port", str(modelo_local.free_port())],
        capture_output=True,
        text=True,
        env=no_compiler,
        timeout=600,
    )

    out = result.stdout
    assert f"TRAPPED: llama-server ({levels[0].name} build)" in out
    assert f"trying the next level down: {levels[1].name}" in out
    # It went on to build the next level (and stopped there only because PATH has no cc).
    assert "FAILED: no cc compiler" in out and result.returncode == modelo_local.EXIT_FAILED


@pytest.mark.skipif(
    not os.environ.get("SYNAPTUM_LOCAL_MODEL_URL"), reason="needs the real llama-server build"
)
def test_a_trapping_build_gives_way_to_the_next_level_which_serves(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real server, started from the next level's folder after the top level trapped.

    The real binary (the build `.ci/run` started) stands in for the next level's build: what
    is under test is the ladder, which folder the script runs after a trap, not what the level
    compiles (that is `Build.cmake_args`, printed by `status`)."""
    monkeypatch.delenv("SYNAPTUM_CACHE")
    real = next(
        modelo_local.Build(level)
        for level in modelo_local.LEVELS
        if modelo_local.Build(level).verified()
    )
    real_binary, real_model = real.binary, modelo_local.cache_dir() / modelo_local.MODEL_FILE
    monkeypatch.setenv("SYNAPTUM_CACHE", str(cache))
    (cache / modelo_local.MODEL_FILE).symlink_to(real_model)
    levels = modelo_local.levels_for_this_cpu()
    if len(levels) < 2:
        pytest.skip("this CPU reports a single level")
    place(modelo_local.Build(levels[0]), trapping_binary(cache / "trap"))
    place(modelo_local.Build(levels[1]), real_binary)
    port = str(modelo_local.free_port())

    try:
        first = run_script("start", "--port", port)
        assert first.returncode == 0, first.stdout + first.stderr
        assert f"TRAPPED: llama-server ({levels[0].name} build)" in first.stdout
        assert f"({levels[1].name} build) answers at" in first.stdout
        assert modelo_local.healthy(int(port))
        run_script("stop")
        again = run_script("start", "--port", port)
        assert again.returncode == 0 and "TRAPPED" not in again.stdout, again.stdout
    finally:
        run_script("stop")
