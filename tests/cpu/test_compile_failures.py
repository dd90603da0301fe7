"""A kernel family that never compiles: the run ends with a warning that names it, its count of compile errors
and where the compiler's messages are, instead of a bare "0 ok"."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ROOT, run_cli
from tuner.tuning.compile_failures import compile_failure_warning, never_compiled


def _rows(*pairs: tuple[str, str]) -> pd.DataFrame:
    return pd.DataFrame([{"family": family, "status": status} for family, status in pairs])


def test_only_a_family_none_of_whose_evaluations_compiled_is_named():
    df = _rows(("baseline", "ok"), ("broken", "compile_error"), ("broken", "compile_error"), ("broken", "invalid"),
               ("fine", "compile_error"), ("fine", "ok"))
    assert never_compiled(df) == {"broken": 2}
    warning = compile_failure_warning(df, Path("out"))
    assert warning is not None
    assert "no configuration of broken (2 compile errors) compiled" in warning
    assert "reason column of out/results.csv" in warning
    assert compile_failure_warning(_rows(("fine", "ok")), Path("out")) is None


@pytest.mark.slow
def test_a_run_whose_kernel_never_compiles_warns(quick_ceilings, tmp_path):
    family = tmp_path / "families"
    family.mkdir()
    naive = (ROOT / "kernel_templates" / "cpu_naive.py").read_text()
    (family / "cpu_broken.py").write_text(naive.replace('name="cpu_naive"', 'name="cpu_broken"'))
    (family / "cpu_broken.c.j2").write_text("{{ header }}\nvoid matmul(int M) { this is not C; }\n")
    experiment = tmp_path / "broken.yaml"
    experiment.write_text("name: broken\nproblems:\n  - {M: 16, N: 16, K: 16}\nkernels:\n  - template: cpu_broken\n"
                          "    parameters: {PARALLEL: [0, 1], dtype: [float32]}\n")
    out = tmp_path / "run"
    done = run_cli("run", str(experiment), "--templates", str(family), "--out", str(out), "--no-report")
    assert done.returncode == 0, done.stderr
    assert "no configuration of cpu_broken (2 compile errors) compiled" in done.stderr
    assert str(out / "results.csv") in " ".join(done.stderr.split())
