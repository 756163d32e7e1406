"""One driver per run for the SQLite store: a lock on one byte of the journal file itself.

The store uses five names: `enter_file` (this process's counted handle on a file), `lock_run`
(hold a run of that file, or None when another driver holds it), `leave_file`,
`refuse_odd_files` (which files a journal may be), and `close_collected` (a
finalizer's close that must not wait for this module's lock). The operator's command line
asks `held` (is a run held now, without taking it).

A run's lock is taken on the journal file, not on a file beside it: every name of the file
(relative, absolute, through a symlink) reaches the same lock, and there is no lock file to
delete. The byte is chosen by the run id, at an offset far above the bytes SQLite locks (512
from 0x40000000): a lock past the end of a file is allowed, changes nothing in it, and never
meets SQLite's. The operating system drops it when its owner dies, so a killed worker never
blocks the resume. Which lock, by platform (`_lock_kind`):

- Linux: an open-file-description lock (`fcntl.F_OFD_SETLK`) on that byte.
- macOS, which has no such lock: a `flock` on a file of the run's own in `<real path>.locks/`.
- Windows: `msvcrt.locking` on that byte (`LockFileEx`, exclusive, fail at once), on a handle
  opened for it. Windows locks belong to a handle and go with it, or with the process.
- Pyodide and WASI, one process and no OS file locks: this process's own record of its runs.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat as _stat
import struct
import sys
import threading
from collections.abc import Callable
from typing import Any, Literal

from ..errors import ConfigurationError, LockFailed

Release = Callable[[], None]
FilePath = str | os.PathLike[str]

_RUN_LOCKS_FROM = 1 << 62  # byte offsets of run locks: [2**62, 2**62 + 2**61)
_OFD_LOCK = struct.Struct("hhqqi4x")  # struct flock on Linux: type, whence, start, len, pid
_BUSY = (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK)  # the lock is held by another
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _lock_kind() -> Literal["posix", "windows", "process"]:
    """Which run lock this platform gives: the one place the platform is chosen.

    "process" where this Python is the only process that reaches its files and the OS has no
    file locks to give: Pyodide (Emscripten) and WASI. There `fcntl` exists but locks nothing
    (under Pyodide 314, `F_OFD_SETLK` fails with EINVAL and `flock` succeeds on two descriptors
    of one file at once), so none is attempted. Files the host shares with another process (a
    Node `NODEFS` mount, say) are not protected between those processes."""
    if sys.platform in ("emscripten", "wasi"):
        return "process"
    return "windows" if sys.platform == "win32" else "posix"


# ── which files a journal may be ─────────────────────────────────────────────────────────
#
# Asked before the lock descriptor is opened and before the store connects (sqlite_file.py).
# A file with several hard links is refused everywhere: SQLite keeps its write-ahead log and
# its index beside the name it was given (`<name>-wal`, `<name>-shm`), so two names of one
# file would each see a different journal, and could damage it.


def refuse_odd_files(database: str | os.PathLike[str], stat: os.stat_result) -> None:
    """Raise `ConfigurationError` when `database` is not one plain file with one name: a
    folder, a device or a pipe (SQLite would hang on a pipe, and lose everything written to
    /dev/null), or a file with several hard links (see above)."""
    name = os.path.basename(database)  # the file's name, as errors show it
    if _stat.S_ISDIR(stat.st_mode):
        raise ConfigurationError(
            f"the journal {name} is a folder, not a file; nothing was opened: give the path of "
            f"a journal file, such as {name}/runs.db (a new name creates one)"
        )
    if not _stat.S_ISREG(stat.st_mode):
        raise ConfigurationError(
            f"the journal {name} is not a regular file (a device, a pipe or a socket); nothing "
            "was opened: give the path of a journal file (a new name creates one)"
        )
    if stat.st_nlink > 1:
        raise ConfigurationError(
            f"the journal {name} has {stat.st_nlink} names (hard links); SQLite keeps "
            "its write-ahead log beside each name, so each name would see another journal: "
            "remove the other links and use one name (a symlink is fine)"
        )


# ── this process's handle on each file ──────────────────────────────────────────────────────
#
# The descriptor that holds the locks must outlive every SQLite connection of this process to
# the file: on POSIX, closing *any* descriptor of a file drops the locks the process holds on
# it, SQLite's own included (its shared lock in WAL mode). So this process opens one
# descriptor per file (by device and inode), shared by every hold and every connection, and
# closes it when the last of them ends. (A `sqlite3` connection the program opens itself is
# not counted; closing any descriptor of the file under it is SQLite's own known hazard.)
# Windows does not need this, and it costs nothing there.


class LockedFile:
    """This process's lock descriptor on one database file, and the runs it holds."""

    __slots__ = ("key", "fd", "writable", "users", "held")

    def __init__(self, key: tuple[int, int], fd: int, writable: bool) -> None:
        self.key = key  # (st_dev, st_ino)
        self.fd = fd
        self.writable = writable
        self.users = 0  # holds under way and open connections of this process
        self.held: set[int] = set()  # run offsets held in this process


