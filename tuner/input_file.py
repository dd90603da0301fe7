"""Reading a file a user names: only a regular file, and only up to a stated size.

A FIFO blocks its reader until a writer comes, ``/dev/zero`` never ends, a device or a socket is no document:
every file an experiment, a recording or a run folder names is opened without blocking (``O_NONBLOCK``) and
refused unless it is a regular file. A file is read up to a limit; a gzip stream is decompressed a chunk at a
time and refused as soon as its output passes the limit, so that a small file that expands to gigabytes is
never held whole.
"""

from __future__ import annotations

import os
import stat
import zlib
from pathlib import Path

GZIP_MAGIC = b"\x1f\x8b"
CHUNK_BYTES = 1 << 20


class InputFileError(OSError):
    """A file that is not a regular file, or larger than its limit (its text says which, as a reason)."""


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def not_regular(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` is no regular file (it is a FIFO, a device, ...), or None where it is one or does not exist."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else f"is {kind_of(mode)}, not a regular file"


def _open(path: Path) -> int:
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        raise InputFileError(f"it is {kind_of(mode)}, not a regular file")
    return descriptor


def read_bytes(path: str | os.PathLike[str], limit: int, gunzip: bool = False) -> bytes:
    """The content of the regular file ``path``, at most ``limit`` bytes of it (decompressed, where ``gunzip`` is
    set and the file is a gzip stream; a stream cut off early gives what it holds). InputFileError where the file
    is no regular file or holds more; OSError where it cannot be read; zlib.error for a damaged stream."""
    with os.fdopen(_open(Path(path)), "rb") as file:
        raw = file.read(limit + 1)
        if not (gunzip and raw.startswith(GZIP_MAGIC)):
            if len(raw) > limit:
                raise InputFileError(f"it holds more than the {limit:,} bytes such a file may have")
            return raw
        return _gunzip(raw, file, limit)


def _gunzip(head: bytes, file: object, limit: int) -> bytes:
    stream = zlib.decompressobj(16 + zlib.MAX_WBITS)
    parts: list[bytes] = []
    size = 0
    pending = head
    while pending:
        while pending:
            chunk = stream.decompress(pending, CHUNK_BYTES)
            pending = stream.unconsumed_tail
            size += len(chunk)
            if size > limit:
                raise InputFileError(f"it expands to more than the {limit:,} bytes such a file may have once "
                                     f"decompressed")
            parts.append(chunk)
            if stream.eof:
                return b"".join(parts)
        pending = file.read(CHUNK_BYTES)  # type: ignore[attr-defined]
    return b"".join(parts)


def read_text(path: str | os.PathLike[str], limit: int, gunzip: bool = False) -> str:
    """As :func:`read_bytes`, decoded as UTF-8 (UnicodeDecodeError where it is not)."""
    return read_bytes(path, limit, gunzip).decode("utf-8")


def reason(exc: OSError) -> str:
    """An OSError's reason in a few words: the system's, or this module's."""
    if isinstance(exc, InputFileError):
        return str(exc)
    return os.strerror(exc.errno) if exc.errno else str(exc)
