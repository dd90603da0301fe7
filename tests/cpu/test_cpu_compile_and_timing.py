"""The C compiler's cache, the timing method on real calls and the ceilings, with the real compiler."""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path

import pytest

from tests.cpu.conftest import QUICK_CEILINGS
from tuner.backends.cpu.summary import format_summary, summary
from tuner.backends.cpu.timing import CpuTimer
from tuner.compile.cc import cache_dir, compile_source
from tuner.measure.method import StoppingRule, relative_noise
from tuner.settings import MeasureSettings

SOURCE = """
__attribute__((visibility("default")))
double dot(const double* a, const double* b, long n)
{
    double sum = 0;
    for (long i = 0; i < n; ++i)
        sum += a[i] * b[i];
    return sum;
}
"""


@pytest.fixture
def own_cache(tmp_path, monkeypatch, cc):
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_a_source_is_compiled_once_then_found_in_the_cache(own_cache):
    first = compile_source(SOURCE)
    assert first.ok and not first.cached and first.seconds > 0 and first.path and first.path.is_file()
    assert first.path.is_relative_to(cache_dir()) and first.resources.code_bytes
    again = compile_source(SOURCE)
    assert again.ok and again.cached and again.compile_time_s == 0.0 and again.path == first.path
    assert again.seconds == first.seconds and again.resources == first.resources
    other = compile_source(SOURCE.replace("sum = 0", "sum = 1"))
    assert other.path != first.path
    assert not [name for name in os.listdir(first.path.parent) if name.startswith(".")]  # no leftovers
    library = ctypes.CDLL(str(first.path))
    library.dot.restype = ctypes.c_double
    values = (ctypes.c_double * 3)(1.0, 2.0, 3.0)
    assert library.dot(values, values, ctypes.c_long(3)) == 14.0


def test_a_compile_error_is_an_outcome_with_the_compilers_words(own_cache):
    result = compile_source("int f(void) { return undeclared; }")
    assert not result.ok and result.path is None and result.binary is None
    assert "undeclared" in result.log and "kernel.c" in result.log
    assert not list(own_cache.rglob("*.so"))


def test_the_stopping_rule_decides_on_real_timings(cpu_cache):
    library = ctypes.CDLL(str(compile_source(SOURCE).path))
    library.dot.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
    library.dot.restype = ctypes.c_double
    data = (ctypes.c_double * 100_000)()
    timer = CpuTimer()

    def run() -> None:
        library.dot(data, data, len(data))

    loose = MeasureSettings(warmup=1, min_samples=4, max_samples=50, max_time_s=5.0, target_noise=0.5)
    timing = timer.time(run, loose)
    assert 4 <= timing.count <= 50
    assert relative_noise(timing.samples_ms) <= 0.5 or timing.count == 50  # stopped for the noise it reached
    strict = MeasureSettings(cold_caches=False, warmup=0, min_samples=3, max_samples=7, max_time_s=5.0,
                             target_noise=1e-12)
    timing = timer.time(run, strict)
    rule = StoppingRule.from_settings(strict)
    assert rule.stop_reason(timing.samples_ms, 0.0) in ("max_samples", "noise")
    assert timing.min_ms <= timing.median_ms and all(sample > 0 for sample in timing.samples_ms)


def test_the_ceilings_are_measured_cached_and_printed(quick_ceilings):
    by_threads = quick_ceilings["by_threads"]
    assert "1" in by_threads
    for ceilings in by_threads.values():
        assert set(ceilings) == {"float32_gflops", "float64_gflops", "bandwidth_gbs", "triad_gbs"}
        assert all(value > 0 for value in ceilings.values())
    details = quick_ceilings["ceilings"]["details"]
    assert details["copy"]["1"]["bytes"] == 2 * (4 * 2**20)  # STREAM counts read + written
    cached = json.loads(Path(quick_ceilings["cache_file"]).read_text())
    assert cached["ceilings"]["measured_utc"] == quick_ceilings["ceilings"]["measured_utc"]
    assert summary()["ceilings"]["measured_utc"] == quick_ceilings["ceilings"]["measured_utc"]  # from the cache
    text = format_summary(quick_ceilings)
    assert "STREAM copy" in text and "float64 multiply-add" in text and quick_ceilings["device"]["name"] in text
    assert max(len(line) for line in text.splitlines()) <= 80  # python -m tuner device --cpu fits 80 columns
    long = {**quick_ceilings, "device": {**quick_ceilings["device"], "clock_source": "a source " * 20}}
    assert max(len(line) for line in format_summary(long).splitlines()) <= 80
    assert QUICK_CEILINGS.max_samples >= details["fma_float64"]["1"]["samples"]
