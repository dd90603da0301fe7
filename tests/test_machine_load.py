"""The load of the machine during a measurement: the readers of /proc and NVML stood in for by fixed counters, the
judgement and what the run does with it (ceilings cached with their load, flags, the baseline measured again)
tested for real. The measurements themselves are never stood in for: where one is made here, it is made."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import pandas as pd
import pytest

import tuner
from tests.conftest import ROOT
from tests.scripted_backend import ScriptedBackend
from tuner.config import Problem
from tuner.errors import TunerError
from tuner.measure.machine_load import (
    RESOLUTION_TICKS,
    Load,
    LoadMeter,
    NvmlProcesses,
    ProcCounters,
    cpu_contended,
    gpu_contended,
    gpu_others,
)
from tuner.measure.measurement import Measurement
from tuner.results import table as results
from tuner.tuning.progress import summary_table, summary_text

FERMI = ROOT / "experiments" / "fermi_like.yaml"


# --- judging --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("other", "window", "cpus", "threads", "loaded"), [
    (0, 100, 2, 2, False),            # idle
    (50, 100, 2, 1, False),           # others on the CPU the measurement leaves free
    (100, 100, 2, 1, False),          # a whole CPU of others beside a one-thread measurement
    (100 + 11, 100, 2, 1, True),      # and more than a tenth of the measuring CPU on top
    (9, 100, 2, 2, False),            # under a tenth of the measuring threads' time
    (25, 100, 2, 2, True),
    (160, 100, 2, 2, True),           # the 1.6 CPUs of others the first run met
    (RESOLUTION_TICKS, 10, 1, 1, False),  # within the counters' resolution
    (RESOLUTION_TICKS + 1, 10, 1, 1, True),
])
def test_cpu_contention(other, window, cpus, threads, loaded):
    assert cpu_contended(other, window, cpus, threads) is loaded


def test_gpu_others_are_all_but_the_runs_own_processes():
    seen = {10: 95.0, 11: 0.0, 12: None}
    assert gpu_others(seen, {10}) == {11: 0.0, 12: None}
    assert gpu_contended({11: 0.0}) is False
    assert gpu_contended({11: 40.0}) is True
    assert gpu_contended({12: None}) is True  # a context whose work NVML does not sample: assume the worst
    assert gpu_contended({}) is False


def test_in_another_pid_namespace_the_busiest_process_stands_for_the_runs_own():
    assert gpu_others({7001: 97.0}, {42}) == {}
    assert gpu_others({7001: 97.0, 7002: 30.0}, {42}) == {7002: 30.0}


def test_load_reads_back_from_its_dict_and_from_a_results_row():
    load = Load(0.5, 2, 2, 1.25, None, None, True)
    assert Load.from_dict(load.to_dict()) == load
    assert Load.from_dict(None) is None and Load.from_dict({"other": 1}) is None
    assert "1.2 of 2 CPUs" in load.describe()
    measurement = Measurement.from_dict({"status": "ok", "load": load.to_dict()})
    assert measurement.load == load
    assert Measurement.from_dict({"status": "ok"}).load is None  # recorded before loads were watched


# --- the /proc reader -----------------------------------------------------------------------------------------

def _proc(folder: Path, cpu_ticks: dict[int, int], processes: dict[int, tuple[int, int]]) -> None:
    """A /proc of ``cpu_ticks`` (cpu → busy ticks, as user time) and ``processes`` (pid → (ppid, ticks))."""
    folder.mkdir(exist_ok=True)
    lines = ["cpu  0 0 0 0 0 0 0 0 0 0"]
    lines += [f"cpu{cpu} {busy} 0 0 500 7 0 0 0 0 0" for cpu, busy in cpu_ticks.items()]
    (folder / "stat").write_text("\n".join(lines) + "\nintr 1 2 3\n")
    for pid, (ppid, ticks) in processes.items():
        (folder / str(pid)).mkdir(exist_ok=True)
        fields = ["S", str(ppid), *["0"] * 9, str(ticks), "0", "0", "0", *["0"] * 30]
        (folder / str(pid) / "stat").write_text(f"{pid} (name with ) in it) {' '.join(fields)}\n")


def test_the_proc_reader_counts_the_allowed_cpus_and_the_runs_process_tree(tmp_path):
    _proc(tmp_path, {0: 100, 1: 200, 2: 400}, {1: (0, 50), 10: (1, 5), 11: (10, 7), 12: (11, 3), 20: (1, 1000)})
    counters = ProcCounters(tmp_path)
    assert counters.busy_ticks({0, 1}) == 300  # idle and iowait are not busy; cpu2 is not this process's
    assert counters.tree_ticks(10) == 15  # 10 and its descendants 11 and 12, not its sibling 20


def test_a_window_counts_other_processes_time_only(tmp_path):
    clock = iter([0.0, 1.0])
    _proc(tmp_path, {0: 0, 1: 0}, {10: (1, 0), 11: (10, 0), 20: (1, 0)})
    meter = LoadMeter(threads=2, root_pid=10, counters=ProcCounters(tmp_path), clock=lambda: next(clock),
                      cpus={0, 1})
    meter.hz = 100
    window = meter.window()
    _proc(tmp_path, {0: 100, 1: 60}, {10: (1, 10), 11: (10, 90), 20: (1, 60)})  # 100 ticks ours, 60 another's
    load = window.close()
    assert load.other_cpus == pytest.approx(0.6) and load.cpus == 2 and load.threads == 2
    assert load.under_load is True


def test_a_window_without_proc_knows_nothing_and_flags_nothing(tmp_path):
    meter = LoadMeter(threads=1, counters=ProcCounters(tmp_path / "absent"))
    load = meter.window().close()
    assert load.other_cpus is None and load.cpus is None and load.under_load is False


def test_the_real_proc_is_read():
    load = LoadMeter(threads=1).window().close()
    assert load.other_cpus is not None and load.other_cpus >= 0 and load.cpus >= 1


# --- the NVML reader ------------------------------------------------------------------------------------------

class _Error(Exception):
    pass


class _NotFound(_Error):
    pass


class _NotSupported(_Error):
    pass


def _fake_nvml(monkeypatch, running: list[int], samples: list[tuple[int, int]] | type[Exception]):
    """A stand-in for pynvml: the processes holding a context and their utilisation samples (or the error NVML
    raises for them)."""
    module = types.ModuleType("pynvml")
    module.NVMLError = _Error
    module.NVMLError_NotFound = _NotFound

    def utilisation(handle, since):
        if isinstance(samples, type):
            raise samples()
        return [types.SimpleNamespace(pid=pid, smUtil=util) for pid, util in samples]

    module.nvmlDeviceGetComputeRunningProcesses = lambda handle: [types.SimpleNamespace(pid=p) for p in running]
    module.nvmlDeviceGetGraphicsRunningProcesses = lambda handle: []
    module.nvmlDeviceGetProcessUtilization = utilisation
    monkeypatch.setitem(sys.modules, "pynvml", module)


def test_nvml_samples_name_each_process_utilisation(monkeypatch):
    _fake_nvml(monkeypatch, [10, 20], [(20, 35), (20, 60), (10, 99)])
    assert NvmlProcesses(object()).processes(0) == {10: 99.0, 20: 60.0}


def test_no_sample_since_the_window_began_means_idle(monkeypatch):
    _fake_nvml(monkeypatch, [10, 20], _NotFound)
    assert NvmlProcesses(object()).processes(0) == {10: 0.0, 20: 0.0}


def test_without_per_process_samples_the_utilisation_is_unknown(monkeypatch):
    _fake_nvml(monkeypatch, [10, 20], _NotSupported)
    assert NvmlProcesses(object()).processes(0) == {10: None, 20: None}


def test_a_gpu_window_flags_another_process_on_the_gpu(monkeypatch):
    _fake_nvml(monkeypatch, [10, 20], [(10, 90), (20, 45)])
    meter = LoadMeter(gpu=NvmlProcesses(object()), counters=None, own_gpu_pids={10})
    load = meter.window().close()
    assert (load.other_gpu_processes, load.other_gpu_percent, load.under_load) == (1, 45.0, True)
    assert load.other_cpus is None  # a GPU measurement does not read every process's CPU time
    _fake_nvml(monkeypatch, [10], [(10, 90)])
    assert LoadMeter(gpu=NvmlProcesses(object()), counters=None, own_gpu_pids={10}).window().close().under_load \
        is False


# --- the CPU's ceilings ---------------------------------------------------------------------------------------

class _Busy(ProcCounters):
    """CPU counters in which other processes take ``share`` of every CPU all the time."""

    def __init__(self, share: float):
        super().__init__()
        self.share = share
        self.ticks = 0

    def busy_ticks(self, cpus: set[int]) -> int:
        self.ticks += int(1000 * self.share * len(cpus))
        return self.ticks

    def tree_ticks(self, root_pid: int) -> int:
        return 0


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _ceilings(share: float, capsys) -> tuple[dict, str]:
    from tuner.backends.cpu.summary import summary
    from tuner.settings import MeasureSettings

    quick = MeasureSettings(cold_caches=False, warmup=1, min_samples=3, max_samples=3, max_time_s=0.05)
    meter = LoadMeter(counters=_Busy(share), clock=iter(range(10_000)).__next__)
    meter.hz = 1000
    found = summary(remeasure=True, settings=quick, array_bytes=2**20, load=meter)
    return found, capsys.readouterr().err


def test_ceilings_measured_under_load_are_cached_with_their_load_and_say_what_they_are_worth(cache, capsys):
    found, err = _ceilings(1.0, capsys)
    assert found["ceilings"]["load"]["under_load"] is True
    assert "were measured while other processes kept" in err and "read low" in err and "--remeasure-ceilings" in err
    assert "not cached" not in err
    (cached,) = cache.glob("cpu-*.json")
    assert json.loads(cached.read_text())["ceilings"]["load"]["under_load"] is True


def test_ceilings_measured_on_an_idle_machine_are_cached_with_their_load(cache, capsys):
    found, err = _ceilings(0.0, capsys)
    assert found["ceilings"]["load"]["under_load"] is False and "warning" not in err
    (cached,) = cache.glob("cpu-*.json")
    assert json.loads(cached.read_text())["ceilings"]["load"]["loaded"] == []


@pytest.mark.slow
def test_a_cache_written_before_loads_were_watched_is_measured_again(cache, capsys, monkeypatch):
    from tuner.backends.cpu import ceilings, summary

    _ceilings(0.0, capsys)
    (path,) = cache.glob("cpu-*.json")
    old = json.loads(path.read_text())
    del old["ceilings"]["load"]
    path.write_text(json.dumps(old))
    measured = []
    real = ceilings.measure_ceilings
    monkeypatch.setattr(ceilings, "measure_ceilings", lambda *a, **k: measured.append(1) or real(*a, **k))
    found = summary.summary(array_bytes=2**20, load=LoadMeter(counters=_Busy(0.0)),
                             settings=tuner.settings.MeasureSettings(cold_caches=False, warmup=1, min_samples=3,
                                                                     max_samples=3, max_time_s=0.05))
    assert measured == [1] and "load" in found["ceilings"]


# --- the summary and the baseline -------------------------------------------------------------------------------

def _flagged_table() -> tuple[pd.DataFrame, dict]:
    df, metadata = results.load(ROOT / "experiments" / "data" / "fermi_like_h100")
    env_id = str(df["metadata_id"].dropna().iloc[0])
    metadata["environments"][env_id]["ceilings"]["load"] = {"under_load": True, "worst": "other processes …"}
    df["under_load"] = pd.array([False] * len(df), dtype="boolean")
    best = results.best_rows(df)
    first = df.index[df["config_key"] == best["config_key"].iloc[0]]
    df.loc[first, "under_load"] = True
    df.loc[first, "pct_flops_ceiling"] = 213.0
    return df, metadata


def test_the_summary_flags_what_was_measured_under_load_or_above_a_ceiling():
    df, metadata = _flagged_table()
    text = summary_text(summary_table(df, metadata=metadata), 120, "cuBLAS", "GPU")
    assert "213.0!?" in text
    assert "* measured while other processes used the GPU" in text
    assert "! above the measured arithmetic peak" in text and "python -m tuner device --remeasure" in text
    assert "? of ceilings measured under load" in text
    df, metadata = results.load(ROOT / "experiments" / "data" / "fermi_like_h100")
    plain = summary_text(summary_table(df, metadata=metadata), 120)
    assert not any(mark in plain for mark in ("measured while", "above the measured"))


def test_the_report_flags_the_same(tmp_path):
    import shutil

    from tuner.report.run_folder import load_run
    from tuner.report.tables import best_per_problem

    df, metadata = _flagged_table()
    folder = tmp_path / "run"
    shutil.copytree(ROOT / "experiments" / "data" / "fermi_like_h100", folder)
    results.save(df, metadata, folder)
    table = best_per_problem(load_run(folder))
    cells = [cell for row in table.rows for cell in row]
    assert "213.0 %!?" in cells and any(cell.endswith("GFLOP/s*") for cell in cells)
    assert "! above the measured compute ceiling" in table.caption and "* measured while" in table.caption


class _LoadShiftingBackend(ScriptedBackend):
    """The script's answers, its baseline first measured under load and then not (as when a neighbour stops)."""

    def baseline(self, problem: Problem, dtype: str) -> Measurement | None:
        measured = super().baseline(problem, dtype)
        assert measured is not None
        loaded = sum(1 for label, _ in self.baselines if label == problem.label) == 1
        return Measurement(measured.status, "scripted BLAS", measured.timing, measured.error,
                           load=Load(0.1, 2, 2, 1.5 if loaded else 0.0, None, None, loaded))

    def evaluate(self, config):
        measured = super().evaluate(config)
        return Measurement(measured.status, measured.reason, measured.timing, measured.error, measured.compile_time_s,
                           measured.resources, load=Load(0.1, 2, 2, 0.0, None, None, False))


