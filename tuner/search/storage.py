"""A run's Optuna storage: the run folder's own journal ``study.log`` (:func:`own_storage_url`), which URL opens
which storage (SQLAlchemy URLs an ``RDBStorage``, PostgreSQL through psycopg 3; ``journal:///PATH`` a
``JournalStorage``; a shared one with heartbeats, :mod:`tuner.search.workers`), and its failures told plainly: a
URL checked before anything is created, an in-memory database refused, an unreachable server named with its URL
(password hidden), SQLite's failures named with their file."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import time
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import sqlalchemy
from optuna.storages.journal import JournalStorage
from sqlalchemy.engine import URL, make_url

from tuner.errors import Naming, TunerError, option_name
from tuner.input_file import not_regular
from tuner.search.journal_file import JournalFile, open_journal
from tuner.settings import STORAGE_FILE

EXAMPLE_URL = "sqlite:///path/to/study.db"
JOURNAL_TAIL_BYTES = 1 << 20
JOURNAL_SCHEME = "journal://"
EXAMPLES = f"{EXAMPLE_URL}, postgresql://user@host/database or {JOURNAL_SCHEME}/shared/path/study.log"

_SQLITE_FAILURES = (  # (the words of SQLite's error, what they mean, what to do)
    ("database or disk is full", "is full (SQLite: database or disk is full)", "free space on its disk"),
    ("attempt to write a readonly database", "cannot be written (SQLite: attempt to write a readonly database)",
     "make the file and its folder writable"),
    ("unable to open database file", "cannot be opened or created (SQLite: unable to open database file)",
     "check that its folder exists and can be written"),
    ("disk I/O error", "cannot be read or written (SQLite: disk I/O error)", "check the disk and its free space"),
    ("file is not a database", "is not an Optuna storage (SQLite: file is not a database)",
     "move its folder aside to start afresh"),
)


def journal_path(url: str) -> Path | None:
    """The log file a ``journal://`` URL names; None for a database URL."""
    return Path(url[len(JOURNAL_SCHEME):]) if url.startswith(JOURNAL_SCHEME) else None


def database_url(url: str) -> URL:
    """The SQLAlchemy URL of a database storage URL: ``postgresql://`` through psycopg 3, the driver this
    package installs (unless psycopg2 is the one installed)."""
    parsed = make_url(url)
    if parsed.drivername == "postgresql" and importlib.util.find_spec("psycopg2") is None:
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def shown(url: str) -> str:
    """The URL as messages name it: a password hidden."""
    try:
        return url if journal_path(url) else make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL at all: named as given
        return url


def own_storage_url(folder: Path) -> str:
    """The URL of a run folder's own storage: its journal file."""
    folder = folder.resolve()  # the folder only: a link planted as the file stays a link, which is refused
    return f"{JOURNAL_SCHEME}{folder / STORAGE_FILE}"


def repair_journal_end(path: Path) -> None:
    """Cut a last line that a killed process left half written (it never counted: a change is recorded when its
    line ends), so that the next line appended is read as a line of its own. Only for a journal no other process
    writes."""
    try:
        with os.fdopen(open_journal(str(path), os.O_RDWR), "rb+") as log:
            size = log.seek(0, os.SEEK_END)
            if size == 0:
                return
            log.seek(max(0, size - JOURNAL_TAIL_BYTES))
            tail = log.read()
            if tail.endswith(b"\n"):
                return
            cut = tail.rfind(b"\n")
            if cut < 0 and size > JOURNAL_TAIL_BYTES:
                return  # a line longer than the tail looked at: left for the reader to report
            log.truncate(size - len(tail) + cut + 1)
    except OSError:  # absent, or not writable: opening it says so
        return


def _check_last_entry(path: Path) -> None:
    """ValueError when the journal's last whole line is no journal entry (Optuna's reader skips a bad line that
    nothing follows, and fails only once the next change is appended after it)."""
    if not path.is_file():
        return
    with open(path, "rb") as log:
        size = log.seek(0, os.SEEK_END)
        log.seek(max(0, size - JOURNAL_TAIL_BYTES))
        lines = log.read().splitlines(keepends=True)
    whole = [line for line in lines if line.endswith(b"\n")]
    if not whole or (len(lines) == len(whole) == 1 and size > JOURNAL_TAIL_BYTES):
        return
    try:
        entry = json.loads(whole[-1])
    except ValueError:
        entry = None
    if not isinstance(entry, dict) or "op_code" not in entry:
        raise ValueError(f"its last line is no journal entry: {whole[-1][:60]!r}")