_FILES: dict[tuple[int, int], LockedFile] = {}
_FILES_LOCK = threading.Lock()
_PARKED: list[int] = []  # descriptors that must stay open (see `enter_file`)
_FLOCKS: set[int] = set()  # descriptors of the runs' flock files (macOS), while held


def _forget_after_fork() -> None:
    """In a child made by `fork`: close its copies of the lock descriptors.

    A lock on an open file description (Linux's OFD lock, macOS's flock) belongs to every
    descriptor of that description, so a child forked while a run is held (a tool using
    multiprocessing's fork, a daemon) kept the run locked after its parent was killed, and
    the resume was told "busy" for as long as the child lived. Closing the child's copies
    leaves the parent's lock as it is and lets it die with the parent; the stores the child
    inherited can no longer release (unlock through the shared description) what the parent
    holds."""
    global _FILES_LOCK
    _FILES_LOCK = threading.Lock()  # another thread may have held it at the fork
    for locked in _FILES.values():
        _close_quietly(locked.fd)
        locked.fd = -1  # inert: see `leave_file` and `lock_run`
        locked.held.clear()
    _FILES.clear()
    for fd in (*_PARKED, *_FLOCKS):
        _close_quietly(fd)
    _PARKED.clear()
    _FLOCKS.clear()


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


if sys.platform != "win32" and hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def enter_file(database: FilePath, run_id: str = "") -> LockedFile:
    """The lock descriptor of the file at `database`, counted as one more user.

    Creates the file (empty: SQLite makes it a database) when it does not exist. A file this
    process may only read is opened read-only: its runs can then be read, never driven.
    Raises `LockFailed` naming the file and the cause."""
    _close_unreachable()
    with _FILES_LOCK:
        try:
            stat = os.stat(database)
            refuse_odd_files(database, stat)
            key = _identity(stat)
        except FileNotFoundError:
            key = None
        except OSError as exc:
            raise LockFailed(_name(database), run_id, cause(exc)) from None
        locked = _FILES.get(key) if key is not None else None
        if locked is None:
            fd, writable = _open_for_locks(database, run_id)
            key = _identity(os.fstat(fd))
            locked = _FILES.get(key)
            if locked is None:
                locked = _FILES[key] = LockedFile(key, fd, writable)
            else:  # the file was replaced between stat and open: keep the known descriptor
                _PARKED.append(fd)  # never closed: closing would drop this process's locks
        locked.users += 1
        return locked


def leave_file(locked: LockedFile) -> None:
    """One user of `locked` fewer; the last one closes its descriptor."""
    with _FILES_LOCK:
        if locked.fd < 0:  # inherited through a fork, and closed there
            return
        locked.users -= 1
        if locked.users == 0 and not locked.held:
            del _FILES[locked.key]
            os.close(locked.fd)  # nobody here holds a run or a connection on this file
    _close_unreachable()


_UNREACHABLE: list[Release] = []  # closes of collected stores, not yet called