def test_the_baseline_is_measured_again_when_the_load_changed(tmp_path):
    backend = _LoadShiftingBackend()
    result = tuner.run(tuner.load_experiment(FERMI), backend=backend, strategy="grid", trials=4, out=tmp_path / "out",
                       quiet=True, report=False)
    problems = [p.label for p in tuner.load_experiment(FERMI).problems]
    assert [label for label, _ in backend.baselines] == [p for p in problems for _ in range(2)]
    baselines = result.df[result.df["family"] == results.BASELINE_FAMILY]
    assert len(baselines) == len(problems) and not baselines["under_load"].any()
    assert set(baselines["library"]) == {"scripted BLAS"}
    import optuna

    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(tmp_path / "out" /
                                                                                            "study.log")))
    study = optuna.load_study(study_name=f"fermi_like/{problems[0]}/float32", storage=storage)
    (replaced,) = study.user_attrs["replaced baselines"]
    assert replaced["measurement"]["load"]["under_load"] is True  # kept, not lost


def test_the_baseline_is_kept_where_the_load_did_not_change(tmp_path):
    backend = ScriptedBackend()
    tuner.run(tuner.load_experiment(FERMI), backend=backend, strategy="grid", trials=4, out=tmp_path / "out",
              quiet=True, report=False)
    assert len(backend.baselines) == len(tuner.load_experiment(FERMI).problems)


