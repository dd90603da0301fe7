"""Replacing a file whole: a reader sees the old file or the new one, never half of one.

The new content goes to a temporary file created afresh beside the target (``O_EXCL`` under a random name, so a
link planted in the folder is never written through), which is then renamed over the target.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def replace_with(path: Path, write: Callable[[Path], object]) -> None:
    """Make ``path`` hold what ``write`` writes to the temporary path it is given; on any failure the target is
    left as it was and the temporary is removed."""
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
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