def close_collected(close: Release) -> None:
    """Call `close` for a store nobody can reach any more (its finalizer).

    The garbage collector may run this in a thread that holds `_FILES_LOCK` (in the middle of
    `enter_file`, say), where taking the lock again would wait forever: then `close` is called
    by the next `enter_file` or `leave_file`, outside the lock."""
    _UNREACHABLE.append(close)
    if _FILES_LOCK.acquire(blocking=False):
        _FILES_LOCK.release()
        _close_unreachable()


def _close_unreachable() -> None:
    while True:
        try:
            close = _UNREACHABLE.pop()
        except IndexError:  # another thread took the last one
            return
        close()


def _open_for_locks(database: FilePath, run_id: str) -> tuple[int, bool]:
    try:
        os.makedirs(os.path.dirname(database) or os.curdir, exist_ok=True)
        return os.open(database, os.O_RDWR | os.O_CREAT | _CLOEXEC, 0o644), True
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise LockFailed(_name(database), run_id, cause(exc)) from None
    try:
        return os.open(database, os.O_RDONLY | _CLOEXEC), False
    except OSError as exc:
        raise LockFailed(_name(database), run_id, cause(exc)) from None


def _name(database: FilePath) -> str:
    """The file's name, as errors show it."""
    return os.path.basename(database)


def _identity(stat: os.stat_result) -> tuple[int, int]:
    return stat.st_dev, stat.st_ino


def cause(exc: OSError) -> str:
    """An OS error as errors show it: its errno name and what it means."""
    name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    return f"{name}: {exc.strerror or exc}"


# ── the run's lock ──────────────────────────────────────────────────────────────────────────


def lock_run(database: FilePath, locked: LockedFile, run_id: str) -> Release | None:
    """Lock `run_id` of the file `locked`; the function that releases it, or None when another
    driver (in this process or another) holds it.

    On Linux a read-only file gets a shared lock: any number of readers, never while a driver
    holds the run (elsewhere readers of a run take turns). Raises `LockFailed` when locking
    fails for another reason (the file system has no locks, say), and `ConfigurationError`
    where the platform has no file locks this module knows."""
    offset = _run_offset(run_id)
    kind = _lock_kind()
    fcntl = _posix_locks() if kind == "posix" else None
    with _FILES_LOCK:
        if offset in locked.held:  # a driver of this process holds it
            return None
        if kind == "process":  # exact: every driver there is in `held`
            release: Release | None = _nothing_to_release
        elif kind == "windows":
            release = _lock_byte_windows(database, locked, offset, run_id)
        elif getattr(fcntl, "F_OFD_SETLK", None) is None:
            release = _flock_run(database, offset, run_id, fcntl)
        else:
            release = _lock_byte_posix(database, locked, offset, run_id, fcntl)
        if release is None:
            return None
        locked.held.add(offset)

    def release_run() -> None:
        with _FILES_LOCK:
            if locked.fd < 0:  # a child forked while the run was held: the parent holds it
                return
            try:
                release()
            finally:
                locked.held.discard(offset)

    return release_run


def _nothing_to_release() -> None:
    pass


def _run_offset(run_id: str) -> int:
    """The byte of the journal file whose lock is `run_id`'s."""
    digest = int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big")
    return _RUN_LOCKS_FROM + (digest >> 3)


def held(database: FilePath, run_id: str) -> bool | None:
    """Whether a driver (of this process or another) holds `run_id` of the file now, asked
    without taking the lock; None where the lock cannot be asked about without taking it
    (macOS's flock, Windows, Pyodide and WASI)."""
    if _lock_kind() != "posix":
        return None
    fcntl = _posix_locks()
    if getattr(fcntl, "F_OFD_GETLK", None) is None:
        return None
    offset = _run_offset(run_id)
    locked = enter_file(database, run_id)
    try:
        with _FILES_LOCK:
            if offset in locked.held:
                return True  # a driver of this process
            asked = _OFD_LOCK.pack(fcntl.F_RDLCK, os.SEEK_SET, offset, 1, 0)
            answer = fcntl.fcntl(locked.fd, fcntl.F_OFD_GETLK, asked)
        return bool(_OFD_LOCK.unpack(answer)[0] != fcntl.F_UNLCK)
    finally:
        leave_file(locked)


