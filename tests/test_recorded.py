"""Recorded spaces: Kernel Tuner cache files (whole, gzipped, saved mid-run) and T4 results files."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from tuner.errors import TunerError
from tuner.recorded import load_recorded

HEADER = {
    "device_name": "Test GPU", "kernel_name": "k", "problem_size": [64, 64],
    "tune_params_keys": ["BX", "BY", "VEC"],
    "tune_params": {"BX": [32, 16, 64], "BY": [1, 2], "VEC": ["f", "v"]},
    "objective": "time",
}
RECORDS = {
    "32,1,f": {"time": 2.0, "times": [1.9, 2.1], "compile_time": 100.0, "verification_time": 10.0,
               "benchmark_time": 50.0, "framework_time": 5.0, "strategy_time": 7.0},
    "16,2,v": {"time": 1.5, "times": [1.5, 1.4, 1.6]},
    "64,1,v": {"time": "CompilationFailedConfig", "compile_time": 300.0},
    "64,2,f": {"time": "RuntimeFailedConfig", "compile_time": 80.0, "benchmark_time": 20.0},
    "16,1,f": {"time": "InvalidConfig"},
    "32,2,v": {"time": 1e20},
}


def cache_text(records: dict[str, dict] = RECORDS, closed: bool = True) -> str:
    """A cache file written the way Kernel Tuner writes one: the header, then one line per record."""
    names = HEADER["tune_params_keys"]
    text = json.dumps(HEADER)[:-1] + ', "cache": {'
    for key, record in records.items():
        params = dict(zip(names, [int(v) if v.isdigit() else v for v in key.split(",")], strict=True))
        text += "\n" + json.dumps({key: {**params, **record}})[1:-1] + ","
    return text[:-1] + "}\n}" if closed else text


@pytest.fixture
def cache_file(tmp_path) -> Path:
    path = tmp_path / "cache.json"
    path.write_text(cache_text())
    return path


def test_a_cache_file_gives_parameters_outcomes_times_and_costs(cache_file):
    space = load_recorded(cache_file)
    assert space.names == ("BX", "BY", "VEC")
    assert space.values == ((32, 16, 64), (1, 2), ("f", "v"))
    assert (space.device, space.kernel, space.problem_size) == ("Test GPU", "k", [64, 64])
    assert len(space) == 6 and space.product_size == 12
    assert list(space.status) == ["ok", "ok", "compile_error", "crashed", "invalid", "compile_error"]
    assert space.reason[:5] == ("", "", "CompilationFailedConfig", "RuntimeFailedConfig", "InvalidConfig")
    assert space.time_ms[:2].tolist() == [2.0, 1.5] and np.isnan(space.time_ms[2:]).all()
    assert space.runs_ms[1].tolist() == [1.5, 1.4, 1.6]
    assert np.isnan(space.runs_ms[0, 2])
    # compile + verification + framework + the runs; never the benchmark time (the runs stand for it) nor the
    # strategy's
    assert space.cost_s.tolist() == pytest.approx([0.119, 0.0045, 0.3, 0.08, 0.0, 0.0])
    assert space.optimum_row == 1 and space.optimum_ms == 1.5
    assert space.params_of(1) == {"BX": 16, "BY": 2, "VEC": "v"}
    assert space.key_string(1) == "16,2,v"
    assert space.status_counts() == {"compile_error": 2, "crashed": 1, "invalid": 1, "ok": 2}


def test_keys_pack_the_value_indices_in_product_order(cache_file):
    space = load_recorded(cache_file)
    assert space.indices[1].tolist() == [1, 1, 1]
    assert space.keys[1] == 1 * 4 + 1 * 2 + 1
    assert np.array_equal(space.decode(space.keys), space.indices)
    assert space.rows_of(np.arange(12)).tolist() == [0, -1, -1, 5, 4, -1, -1, 1, -1, 2, 3, -1]
    for row in range(6):
        assert space.row_of(space.params_of(row)) == row
        assert space.row_of_key[int(space.keys[row])] == row
    assert space.row_of({"BX": 16, "BY": 1, "VEC": "v"}) is None
    assert space.row_of({"BX": 8, "BY": 1, "VEC": "v"}) is None


def test_a_gzipped_cache_file_reads_the_same(cache_file, tmp_path):
    zipped = tmp_path / "cache.json.gz"
    zipped.write_bytes(gzip.compress(cache_file.read_bytes()))
    assert np.array_equal(load_recorded(zipped).indices, load_recorded(cache_file).indices)


@pytest.mark.parametrize("cut", ["", ",", ",\n", "cut-mid-record"])
def test_a_cache_file_saved_mid_run_is_read_up_to_its_last_complete_record(tmp_path, cut):
    text = cache_text(closed=False)  # ends in "...},"
    if cut == "cut-mid-record":
        text += '\n"64,2,v": {"BX": 64, "BY": 2, "VEC": "v", "time": 3.'
    else:
        text = text[:-1] + cut
    path = tmp_path / "open.json"
    path.write_text(text)
    space = load_recorded(path)
    assert len(space) == len(RECORDS)
    assert [space.key_string(r) for r in range(len(space))] == list(RECORDS)


def test_a_gzipped_cache_cut_off_mid_stream_keeps_what_it_holds(tmp_path):
    data = gzip.compress(cache_text(closed=False).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) - 30])
    space = load_recorded(path)
    assert 1 <= len(space) <= len(RECORDS)


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["cache"]["32,1,f"].update(time="Boom"), "field 'cache.32,1,f': field 'time' holds 'Boom'"),
    (lambda d: d["cache"]["32,1,f"].pop("time"), "field 'cache.32,1,f' has no 'time'"),
    (lambda d: d["cache"]["32,1,f"].update(BX=8), "parameter 'BX' = 8 is not among the values"),
    (lambda d: d["cache"]["32,1,f"].pop("BY"), "field 'cache.32,1,f' lacks the parameter 'BY'"),
    (lambda d: d["tune_params"].pop("BY"), "field 'tune_params.BY' must list the values"),
    (lambda d: d.update(tune_params_keys="BX"), "field 'tune_params_keys' must list"),
])
def test_a_broken_cache_file_is_one_error_naming_file_and_field(tmp_path, change, message):
    document = json.loads(cache_text())
    change(document)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(document))
    with pytest.raises(TunerError, match="broken.json") as error:
        load_recorded(path)
    assert message in str(error.value)


def test_files_that_are_no_recording_are_told_apart(tmp_path):
    with pytest.raises(TunerError, match="no such file|cannot be read"):
        load_recorded(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text('{"results": 3}')
    with pytest.raises(TunerError, match="neither a Kernel Tuner cache file"):
        load_recorded(tmp_path / "other.json")
    (tmp_path / "bad.json").write_text('{"a": ')
    with pytest.raises(TunerError, match="not valid JSON"):
        load_recorded(tmp_path / "bad.json")


def t4_result(config: dict, invalidity: str = "correct", time: float | str | None = None, unit: str = "",
              times: dict | None = None, correctness: int = 1) -> dict:
    return {"timestamp": "", "configuration": config, "times": times or {}, "invalidity": invalidity,
            "correctness": correctness, "objectives": ["time"],
            "measurements": [{"name": "time", "value": time, "unit": unit}]}


def test_a_t4_file_gives_parameters_outcomes_times_and_costs(tmp_path):
    results = [
        t4_result({"BX": 64, "MODE": "b"}, time=3.0,
                  times={"compilation": 100.0, "framework": 5.0, "search_algorithm": 9.0, "validation": 10.0,
                         "runtimes": [2.0, 4.0]}),
        t4_result({"BX": 16, "MODE": "a"}, time=0.002, unit="s", times={"benchmark": 40.0}),
        t4_result({"BX": 32, "MODE": "b"}, "compile", "CompilationFailedConfig", times={"compilation": 300.0}),
        t4_result({"BX": 32, "MODE": "a"}, "runtime", "RuntimeFailedConfig"),
        t4_result({"BX": 16, "MODE": "b"}, "constraints", "InvalidConfig"),
        t4_result({"BX": 64, "MODE": "a"}, "correct", 1.0, correctness=0),
        t4_result({"BX": 128, "MODE": "a"}, "timeout", None),
        t4_result({"BX": 64, "MODE": "b"}, time=9.0),  # listed twice: the first evaluation counts
    ]
    path = tmp_path / "run_T4.json"
    path.write_text(json.dumps({"schema_version": "1.0.0", "metadata": {"timeunit": "miliseconds"},
                                "results": results}))
    space = load_recorded(path)
    assert space.names == ("BX", "MODE")
    assert space.values == ((16, 32, 64, 128), ("b", "a"))
    assert list(space.status) == ["ok", "ok", "compile_error", "crashed", "invalid", "wrong", "crashed"]
    assert space.time_ms[:2].tolist() == [3.0, 2.0]
    assert np.isnan(space.time_ms[2:]).all()
    # compilation + validation + framework + the runtimes; neither benchmark nor search_algorithm
    assert space.cost_s[:3].tolist() == pytest.approx([0.121, 0.0, 0.3])
    assert space.runs_ms[0].tolist() == [2.0, 4.0]
    assert space.optimum_ms == 2.0 and space.params_of(space.optimum_row) == {"BX": 16, "MODE": "a"}
    assert space.product_size == 8


def test_t4_times_follow_the_files_time_unit(tmp_path):
    results = [t4_result({"X": 1}, time=0.5, times={"compilation": 0.25, "runtimes": [0.5]})]
    path = tmp_path / "seconds.json"
    path.write_text(json.dumps({"metadata": {"timeunit": "seconds"}, "results": results}))
    space = load_recorded(path)
    assert space.time_ms[0] == 500.0
    assert space.cost_s[0] == pytest.approx(0.75)


@pytest.mark.parametrize(("change", "message"), [
    (lambda r: r[1].update(invalidity="odd"), "field 'results[1]'.invalidity is 'odd'"),
    (lambda r: r[1].update(configuration={"X": 2, "Y": 1}), "field 'results[1]'.configuration must give"),
    (lambda r: r[0].update(measurements=[]), "field 'results[0]'.measurements has no 'time'"),
])
def test_a_broken_t4_file_is_one_error_naming_file_and_field(tmp_path, change, message):
    results = [t4_result({"X": 1}, time=1.0), t4_result({"X": 2}, time=2.0)]
    change(results)
    path = tmp_path / "broken_T4.json"
    path.write_text(json.dumps({"results": results}))
    with pytest.raises(TunerError, match="broken_T4.json") as error:
        load_recorded(path)
    assert message in str(error.value)


@pytest.mark.parametrize("name", ["gemm_A100", "gemm_RTX_2080_Ti"])
def test_the_shipped_gemm_recordings(recorded_gemm, name):
    space = recorded_gemm[name]
    assert len(space) == 17_956
    assert space.product_size == 82_944
    assert space.names[:3] == ("MWG", "NWG", "KWG") and len(space.names) == 15
    assert space.status_counts() == {"ok": 17_956}
    assert space.runs_ms.shape == (17_956, 32)
    assert len(np.unique(space.keys)) == 17_956
    assert (space.cost_s > 0).all()
    optimum = {"gemm_A100": (8.518112, "64,128,32,16,8,16,16,2,4,8,0,0,1,1,32"),
               "gemm_RTX_2080_Ti": (11.482779, "128,128,32,16,8,16,32,2,8,4,0,0,0,1,32")}[name]
    assert space.optimum_ms == optimum[0]
    assert space.key_string(space.optimum_row) == optimum[1]


def test_the_a100_recordings_time_is_the_mean_of_its_runs_and_its_cost_their_sum(recorded_gemm):
    space = recorded_gemm["gemm_A100"]
    assert np.allclose(space.runs_ms.mean(axis=1), space.time_ms)
    assert np.allclose(space.runs_ms.sum(axis=1) / 1000, space.cost_s)
    assert math.isclose(space.cost_s.sum() / 3600, 3.12, abs_tol=0.01)
