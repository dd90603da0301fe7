"""Names that become file names, kept within what a file system holds.

A family's name names the report's figures (``params_<family>.png``) and exported files, and every file is written
beside its target under a longer temporary name first (:mod:`tuner.atomic_file`), so a family name may have at most
MAX_FAMILY_NAME characters. A file name made of several names (a study, a family) is cut to MAX_FILE_NAME bytes,
a hash of the whole name kept so that two long names stay apart. A path past the system's limits is refused
before anything is read or written at it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

MAX_FAMILY_NAME = 64
MAX_FILE_NAME = 200
"""Bytes of a file name: NAME_MAX is 255 on common file systems, and the temporary name adds to it."""


def family_name_refusal(name: str) -> str | None:
    """Why ``name`` cannot name a family's files, or None."""
    if len(name) > MAX_FAMILY_NAME:
        return (f"the family name '{name[:24]}…' has {len(name)} characters, more than the {MAX_FAMILY_NAME} a name "
                f"of the report's files may take")
    return None


def fitting_name(stem: str, suffix: str) -> str:
    """``stem + suffix``, the stem cut (and told apart by a hash of it) where the whole would pass MAX_FILE_NAME."""
    name = stem + suffix
    if len(name.encode()) <= MAX_FILE_NAME:
        return name
    digest = hashlib.sha256(stem.encode()).hexdigest()[:12]
    room = MAX_FILE_NAME - len(suffix.encode()) - len(digest) - 1
    cut = stem.encode()[:room].decode(errors="ignore")
    return f"{cut}_{digest}{suffix}"


def path_refusal(path: Path) -> str | None:
    """Why the file system cannot hold ``path`` (a name past its NAME_MAX, the whole past its PATH_MAX), or None;
    the path is named cut to its first characters."""
    name_max, path_max = _limits()
    whole = str(path.absolute())
    shown = whole if len(whole) <= 80 else f"{whole[:80]}…"
    longest = max(path.parts, key=lambda part: len(part.encode()), default="")
    if len(longest.encode()) > name_max:
        return (f"{shown}: the name '{longest[:24]}…' in the path has {len(longest.encode())} bytes, more than the "
                f"{name_max} a file name may have here")
    if len(whole.encode()) >= path_max:
        return (f"{shown}: the path has {len(whole.encode()):,} bytes, more than the {path_max - 1:,} a path may "
                f"have here")
    return None


def _limits() -> tuple[int, int]:
    try:
        return os.pathconf("/", "PC_NAME_MAX"), os.pathconf("/", "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        return 255, 4096
