"""Which files a SQLite journal may be: one plain file with one name.

`refuse_odd_files` is asked before the run lock's descriptor is opened (`runlock.enter_file`;
runlock re-exports it) and before the store connects to the file (sqlite.py). A folder, a
device, a pipe or a socket is refused: SQLite would hang on a pipe, and lose everything
written to /dev/null.

A file with several hard links is refused everywhere: SQLite keeps its write-ahead log and
its index beside the name it was given (`<name>-wal`, `<name>-shm`), so two names of one file
would each see a different journal, and could damage it.
"""

from __future__ import annotations

import os
import stat as _stat

from ..errors import ConfigurationError


def refuse_odd_files(database: str | os.PathLike[str], stat: os.stat_result) -> None:
    """Raise `ConfigurationError` when `database` is not one plain file with one name: a
    folder, a device or a pipe (SQLite would hang on a pipe, and lose everything written to
    /dev/null), or a file with several hard links (see the docstring)."""
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