def experiment_in_file(path: Path) -> str | None:
    """The experiment whose studies a run folder's own journal holds, read without opening it as a storage; None
    where it holds none or cannot be read."""
    names: list[str] = []
    try:
        with open(path, "rb") as log:
            for line in log:
                entry = json.loads(line)
                if isinstance(entry, dict) and isinstance(entry.get("study_name"), str):
                    names = [entry["study_name"]]
                    break
    except (OSError, ValueError):
        return None
    return names[0].split("/", 1)[0] if names and "/" in names[0] else None


def check_storage_url(url: str, name: Naming = option_name) -> None:
    """Refuse a URL that cannot hold a run's studies, without creating anything."""
    path = journal_path(url)
    if path is not None:
        if not path.name or not path.parent.is_dir():
            raise TunerError(f"the journal storage '{url}' names no file in an existing folder; give the log "
                             f"file's path, such as {JOURNAL_SCHEME}/shared/path/study.log (its folder must exist)")
        if path.is_symlink():
            raise TunerError(f"the journal storage file {path} is a symbolic link (to {os.readlink(path)}); a journal "
                             f"is never written through a link, which could lead to any file: remove the link, or "
                             f"give the file it points to")
        _check_regular(path, url)
        return
    try:
        parsed = database_url(url)
        parsed.get_dialect()
    except Exception as exc:  # SQLAlchemy raises several kinds; all mean the URL cannot be used
        raise TunerError(f"cannot open the Optuna storage '{shown(url)}' ({_first_line(exc)}); give a storage URL "
                         f"such as {EXAMPLES}") from None
    if parsed.get_backend_name() == "sqlite" and parsed.database and not _in_memory(parsed):
        _check_regular(Path(parsed.database), url)
    if _in_memory(parsed):
        raise TunerError(f"the Optuna storage '{url}' is an in-memory SQLite database, which is gone when the process "
                         f"ends, and a run's results must outlive it: give a file URL such as {EXAMPLE_URL} (or no "
                         f"{name('storage')}, for the output folder's own storage)")


def _check_regular(path: Path, url: str) -> None:
    """Refuse a storage file that exists and is no regular file (a FIFO would block, a device never end)."""
    why = not_regular(path)
    if why is not None:
        raise TunerError(f"the Optuna storage '{shown(url)}': {path} {why}; a storage file must be a regular file "
                         f"(or not exist yet)")


def _in_memory(url: URL) -> bool:
    if url.get_backend_name() != "sqlite":
        return False
    database = url.database or ""
    return database in ("", ":memory:") or database.startswith("file::memory:") or url.query.get("mode") == "memory"


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _storage_name(url: str) -> str:
    path = journal_path(url)
    if path is not None:
        return f"the journal storage file {path}"
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        return f"the storage file {parsed.database}"
    return f"the Optuna storage '{shown(url)}'"


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _deepest(exc: BaseException) -> BaseException:
    return list(_causes(exc))[-1]


def _server_unreachable(exc: BaseException) -> bool:
    """A database server that refused or never answered the connection (not a file database's failure)."""
    return any(isinstance(e, sqlalchemy.exc.OperationalError) for e in _causes(exc)) and not any(
        "sqlite" in type(e).__module__ for e in _causes(exc))


def _known_failure(exc: BaseException) -> tuple[str, str] | None:
    """(what is wrong, what to do) by the database's words in ``exc`` or its causes; None if nothing is known."""
    texts = " | ".join(str(e) for e in _causes(exc))
    return next(((what, fix) for symptom, what, fix in _SQLITE_FAILURES if symptom in texts), None)


def open_failure(exc: BaseException, url: str, name: Naming = option_name) -> TunerError:
    """Why the storage at ``url`` (a URL check_storage_url accepts) cannot be opened, as one paragraph."""
    known = _known_failure(exc)
    if journal_path(url) is not None and isinstance(exc, OSError):
        return TunerError(f"{_storage_name(url)} cannot be opened or created ({_os_reason(exc)}); nothing was "
                          f"written to it: make its folder writable and free space on its disk, or choose another "
                          f"output folder with {name('out')} (or another storage with {name('storage')})")
    if journal_path(url) is not None:
        return TunerError(f"{_storage_name(url)} cannot be read as an Optuna journal ({_first_line(exc)}); nothing "
                          f"was written to it: move it aside to start afresh, or give another file")
    if known is None and _server_unreachable(exc):
        return TunerError(f"the database server of the Optuna storage '{shown(url)}' cannot be reached "
                          f"({_first_line(_deepest(exc))}); nothing was written: check that the server runs, that "
                          f"this host may connect to it and that the URL's user, password and database are right")
    if known is None:
        return TunerError(f"cannot open the Optuna storage '{shown(url)}' ({_first_line(exc)}); give a storage URL "
                          f"such as {EXAMPLES}")
    what, fix = known
    return TunerError(f"{_storage_name(url)} {what}; nothing was written to it: {fix}, or choose another output "
                      f"folder with {name('out')} (or another storage with {name('storage')})")


