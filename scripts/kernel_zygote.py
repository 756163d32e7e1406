"""A warm parent for kernels: imports ipykernel once, then forks one fresh kernel per order.

    python scripts/kernel_zygote.py        (started by scripts/kernel.py, Linux only)

Most of a kernel's start-up is importing ipykernel, IPython, pyzmq and tornado, about 0.4 s of
CPU, and every notebook paid it again. This process pays it once per check. Each order then
forks a child that becomes a kernel exactly as `python -m ipykernel_launcher` would: the same
`IPKernelApp`, started in the notebook's folder, with its own IPython directory, its own
connection file and stderr log. No user code ever runs here, no thread is started and no
socket is opened before forking, so every child is as fresh as a kernel started from scratch.

Protocol, one JSON object per line.
  stdin:  {"fork": {"connection": …, "cwd": …, "ipython_dir": …, "tmpdir": …, "stderr": …}}
          | {"kill": pid}
  stdout: {"ready": true} once, then {"forked": pid} per fork, in order, and
          {"exited": pid, "code": n, "cpu": s} when a child ends (negative n: killed by
          signal -n; s: the CPU seconds it used, with the processes it waited for).
Closing stdin kills the children that are left and ends this process.

Imported (as `scripts.kernel_zygote`, standard library only), it starts itself early:
`start_early(env)` launches the warm parent at once, so that it imports ipykernel while the
caller imports nbclient (the docs check) or pytest collects; `scripts/kernel.py` takes it
(`take_early`) if it was started with the environment the kernels need, else starts its own.
"""

import gc
import json
import os
import select
import signal
import subprocess
import sys
import threading

#: What a kernel imports while it starts, measured; imported here once, before any fork.
PRELOAD = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "ipykernel.debugger",
    "IPython.core.completerlib",
    "IPython.core.logger",
    "IPython.core.debugger",
    "IPython.core.oinspect",
    "IPython.extensions.storemagic",
    "tornado.platform.asyncio",
    "tornado.queues",
    "tornado.locks",
)


def main() -> None:
    for module in PRELOAD:
        __import__(module)
    assert threading.active_count() == 1, "a preloaded module started a thread: forking is unsafe"
    # What was imported here lives as long as every kernel: frozen, the kernels' garbage
    # collector never walks it, so it never writes to (and copies) those pages. Measured: a
    # kernel that prints one line, 6,200 page faults and 0.09 s of CPU before, 4,300 and
    # 0.06 s after; the whole docs check (18 notebooks, about 7.6 s of CPU in its kernels),
    # 0.35 s less on average over five alternating pairs, less in all five.
    gc.freeze()
    children: set[int] = set()
    say({"ready": True})
    pending = b""
    while True:
        readable, _, _ = select.select([0], [], [], 0.05)
        reap(children)
        if not readable:
            continue
        chunk = os.read(0, 65536)
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            order = json.loads(line)
            if "fork" in order:
                pid = os.fork()
                if pid == 0:
                    become_kernel(**order["fork"])  # never returns
                children.add(pid)
                say({"forked": pid})
            elif order.get("kill") in children:
                os.kill(order["kill"], signal.SIGKILL)
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    while children:
        reap(children, block=True)


def become_kernel(connection: str, cwd: str, ipython_dir: str, tmpdir: str, stderr: str) -> None:
    """In the child: what `python -m ipykernel_launcher -f CONNECTION` does, then exit."""
    code = 1
    try:
        os.chdir(cwd)
        os.environ["IPYTHONDIR"] = ipython_dir
        os.environ["TMPDIR"] = tmpdir
        import tempfile

        tempfile.tempdir = None  # a preloaded module may have asked for it: ask again
        null = os.open(os.devnull, os.O_RDWR)
        log = os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(log, 2)
        from ipykernel.kernelapp import IPKernelApp

        argv = ["-f", connection, "--HistoryManager.enabled=False"]
        sys.argv = ["ipykernel_launcher", *argv]
        IPKernelApp.launch_instance(argv=argv)
        code = 0
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def reap(children: set[int], *, block: bool = False) -> None:
    while children:
        pid, status, usage = os.wait4(-1, 0 if block else os.WNOHANG)
        if pid == 0:
            return
        children.discard(pid)
        cpu = round(usage.ru_utime + usage.ru_stime, 3)
        say({"exited": pid, "code": os.waitstatus_to_exitcode(status), "cpu": cpu})
        if block:
            return


def say(message: dict) -> None:
    try:
        os.write(1, (json.dumps(message) + "\n").encode())
    except BrokenPipeError:  # the runner has gone; nobody is listening any more
        pass


#: Environment variables removed before a kernel starts: any of them selects a real model.
MODEL_VARIABLE_PREFIXES = ("SYNAPTUM_", "AXONIUM_")


def kernel_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a kernel: the caller's, minus every model variable."""
    base = dict(os.environ if base is None else base)
    return {
        name: value for name, value in base.items() if not name.startswith(MODEL_VARIABLE_PREFIXES)
    }


def check_environment(model: dict[str, str] | None = None) -> dict[str, str]:
    """What the docs check starts its kernels with: `kernel_environment()`, plus `model` (the
    variables of a real model, given on purpose), without debugpy's warning about frozen
    modules (the check needs no debugger)."""
    env = kernel_environment()
    env.update(model or {})
    env.update(PYDEVD_DISABLE_FILE_VALIDATION="1", JUPYTER_PLATFORM_DIRS="1")
    return env


#: The warm parent started ahead of time, with the environment it was given.
_early: tuple[dict[str, str], subprocess.Popen[bytes]] | None = None


def spawn(env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start this program as a warm parent, with pipes for its orders and its answers."""
    return subprocess.Popen(
        [sys.executable, __file__], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )


def start_early(env: dict[str, str]) -> None:
    """Start a warm parent now, for a check that will start its kernels with `env` (Linux)."""
    global _early
    if sys.platform == "linux" and _early is None:
        _early = (dict(env), spawn(env))


def take_early(env: dict[str, str]) -> "subprocess.Popen[bytes] | None":
    """The warm parent started early, if its environment is `env`; one started with another
    is stopped (its kernels would inherit the wrong variables). None if there is none."""
    global _early
    early, _early = _early, None
    if early is None:
        return None
    started_with, process = early
    if started_with == env and process.poll() is None:
        return process
    if process.stdin:
        process.stdin.close()
    process.wait()
    return None


if __name__ == "__main__":
    # Run as a script, Python put this folder first on sys.path; a kernel must not see it.
    del sys.path[0]
    main()
