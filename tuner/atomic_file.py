"""Replacing a file whole: a reader sees the old file or the new one, never half of one.

The new content goes to a temporary file created afresh beside the target (``O_EXCL`` under a random name, so a
link planted in the folder is never written through), which is then renamed over the target. ``mkstemp`` makes that
file readable by its owner only; it is given the mode ``open()`` would have given a new file (0666 less the process's
umask), so that the people and servers the umask lets in can read what a run writes.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

NEW_FILE_MODE = 0o666
"""What ``open()`` asks for a new file, before the umask."""
_umask_lock = threading.Lock()


def current_umask() -> int:
    """The process's umask, read without changing it where Linux shows it (``/proc/self/status``)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        status = ""
    found = re.search(r"^Umask:\s*([0-7]+)$", status, re.MULTILINE)
    if found:
        return int(found.group(1), 8)
    with _umask_lock:  # elsewhere it is read by setting it, and set back at once
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def replace_with(path: Path, write: Callable[[Path], object]) -> None:
    """Make ``path`` hold what ``write`` writes to the temporary path it is given; on any failure the target is
    left as it was and the temporary is removed."""
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        os.fchmod(handle, NEW_FILE_MODE & ~current_umask())
    finally:
        os.close(handle)
    partial = Path(name)
    try:
        write(partial)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def write_bytes(path: Path, data: bytes) -> None:
    replace_with(path, lambda partial: partial.write_bytes(data))


def write_text(path: Path, text: str) -> None:
    replace_with(path, lambda partial: partial.write_text(text, encoding="utf-8"))
