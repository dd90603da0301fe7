"""The journal file of an Optuna ``JournalStorage``, opened never through a link and appended so that a failed
write leaves no torn line.

Optuna's own file backend opens the path as it is, following a link planted there, and a write cut short (a full
disk) leaves a line without its end, after which the next line appended makes the whole journal unreadable. Here
every open of the journal refuses a link (``O_NOFOLLOW``), and an append that fails is cut back to where it began,
under the journal's lock, before the error is raised: the journal then holds every change before the failure and
nothing of the failed one, so that running again continues.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Generator
from typing import Any

from optuna.storages.journal import JournalFileBackend
from optuna.storages.journal._file import LOCK_FILE_SUFFIX, get_lock_file

NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class LinkedJournal(OSError):
    """The journal's path is a symbolic link."""


def open_journal(path: str, flags: int) -> int:
    """A descriptor of the journal at ``path``, never of what a link there points to."""
    try:
        return os.open(path, flags | NO_FOLLOW, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LinkedJournal(errno.ELOOP, f"{path} is a symbolic link; a journal is never opened through a "
                                             f"link") from None
        raise


class JournalFile(JournalFileBackend):
    """Optuna's journal file backend, with no-follow opens and appends that a failure cuts back."""

    def __init__(self, file_path: str) -> None:
        try:
            os.close(open_journal(file_path, os.O_RDONLY))
        except FileNotFoundError:  # a new journal (a link is never absent: even a dangling one is refused)
            os.close(open_journal(file_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        super().__init__(file_path)

    def read_logs(self, log_number_from: int) -> Generator[dict[str, Any], None, None]:
        os.close(open_journal(self._file_path, os.O_RDONLY))  # Optuna's reader opens the path by name
        yield from super().read_logs(log_number_from)

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        data = ("\n".join(json.dumps(log, separators=(",", ":")) for log in logs) + "\n").encode("utf-8")
        with get_lock_file(self._lock):
            descriptor = open_journal(self._file_path, os.O_WRONLY | os.O_APPEND)
            try:
                start = os.fstat(descriptor).st_size
                try:
                    _write_all(descriptor, data)
                    os.fsync(descriptor)
                except OSError:
                    os.ftruncate(descriptor, start)
                    raise
            finally:
                os.close(descriptor)


def release_stale_lock(path: str) -> None:
    """Remove the lock link of a journal that no other process writes (the folder's own, under the folder's lock):
    one left by a killed process, or planted, would keep Optuna waiting for ever (it never ages a lock whose target
    is missing). The link itself is removed, never what it points to."""
    with contextlib.suppress(OSError):  # none there, or a folder that cannot be written (which a write reports)
        os.unlink(path + LOCK_FILE_SUFFIX)


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view):]
