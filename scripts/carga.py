"""Run a command again and again on a busy machine: CPU hogs beside it, the load it ran under.

    uv run python -m scripts.carga --hogs 8 --warm-up 8 --times 3 -- uv run pytest
    uv run python -m scripts.carga --hogs 8 --warm-up 8 --times 10 -- \
        uv run python -m scripts.update_pages --check

A test that passes only when a process starts or a server answers fast enough is a timed test in
disguise; on a quiet machine it passes, on a busy one it fails. This script makes the busy machine
on purpose: `--hogs` processes that only burn CPU (a `while True` loop each), started before the
first run and killed after the last one (also on Ctrl-C). Then it runs the command `--times` times
in a row, and for each run prints its exit status, how long it took and the load average it ran
under (the 1-minute figure of /proc/loadavg, sampled every few seconds: mean, min, max). That
figure lags the hogs by minutes: `--warm-up LOAD` waits until it reaches LOAD before the first run,
so no run is reported under a load it did not have yet. It stops at the first failing run unless
`--keep-going` is given; its own exit status is the number of failing runs (0: every run passed),
capped at 100.

The load average counts runnable processes: on a 2-core machine, six hogs plus a test suite's
own processes give 10 or more. Only Linux has /proc/loadavg; elsewhere the load is reported as
unknown and everything else works.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

#: How often the load average is sampled while a run goes on (a bound on the report's detail,
#: not on anything measured).
SAMPLE_EVERY = 5.0

_HOG = "while True:\n    pass\n"

#: How long `--warm-up` waits for the load to reach its figure: a bound on a hang (a machine
#: whose load never gets there), not a speed.
WARM_UP_BOUND = 900.0


def load_average() -> float | None:
    """The 1-minute load average, or None where /proc/loadavg does not exist."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def start_hogs(count: int) -> list[subprocess.Popen[bytes]]:
    """`count` processes that burn one CPU each until killed."""
    return [
        subprocess.Popen(
            [sys.executable, "-c", _HOG],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # a hog holds no pipe of whoever reads carga's output
            stderr=subprocess.DEVNULL,
        )
        for _ in range(count)
    ]


def stop_hogs(hogs: list[subprocess.Popen[bytes]]) -> None:
    for hog in hogs:
        hog.kill()
    for hog in hogs:
        hog.wait()


def warm_up(
    target: float,
    *,
    bound: float = WARM_UP_BOUND,
    read: Callable[[], float | None] = load_average,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[float | None, float]:
    """Wait until the load average reaches `target` (the 1-minute figure lags the hogs by
    minutes, so the first runs would otherwise run under less than the load they report):
    the load reached and the seconds waited. Gives up after `bound` seconds, or at once where
    the load is unknown, returning what it last read."""
    waited = 0.0
    load = read()
    while load is not None and load < target and waited < bound:
        sleep(SAMPLE_EVERY)
        waited += SAMPLE_EVERY
        load = read()
    return load, waited


def run_once(command: list[str]) -> tuple[int, float, list[float]]:
    """Run `command` to its end; its exit status, seconds taken and load samples."""
    samples: list[float] = []
    started = time.monotonic()
    process = subprocess.Popen(command)
    while True:
        try:
            status = process.wait(timeout=SAMPLE_EVERY)
            break
        except subprocess.TimeoutExpired:
            load = load_average()
            if load is not None:
                samples.append(load)
    return status, time.monotonic() - started, samples


def describe(samples: list[float]) -> str:
    if not samples:
        return "load unknown"
    return (
        f"load {statistics.fmean(samples):.1f} (min {min(samples):.1f}, max {max(samples):.1f}, "
        f"{len(samples)} samples)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.carga",
        description="Run a command several times in a row beside CPU hogs; report each run's "
        "status and the load average it ran under.",
    )
    parser.add_argument("--hogs", type=int, default=6, help="busy processes beside (default 6)")
    parser.add_argument("--times", type=int, default=3, help="runs in a row (default 3)")
    parser.add_argument("--keep-going", action="store_true", help="run them all after a failure")
    parser.add_argument(
        "--warm-up",
        type=float,
        metavar="LOAD",
        help="before the first run, wait until the load average reaches LOAD "
        f"(at most {WARM_UP_BOUND:.0f} s)",
    )
    parser.add_argument("--report", type=Path, help="also append the report's lines to this file")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --, e.g. -- uv run pytest")
    if args.warm_up is not None and not args.warm_up >= 0:
        parser.error(f"--warm-up must be a load average, 0 or more, got {args.warm_up}")
    if args.hogs < 0 or args.times < 1:
        parser.error(f"--hogs must be >= 0 and --times >= 1, got {args.hogs} and {args.times}")

    def say(line: str) -> None:
        print(f"[carga] {line}", flush=True)
        if args.report:
            with args.report.open("a", encoding="utf-8") as report:
                report.write(line + "\n")

    hogs = start_hogs(args.hogs)
    # A SIGTERM ends the hogs too (Ctrl-C arrives as KeyboardInterrupt).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    failures = 0
    try:
        say(
            f"{' '.join(command)} · {args.times} run(s) beside {args.hogs} hog(s) on "
            f"{os.cpu_count()} CPU(s)"
        )
        if args.warm_up is not None:
            load, waited = warm_up(args.warm_up)
            shown = "unknown" if load is None else f"{load:.1f}"
            reached = load is not None and load >= args.warm_up
            say(
                f"warm-up: load {shown} after {waited:.0f} s"
                + ("" if reached else f", short of {args.warm_up:g}; running anyway")
            )
        for number in range(1, args.times + 1):
            status, seconds, samples = run_once(command)
            verdict = "passed" if status == 0 else f"FAILED (exit {status})"
            say(f"run {number}/{args.times}: {verdict} in {seconds:.0f} s · {describe(samples)}")
            if status != 0:
                failures += 1
                if not args.keep_going:
                    break
    finally:
        stop_hogs(hogs)
    say(f"{failures} failing run(s)")
    return min(failures, 100)


if __name__ == "__main__":
    raise SystemExit(main())