def _posix_locks() -> Any:
    try:
        import fcntl  # imported here: the package itself imports on any platform
    except ImportError:
        raise ConfigurationError(
            "SqliteCheckpointer needs OS file locks (fcntl on Linux and macOS, msvcrt on "
            "Windows) to give a run one driver; on this platform use MemoryCheckpointer or "
            "PostgresCheckpointer"
        ) from None
    return fcntl


def _lock_byte_posix(
    database: FilePath, locked: LockedFile, offset: int, run_id: str, fcntl: Any
) -> Release | None:
    """Linux: an open-file-description lock on the run's byte (shared on a read-only file)."""
    kind = fcntl.F_WRLCK if locked.writable else fcntl.F_RDLCK
    try:
        fcntl.fcntl(locked.fd, fcntl.F_OFD_SETLK, _OFD_LOCK.pack(kind, os.SEEK_SET, offset, 1, 0))
    except OSError as exc:
        if exc.errno in _BUSY:
            return None
        raise LockFailed(_name(database), run_id, cause(exc)) from None

    def release() -> None:
        unlock = _OFD_LOCK.pack(fcntl.F_UNLCK, os.SEEK_SET, offset, 1, 0)
        fcntl.fcntl(locked.fd, fcntl.F_OFD_SETLK, unlock)

    return release


def _flock_run(database: FilePath, offset: int, run_id: str, fcntl: Any) -> Release | None:
    """Where there are no open-file-description locks (macOS): `flock` on a file of the run's
    own, beside the file's real path, so relative names and symlinks reach the same one."""
    folder = os.path.realpath(database) + ".locks"
    path = os.path.join(folder, f"{offset:x}.lock")
    where = f"{_name(folder)}{os.sep}{_name(path)}"  # errors name the file that failed
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise LockFailed(_name(database), run_id, f"{_name(folder)}: {cause(exc)}") from None
    try:
        # read-only is enough for flock: a lock file another user made still locks
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | _CLOEXEC, 0o644)
    except OSError as exc:
        raise LockFailed(_name(database), run_id, f"{where}: {cause(exc)}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in _BUSY:
            return None
        raise LockFailed(_name(database), run_id, f"{where}: {cause(exc)}") from None
    _FLOCKS.add(fd)

    def release() -> None:  # closing the description releases its lock
        if fd in _FLOCKS:  # not closed already by a fork (`_forget_after_fork`)
            _FLOCKS.discard(fd)
            os.close(fd)

    return release


def _lock_byte_windows(
    database: FilePath, locked: LockedFile, offset: int, run_id: str
) -> Release | None:
    """Windows: `msvcrt.locking` on the run's byte (exclusive, also on a read-only file).

    A lock held by another handle fails with EACCES (ERROR_LOCK_VIOLATION): busy. Windows
    drops a handle's locks when the handle closes or its process ends (its documentation warns
    that freeing a dead process's locks may take a moment). Not run here: CI runs it on
    windows-latest, and mypy checks it with `--platform win32`."""
    try:
        _windows_locking(locked.fd, offset, unlock=False)
    except OSError as exc:
        if exc.errno in _BUSY:
            return None
        raise LockFailed(_name(database), run_id, cause(exc)) from None
    return lambda: _windows_locking(locked.fd, offset, unlock=True)


def _windows_locking(fd: int, offset: int, *, unlock: bool) -> None:
    """Lock (or unlock) the byte at `offset` of `fd`, failing at once when it is taken.

    `msvcrt.locking` starts at the descriptor's position: the C runtime's `_locking` reads it
    as 64 bits and calls `LockFileEx` there, so the byte is the one Linux locks. Moving the
    position is safe: only this module uses this descriptor, under `_FILES_LOCK`."""
    if sys.platform == "win32":  # mypy checks this block with --platform win32
        import msvcrt

        os.lseek(fd, offset, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK if unlock else msvcrt.LK_NBLCK, 1)
    else:
        raise OSError(errno.ENOSYS, f"msvcrt.locking is Windows-only, not {sys.platform}")
