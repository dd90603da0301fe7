"""What can go wrong with a run's Optuna storage, told plainly: URLs a run cannot use, and the database's failures.

A run keeps every evaluation in its storage, so a URL is checked before anything is created, an in-memory
database (gone with the process) is refused, and SQLite's failures (a full disk, a read-only file, a file that
is no database) are named with the file they concern instead of surfacing as Optuna's StorageInternalError.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import optuna
import sqlalchemy
from sqlalchemy.engine import URL, make_url

from tuner.errors import TunerError

EXAMPLE_URL = "sqlite:///path/to/study.db"

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


def check_storage_url(url: str) -> None:
    """Refuse a URL that cannot hold a run's studies, without creating anything."""
    try:
        parsed = make_url(url)
        parsed.get_dialect()
    except Exception as exc:  # SQLAlchemy raises several kinds; all mean the URL cannot be used
        raise TunerError(f"cannot open the Optuna storage '{url}' ({_first_line(exc)}); give a database URL such "
                         f"as {EXAMPLE_URL}") from None
    if _in_memory(parsed):
        raise TunerError(f"the Optuna storage '{url}' is an in-memory SQLite database, which is gone when the process "
                         f"ends, and a run's results must outlive it: give a file URL such as {EXAMPLE_URL} (or no "
                         f"--storage, for study.db in the output folder)")


def _in_memory(url: URL) -> bool:
    if url.get_backend_name() != "sqlite":
        return False
    database = url.database or ""
    return database in ("", ":memory:") or database.startswith("file::memory:") or url.query.get("mode") == "memory"


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _storage_name(url: str) -> str:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        return f"the storage file {parsed.database}"
    return f"the Optuna storage '{url}'"


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _known_failure(exc: BaseException) -> tuple[str, str] | None:
    """(what is wrong, what to do) by the database's words in ``exc`` or its causes; None if nothing is known."""
    texts = " | ".join(str(e) for e in _causes(exc))
    return next(((what, fix) for symptom, what, fix in _SQLITE_FAILURES if symptom in texts), None)


def open_failure(exc: BaseException, url: str) -> TunerError:
    """Why the storage at ``url`` (a URL check_storage_url accepts) cannot be opened, as one paragraph."""
    known = _known_failure(exc)
    if known is None:
        return TunerError(f"cannot open the Optuna storage '{url}' ({_first_line(exc)}); give a database URL such as "
                          f"{EXAMPLE_URL}")
    what, fix = known
    return TunerError(f"{_storage_name(url)} {what}; nothing was written to it: {fix}, or choose another output "
                      f"folder with --out (or another storage with --storage)")


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