@contextlib.contextmanager
def failures_explained(url: str) -> Iterator[None]:
    """Turn a storage failure with a known cause, raised while the block runs, into a TunerError saying so."""
    try:
        yield
    except (optuna.exceptions.StorageInternalError, sqlalchemy.exc.SQLAlchemyError) as exc:
        known = _known_failure(exc)
        if known is None:
            raise
        what, fix = known
        raise TunerError(f"{_storage_name(url)} {what}; everything recorded before the failure is kept: {fix}, then "
                         f"run the same command again to continue") from None
    except OSError as exc:
        if journal_path(url) is None or not _raised_by_journal(exc):
            raise
        raise TunerError(f"{_storage_name(url)} cannot be written ({_os_reason(exc)}); everything recorded before "
                         f"the failure is kept: free space on its disk or make it writable, then run the same command "
                         f"again to continue") from None


def _os_reason(exc: OSError) -> str:
    return os.strerror(exc.errno) if exc.errno else _first_line(exc)


def _raised_by_journal(exc: BaseException) -> bool:
    """Whether the exception comes from writing or reading an Optuna journal file."""
    return any(part in frame.filename.replace(os.sep, "/") for frame in traceback.extract_tb(exc.__traceback__)
               for part in ("optuna/storages/journal", "tuner/search/journal_file.py"))


# --- opening and closing ------------------------------------------------------------------------------------

HEARTBEAT_INTERVAL_S = 10
"""Seconds between a worker's heartbeats in a shared storage."""
CONNECT_TIMEOUT_S = 10
"""Seconds to wait for a database server to answer a new connection."""
GRACE_PERIODS = 4
CREATION_ATTEMPTS = 5
"""Processes that create a new database's tables at the same moment collide; the later ones try again."""
"""Heartbeat intervals without a beat after which a worker is dead."""


def open_storage(url: str, heartbeat_s: int | None = None, name: Naming = option_name) -> optuna.storages.BaseStorage:
    """The Optuna storage a URL names (see the module text); ``heartbeat_s``: the heartbeat interval of a storage
    that several processes share (None for one only this process uses); ``name``: how the errors name the run's
    settings (:mod:`tuner.errors`).

    SQLite files are switched to write-ahead logging with ``synchronous=NORMAL``: each trial commits several
    times, and a full sync per commit would cost more than many measurements. The file stays consistent
    through a crash of the process or of the machine; the latter may lose the last commits.
    """
    check_storage_url(url, name)
    path = journal_path(url)
    if path is not None:
        try:
            journal = JournalStorage(JournalFile(str(path)))
            journal.get_all_studies()  # read the log now: a damaged one is named here, not at its first use
            _check_last_entry(path)
            return journal
        except Exception as exc:  # an unreadable or damaged log
            raise open_failure(exc, url, name) from None
    heartbeat: dict[str, Any] = {} if heartbeat_s is None else {
        "heartbeat_interval": heartbeat_s, "grace_period": heartbeat_s * GRACE_PERIODS}
    for attempt in range(CREATION_ATTEMPTS):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                storage = optuna.storages.RDBStorage(database_url(url).render_as_string(hide_password=False),
                                                     engine_kwargs=_engine_options(url), **heartbeat)
            break
        except Exception as exc:  # SQLAlchemy and drivers raise many kinds; all mean the URL cannot be used
            if not _created_meanwhile(exc) or attempt == CREATION_ATTEMPTS - 1:
                raise open_failure(exc, url, name) from None
            time.sleep(0.2 * (attempt + 1))
    if storage.engine.dialect.name == "sqlite":
        sqlalchemy.event.listen(storage.engine, "connect", _sqlite_pragmas)
        storage.engine.dispose()  # connections made from now on get the pragmas
    return storage


def _engine_options(url: str) -> dict[str, Any]:
    """SQLAlchemy's engine options: connections checked before use, and a PostgreSQL server that accepts but
    does not answer given up after CONNECT_TIMEOUT_S (libpq waits 130 s), unless the URL sets connect_timeout."""
    options: dict[str, Any] = {"pool_pre_ping": True}
    parsed = database_url(url)
    if parsed.get_backend_name() == "postgresql" and "connect_timeout" not in parsed.query:
        options["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S}
    return options


def _created_meanwhile(exc: Exception) -> bool:
    """Whether another process created the tables at the same moment: a duplicate key on PostgreSQL, "table …
    already exists" on SQLite."""
    return isinstance(exc, sqlalchemy.exc.IntegrityError) or (
        isinstance(exc, sqlalchemy.exc.OperationalError) and "already exists" in str(exc))


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def close_storage(storage: optuna.storages.BaseStorage) -> None:
    """Close a database's connections (folding SQLite's write-ahead log into its file); a journal has none."""
    if isinstance(storage, optuna.storages.RDBStorage):
        storage.engine.dispose()
