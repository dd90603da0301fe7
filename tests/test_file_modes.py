"""What a run writes is as readable as the umask lets a new file be, as with ``open()``: the team and a web server
can read a report, its figures, the results and the exports; the writes stay whole-file replacements."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_cli_run import ROOT
from tuner import atomic_file


@pytest.fixture
def umask() -> Iterator[None]:
    before = os.umask(0o022)
    os.umask(before)
    yield
    os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002, 0o077])
def test_a_replaced_file_has_the_mode_open_would_give(tmp_path, umask, mask):
    os.umask(mask)
    assert atomic_file.current_umask() == mask
    with (tmp_path / "opened").open("w"):
        pass
    atomic_file.write_text(tmp_path / "replaced", "new")
    atomic_file.write_bytes(tmp_path / "replaced", b"again")
    assert mode(tmp_path / "replaced") == mode(tmp_path / "opened") == 0o666 & ~mask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["opened", "replaced"]


@pytest.mark.slow
def test_every_file_of_a_run_its_report_and_its_export_is_readable_by_the_group_and_others(recording, tmp_path):
    out, exported = tmp_path / "run", tmp_path / "export"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    tuner = f"umask 022 && exec {sys.executable} -m tuner"
    commands = [f"{tuner} run experiments/fermi_like.yaml --backend replay --replay {recording} --out {out} --quiet",
                f"{tuner} export {out} --format kernel-tuner-cache --out {exported}"]
    for command in commands:
        done = subprocess.run(["sh", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    written = [p for folder in (out, exported) for p in folder.rglob("*") if p.is_file()]
    assert {p.suffix for p in written} >= {".png", ".html", ".parquet", ".json"}
    assert {str(p.relative_to(tmp_path)): oct(mode(p)) for p in written if mode(p) != 0o644} == {}
