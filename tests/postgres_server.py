"""A throwaway PostgreSQL server for the tests: initdb in a temporary folder, a Unix socket in that folder.

The server binaries are looked up on PATH, then in Debian's /usr/lib/postgresql/<version>/bin. initdb refuses
to run as root, so as root the server runs as the unprivileged user ``nobody`` (through ``setpriv``), which
owns the temporary folder. Nothing listens on TCP; clients connect through the socket.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.patience import patient

UNPRIVILEGED = "nobody"
USER = "tuner"


def find_binaries() -> Path | None:
    """The folder holding initdb and pg_ctl, or None where PostgreSQL is not installed."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl", path=str(Path(found).parent)):
        return Path(found).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                      key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    return versions[-1].parent if versions else None


def why_not_available() -> str | None:
    """Why no server can be started here, or None when one can."""
    if find_binaries() is None:
        return "PostgreSQL's initdb and pg_ctl are not installed (Debian: apt-get install postgresql)"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "running as root without setpriv, so initdb cannot run as an unprivileged user"
    return None


@dataclass(frozen=True)
class Server:
    folder: Path

    @property
    def socket_dir(self) -> Path:
        return self.folder

    def url(self, database: str = "postgres", driver: str = "postgresql+psycopg") -> str:
        return f"{driver}://{USER}@/{database}?host={self.socket_dir}"

    def create_database(self, name: str) -> str:
        """A new empty database; its URL."""
        import psycopg

        with psycopg.connect(host=str(self.socket_dir), user=USER, dbname="postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["setpriv", f"--reuid={UNPRIVILEGED}", f"--regid={pwd.getpwnam(UNPRIVILEGED).pw_gid}", "--clear-groups",
            *command]


@contextlib.contextmanager
def running_server() -> Iterator[Server]:
    """Start a server in a fresh temporary folder; stop it and remove the folder at the end."""
    binaries = find_binaries()
    assert binaries is not None, why_not_available()
    folder = Path(tempfile.mkdtemp(prefix="tuner-pg-", dir="/tmp"))  # short: a socket path has ~100 characters
    if os.geteuid() == 0:
        user = pwd.getpwnam(UNPRIVILEGED)
        os.chown(folder, user.pw_uid, user.pw_gid)
    data, log = folder / "data", folder / "server.log"

    def run(*args: str) -> None:
        subprocess.run(_as_server_user(list(args)), check=True, capture_output=True, text=True, timeout=patient(120))

    try:
        run(str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", USER, "--no-sync", "-E", "UTF8")
        options = f"-k {folder} -c listen_addresses='' -c fsync=off -c max_connections=200"
        run(str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "start")
        try:
            yield Server(folder)
        finally:
            run(str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
