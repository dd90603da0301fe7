"""Counters in a run: read after the search, joined onto the results, replayed from a recording, added to a
finished folder by ``tuner profile``; and every way they cannot be read is one line, the run unaffected."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pandas as pd
import pytest

import tuner
from tests.conftest import run_cli
from tests.counted_backend import SEED_CONFIGS, SYNTHETIC_PAGE, CountedBackend, PageCounters, seed_experiment
from tests.scripted_backend import ENVIRONMENT
from tuner.counters import store
from tuner.counters.metrics import L1_BYTES, REQUESTED_BYTES
from tuner.counters.ncu import NCU_ENV
from tuner.counters.sources import NcuCounters
from tuner.errors import TunerError
from tuner.experiment.schema import parse_experiment
from tuner.results.schema import BASELINE_FAMILY
from tuner.settings import CompileSettings

HERE = Path(__file__).parent


def _counted_run(out: Path, counters: str = "all", backend: CountedBackend | None = None) -> tuner.RunResult:
    return tuner.run(seed_experiment(counters), backend=backend or CountedBackend(), out=out, quiet=True,
                     report=False)


@pytest.fixture(scope="module")
def counted_folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("counted")
    _counted_run(out)
    return out


def test_a_run_reads_the_counters_after_its_search_and_joins_them(counted_folder):
    df = pd.read_parquet(counted_folder / "results.parquet")
    kernels = df[df["family"] != BASELINE_FAMILY].set_index("config_key")
    naive = kernels.loc[SEED_CONFIGS[0].key]
    assert naive["l1_bytes"] == pytest.approx(4.299162e9) and naive["flops_counted"] == 2 * 1024**3
    assert naive["intensity_l1"] == pytest.approx(2 * 1024**3 / 4.299162e9)
    assert naive["requested_vs_model"] == pytest.approx(1.0, rel=1e-3)
    assert kernels["l2_bytes"].notna().all()
    assert df[df["family"] == BASELINE_FAMILY]["l1_bytes"].isna().all()
    assert len(store.load(counted_folder)) == 3
    metadata = json.loads((counted_folder / "metadata.json").read_text())
    assert metadata["counters"]["clock_control"] == ["none"] and metadata["counters"]["cache_control"] == ["all"]
    assert metadata["counters"]["configurations"] == 3
    note = metadata["runs"][-1]["counters"]
    assert (note["asked"], note["counted"], note["setting"]) == (3, 3, "all")
    assert "clock control none" in note["text"]


def test_the_summary_says_what_was_counted(tmp_path, capsys):
    tuner.run(seed_experiment("best"), backend=CountedBackend(), out=tmp_path, quiet=True, summary=True,
              report=False)
    out = capsys.readouterr().out
    assert "counters: 3 configurations counted (the fastest 3 of each study) by Nsight Compute 2025.3.0.0" in out


def test_a_run_again_counts_nothing_twice_and_a_rebuilt_table_keeps_the_counters(counted_folder):
    source = PageCounters()
    again = _counted_run(counted_folder, backend=CountedBackend(source))
    assert source.asked == []
    assert again.df.loc[again.df["family"] != BASELINE_FAMILY, "l1_bytes"].notna().all()
    note = again.metadata["runs"][-1]["counters"]
    assert (note["counted"], note["before"]) == (0, 3)


def test_none_reads_no_counters(tmp_path):
    source = PageCounters()
    result = _counted_run(tmp_path, "none", CountedBackend(source))
    assert source.asked == [] and not (tmp_path / store.COUNTERS_PARQUET).exists()
    assert "l1_bytes" not in result.df.columns
    assert result.metadata["runs"][-1]["counters"]["setting"] == "none"


def test_a_kernel_wrong_under_the_profiler_is_said_and_the_others_kept(tmp_path):
    result = _counted_run(tmp_path, backend=CountedBackend(PageCounters(statuses=("ok", "wrong", "ok"))))
    note = result.metadata["runs"][-1]["counters"]
    assert (note["asked"], note["counted"]) == (3, 2)
    assert note["text"].startswith("2 of 3 configurations counted") and "wrong under the profiler" in note["text"]


class _Failing(PageCounters):
    def count(self, configs, say=None, detail=True):
        raise RuntimeError("the profiler's\nreport is damaged")


def test_a_source_that_fails_costs_no_result(tmp_path):
    result = _counted_run(tmp_path, backend=CountedBackend(_Failing()))
    assert (result.df["status"] == "ok").all() and len(result.df) == 4
    assert result.metadata["runs"][-1]["counters"]["text"] == \
        "none read: RuntimeError: the profiler's report is damaged"


def test_a_replay_of_a_recording_with_counters_replays_them(counted_folder, tmp_path):
    result = tuner.run(seed_experiment("all"), backend="replay", replay=counted_folder, out=tmp_path, quiet=True,
                       report=False)
    recorded = store.load(counted_folder).set_index("config_key")
    replayed = store.load(tmp_path).set_index("config_key")
    assert sorted(replayed.index) == sorted(recorded.index)
    assert replayed.loc[SEED_CONFIGS[1].key, "raw_metrics"] == recorded.loc[SEED_CONFIGS[1].key, "raw_metrics"]
    assert result.df.loc[result.df["family"] != BASELINE_FAMILY, "intensity_l2"].notna().all()
    assert "replayed from the recording's counters" in result.metadata["runs"][-1]["counters"]["text"]


@pytest.mark.slow
def test_a_replay_of_a_recording_without_counters_says_so_in_one_line(tmp_path, capsys):
    recording = HERE.parent / "experiments/data/h100_sgemm_h100"
    result = tuner.run(tuner.load_experiment(HERE.parent / "experiments/h100_sgemm.yaml"), backend="replay",
                       replay=recording, strategy="random", trials=4, out=tmp_path, quiet=True, summary=True,
                       report=True)
    out = " ".join(capsys.readouterr().out.split())  # the summary wraps to the terminal's width
    assert f"counters: none read: the recording {recording} holds no counters (it was recorded without them) " \
           f"results: {tmp_path}" in out
    assert (result.df["status"] == "ok").sum() >= 4
    page = (tmp_path / "report.html").read_text()
    assert "holds no counters (it was recorded without them)" in page
    assert not list(tmp_path.glob("roofline_hierarchical*.png"))


def test_the_counters_setting_is_checked(tmp_path):
    text = "name: x\nproblems: [{M: 64, N: 64, K: 64}]\nkernels: [{template: naive}]\nmeasure: {counters: most}\n"
    with pytest.raises(TunerError, match="field 'measure.counters': expected one of none, best, all, found str"):
        parse_experiment(text, "x.yaml")
    assert parse_experiment(text.replace("most", "none"), "x.yaml").measure.counters == "none"


@pytest.mark.slow
def test_the_command_line_takes_the_setting(tmp_path):
    done = run_cli("run", "experiments/fermi_like.yaml", "--backend", "replay", "--trials", "2", "--counters",
                   "none", "--no-report", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "counters:" not in done.stdout


# --- Nsight Compute, stood in for --------------------------------------------------------------------------


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    """ncu on PATH is the stand-in of tests/fake_ncu.py; returns a function setting its mode."""
    script = tmp_path / "ncu"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} {HERE / 'fake_ncu.py'} \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv(NCU_ENV, str(script))
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKE_NCU_PAGE", str(SYNTHETIC_PAGE))
    monkeypatch.setenv("FAKE_NCU_DEVICE", ENVIRONMENT["device"]["name"])
    monkeypatch.setenv("PYTHONPATH", str(HERE.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return lambda mode: monkeypatch.setenv("FAKE_NCU_MODE", mode)


def _ncu_source() -> NcuCounters:
    return NcuCounters(CompileSettings(), device_name="NVIDIA H100 80GB HBM3")


def test_without_ncu_the_reason_is_said(monkeypatch, tmp_path):
    monkeypatch.delenv(NCU_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr("tuner.counters.ncu.TOOLKIT_BIN", tmp_path / "nowhere")
    (reason,) = _ncu_source().count(SEED_CONFIGS).reasons
    assert reason.startswith("Nsight Compute's ncu is not installed here")


def test_without_permission_the_reason_is_said(fake_ncu):
    fake_ncu("denied")
    counted = _ncu_source().count(SEED_CONFIGS)
    assert counted.rows == []
    (reason,) = counted.reasons
    assert reason.startswith("no permission to read the GPU's performance counters (ERR_NVGPUCTRPERM)")


def test_a_gpu_without_an_essential_metric_is_said(fake_ncu):
    fake_ncu("lacks-l1")
    (reason,) = _ncu_source().count(SEED_CONFIGS).reasons
    assert "the GPU lacks the metric(s) l1tex__t_bytes.sum" in reason


@pytest.mark.parametrize("mode", ["ok", "retry"])
@pytest.mark.slow
def test_a_session_is_read_back_into_rows(fake_ncu, nvcc, mode, tmp_path):
    """The whole parent side: compile, job, session (a metric ncu names as missing is left out and the session run
    again), manifest, raw page, rows."""
    fake_ncu(mode)  # retry: the query gives no list, so the metrics go unchecked and the session names one
    counted = NcuCounters(CompileSettings(), device_name=f"unlisted {mode}").count(list(reversed(SEED_CONFIGS)))
    assert counted.reasons == []
    assert [r["config_key"] for r in counted.rows] == [c.key for c in SEED_CONFIGS]  # launched in problem order
    assert {r["replay_passes"] for r in counted.rows} == {2}
    assert counted.rows[0]["gpu_name"] == ENVIRONMENT["device"]["name"]
    assert "Nsight Compute 2025.3.0.0, clock control none" in counted.how


@pytest.mark.slow
def test_counting_every_configuration_leaves_out_the_instrumented_metrics(fake_ncu, nvcc, tmp_path, monkeypatch):
    """``all`` counts many configurations: the instrumented metrics, whose cost grows with the kernel's
    instructions, are not asked for, and the note says so; ``best`` asks for every metric."""
    fake_ncu("ok")
    asked = tmp_path / "asked"
    monkeypatch.setenv("FAKE_NCU_METRICS", str(asked))
    many = _ncu_source().count(SEED_CONFIGS, detail=False)
    assert REQUESTED_BYTES not in asked.read_text().split("\n")
    assert L1_BYTES in asked.read_text().split("\n")
    assert f"the instrumented metrics ({REQUESTED_BYTES} and the FLOP instructions" in many.how
    assert {r["metrics_missing"] for r in many.rows} == {None}
    few = _ncu_source().count(SEED_CONFIGS)
    assert REQUESTED_BYTES in asked.read_text().split("\n")
    assert "not asked for" not in few.how


@pytest.mark.slow
def test_profile_adds_counters_to_a_finished_folder(fake_ncu, nvcc, tmp_path, capsys):
    fake_ncu("ok")
    tuner.run(seed_experiment("none"), backend=CountedBackend(), out=tmp_path, quiet=True, report=False)
    from tuner.tuning.profile_command import profile_folder

    note = profile_folder(tmp_path, "all", report=True, quiet=True)
    assert (note.asked, note.counted) == (3, 3)
    df = pd.read_parquet(tmp_path / "results.parquet")
    assert df.loc[df["family"] != BASELINE_FAMILY, "l1_bytes"].notna().all()
    assert json.loads((tmp_path / "metadata.json").read_text())["counters"]["configurations"] == 3
    assert (tmp_path / "roofline_hierarchical.png").is_file()
    assert profile_folder(tmp_path, "all", report=False, quiet=True).before == 3


@pytest.mark.slow
def test_profile_explains_what_it_cannot_do(fake_ncu, tmp_path):
    done = run_cli("profile", str(tmp_path))
    assert done.returncode == 2 and "no results.parquet here" in done.stderr
    tuner.run(seed_experiment("none"), backend=CountedBackend(), out=tmp_path, quiet=True, report=False)
    done = run_cli("profile", str(tmp_path), "--config", "no/such/config")
    assert done.returncode == 2 and "'no/such/config'" in done.stderr and "Traceback" not in done.stderr
    fake_ncu("denied")
    done = run_cli("profile", str(tmp_path), "--no-report")
    assert done.returncode == 2 and "ERR_NVGPUCTRPERM" in done.stderr and "Traceback" not in done.stderr