# --- labels of CPU runs, and tables written before -------------------------------------------------------------

def test_cpu_rows_name_their_device_but_no_gpu():
    from tuner.measure.measurement import Status, Timing

    timing = Timing(1.0, 1.0, 1.0, 0.0, (1.0,))
    record = results.Record("e", "s", "grid", 0, results.baseline_config(Problem(8, 8, 8), "float64"),
                            Measurement(Status.OK, "OpenBLAS through numpy", timing), "m", 0.0, "t")
    cpu = {"backend": "cpu", "device": {"name": "AMD EPYC"}, "versions": {"blas": "OpenBLAS"}}
    analytics = results.analytics_of(record.config)
    row = results.row(record, analytics, cpu)
    assert (row["device_name"], row["gpu_name"], row["family"], row["library"]) == (
        "AMD EPYC", None, "baseline", "OpenBLAS through numpy")
    gpu = {"backend": "pycuda", "device": {"name": "NVIDIA H100", "uuid": "GPU-1"}}
    on_gpu = results.row(record, analytics, gpu)
    assert (on_gpu["gpu_name"], on_gpu["gpu_uuid"]) == ("NVIDIA H100", "GPU-1")


@pytest.mark.parametrize(("column", "value", "change"), [
    ("family", "cublas", "its baseline rows' family 'cublas' is called 'baseline' now"),
    ("sampler", "tpe", "its column 'sampler' is called 'strategy' now"),
])
def test_a_table_written_by_an_earlier_version_is_refused_naming_the_change(tmp_path, column, value, change):
    df = results.load_table(ROOT / "experiments" / "data" / "h100_sgemm_h100")
    results.save(df.assign(**{column: value}), {}, tmp_path)
    before = (tmp_path / results.RESULTS_PARQUET).read_bytes()
    expected = f"{tmp_path / results.RESULTS_PARQUET} was written by an earlier version of the tuner: {change}; "
    with pytest.raises(TunerError, match="^" + re.escape(expected + "it is left as it was")):
        results.load_table(tmp_path)
    assert (tmp_path / results.RESULTS_PARQUET).read_bytes() == before


@pytest.mark.parametrize("recording", ["h100_sgemm_h100", "h100_regblock_exhaustive"])
def test_committed_recordings_hold_baseline_rows_naming_their_library(recording):
    df = results.load_table(ROOT / "experiments" / "data" / recording)
    base = df["family"] == results.BASELINE_FAMILY
    assert base.any() and df.loc[base, "config_key"].str.contains("/baseline/", regex=False).all()
    ok = base & (df["status"] == "ok")
    assert ok.any() and df.loc[ok, "library"].str.startswith("cuBLAS").all()
    assert df.loc[~base, "library"].isna().all()
