"""A small tmpfs for tests of full and read-only disks; the test is skipped where mounting is not allowed (it
needs root or CAP_SYS_ADMIN)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(mount_point: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``16m``, ``80k``) mounted at ``mount_point`` (made here) while the block runs."""
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"a file system cannot be mounted here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


def remount(mount_point: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(mount_point)], check=True)
