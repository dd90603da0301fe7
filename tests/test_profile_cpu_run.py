"""`tuner profile` on a run folder whose kernels are C kernels measured on the CPU: it says why nothing is counted
(counters are read for CUDA kernels) instead of claiming the run had no successful configuration."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from tuner.errors import TunerError
from tuner.results import table as results
from tuner.tuning.profile_command import profile_folder

ROOT = Path(__file__).resolve().parent.parent


def test_profiling_a_cpu_run_names_its_successful_c_kernels(tmp_path):
    folder = tmp_path / "cpu_run"
    shutil.copytree(ROOT / "experiments/data/fermi_like_h100", folder)
    df = pd.read_parquet(folder / results.RESULTS_PARQUET)
    df.loc[df["family"] != results.BASELINE_FAMILY, "family"] = "cpu_blocked"
    df.to_parquet(folder / results.RESULTS_PARQUET)
    (folder / "counters.parquet").unlink()
    ok = int(((df["status"] == "ok") & (df["family"] == "cpu_blocked")).sum())
    with pytest.raises(TunerError) as raised:
        profile_folder(folder, report=False, quiet=True)
    message = str(raised.value)
    assert "no successful configuration" not in message
    assert f"none of its {ok} successful evaluations (cpu_blocked) is of a CUDA kernel" in message
