"""A run's surroundings going wrong: an output folder that cannot be one is one paragraph and exit status 2,
and nothing is written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"


def tuner_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "tuner", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def one_paragraph(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    return lines[0]


# --- the output folder ----------------------------------------------------------------------------------------


def test_an_empty_out_is_refused_and_nothing_is_written(tmp_path, recording):
    done = tuner_cli("run", str(FERMI), "--backend", "replay", "--replay", str(recording), "--out", "", cwd=tmp_path)
    assert "--out is empty" in one_paragraph(done)
    assert list(tmp_path.iterdir()) == []


def test_a_name_with_a_nul_creates_no_folder(tmp_path, recording):
    experiment = tmp_path / "nul.yaml"
    experiment.write_text(FERMI.read_text().replace("name: fermi_like", 'name: "fermi\\0like"'))
    done = tuner_cli("run", str(experiment), "--backend", "replay", "--replay", str(recording), cwd=tmp_path)
    message = one_paragraph(done)
    assert message.startswith(f"error: {experiment}, line ") and "field 'name': is used as a folder name" in message
    assert [p.name for p in tmp_path.iterdir()] == ["nul.yaml"]
