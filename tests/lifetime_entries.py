"""Entry points of measuring processes for the lifetime tests (a spawned process imports its entry point by module
name)."""

from __future__ import annotations

import time
from multiprocessing.connection import Connection


def sleeper(conn: Connection) -> None:
    """A measuring process that is ready and then does nothing for ten minutes."""
    conn.send(("ready", "sleeper"))
    time.sleep(600)
