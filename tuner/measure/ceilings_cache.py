"""Measured ceilings kept between runs: one JSON summary per device (GPU or CPU) under the cache folder.

Measuring a device's ceilings takes seconds to minutes; its summary is written once and read back by every
later run on the same device. A summary that cannot be read, or names another device, is measured again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tuner import atomic_file


def read_cached(path: Path, name: str) -> dict[str, Any] | None:
    """The summary cached in ``path`` for the device called ``name``; None when there is none or it is unreadable."""
    if not path.exists():
        return None
    try:
        cached = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return cached if isinstance(cached, dict) and cached.get("device", {}).get("name") == name else None


def write_cached(path: Path, summary: dict[str, Any]) -> None:
    """Keep a device summary in ``path``; a cache that cannot be written is a warning."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_file.write_text(path, json.dumps(summary, indent=2))
    except OSError as exc:
        print(f"warning: could not cache the ceilings in {path}: {exc}", file=sys.stderr)
