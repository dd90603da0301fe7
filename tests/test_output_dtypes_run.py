"""A run of the dtypes whose C is written in 16 bits, on the scripted stand-in, then replayed: the dtype names its
studies, rows and baselines, split-K configurations are left out of the space with the rule that refuses them, and
the replayed rows are the recorded ones."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from scripted_backend import ScriptedBackend

import tuner
from tuner.experiment.schema import load_experiment
from tuner.search.study import study_spaces

DESIGN = """\
      BM: [64]
      BN: [128]
      STAGES: [4]
      CONSUMERS: [1]
      CLUSTER: [1]
      PERSISTENT: [0, 1]
      GROUP: [8]
      REGALLOC: [0]
      SPLIT_K: [1, 2]
"""
"""One consumer, one block per tile or persistent, with and without split-K."""
EXPERIMENT = f"""\
name: output_dtypes
description: wgmma and FP8 wgmma writing C in 16 bits.
problems:
  - {{M: 333, N: 520, K: 208}}
kernels:
  - template: wgmma
    parameters:
{DESIGN}      BK: [64]
      dtype: [bfloat16_out_bfloat16, float16_out_float16]
  - template: wgmma_fp8
    parameters:
{DESIGN}      BK: [128]
      PROMOTE: [0]
      PINGPONG: [0]
      dtype: [float8_e4m3_out_bfloat16]
search:
  strategy: grid
  trials: 8
  seed: 0
compile:
  arch: sm_90a
"""
COLUMNS = ["status", "reason", "verify_error", "time_median_ms", "gflops", "metadata_id"]


@pytest.fixture(autouse=True)
def no_report(monkeypatch):
    monkeypatch.setattr("tuner.report.write_report", lambda out, quiet, jobs=1: [])


def test_a_16_bit_c_run_records_and_replays(tmp_path: Path):
    experiment = tmp_path / "output_dtypes.yaml"
    experiment.write_text(EXPERIMENT)
    recorded = tuner.run(load_experiment(experiment), backend=ScriptedBackend(), strategy="grid", trials=8,
                         out=tmp_path / "recorded", quiet=True, report=False).df
    dtypes = {"bfloat16_out_bfloat16", "float16_out_float16", "float8_e4m3_out_bfloat16"}
    assert set(recorded["dtype"]) == dtypes and (recorded["status"] == "ok").all()
    assert set(recorded.loc[recorded["family"] == "baseline", "dtype"]) == dtypes  # the vendor GEMM of each
    assert not recorded["config_key"].str.contains("SPLIT_K=2").any()

    for space in study_spaces(load_experiment(experiment)):
        assert [c.param_dict["SPLIT_K"] for c in space.valid] == [1, 1]
        assert len(space.rejected) == 2
        assert all("SPLIT_K 1 and STREAM_K 0 where C is written in 16 bits" in why for why in space.rejected.values())

    replayed = tuner.run(load_experiment(experiment), backend="replay", replay=tmp_path / "recorded",
                         strategy="grid", trials=8, out=tmp_path / "replayed", quiet=True, report=False).df
    measured = recorded[recorded["status"] == "ok"].set_index("config_key")
    again = replayed.set_index("config_key").loc[measured.index]
    pd.testing.assert_frame_equal(again[COLUMNS], measured[COLUMNS], check_dtype=False)
