"""Worker entry points for the lifetime tests (a spawned worker imports its entry point by module name)."""

from __future__ import annotations

import time
from multiprocessing.connection import Connection


def sleeper(conn: Connection) -> None:
    """A worker that is ready and then does nothing for ten minutes."""
    conn.send(("ready", "sleeper"))
    time.sleep(600)
