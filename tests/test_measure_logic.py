"""The measuring path's pure logic: stopping rule, statistics, throttle count, peaks, metadata."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tuner.backends.pycuda.device import theoretical_peaks
from tuner.backends.pycuda.environment import gpu_environment as environment
from tuner.backends.pycuda.timing import describe_method
from tuner.measure.method import StoppingRule, ThrottleCounter, relative_noise, summarize
from tuner.results.metadata import git_state, metadata_id
from tuner.settings import CompileSettings, MeasureSettings

RULE = StoppingRule(min_samples=10, max_samples=100, max_time_s=2.0, target_noise=0.005)


# --- stopping rule and statistics ------------------------------------------------------------------------

def test_relative_noise_is_standard_error_over_mean():
    samples = [1.0, 2.0, 3.0, 4.0]
    expected = np.std(samples, ddof=1) / math.sqrt(4) / 2.5
    assert relative_noise(samples) == pytest.approx(expected)
    assert relative_noise([1.0]) == math.inf


def test_never_stops_before_min_samples_even_when_quiet():
    assert RULE.stop_reason([1.0] * 9, elapsed_s=100.0) is None


def test_stops_on_low_noise_after_min_samples():
    assert RULE.stop_reason([1.0] * 10, elapsed_s=0.1) == "noise"


def test_stops_on_time_or_sample_limits_when_noisy():
    noisy = [1.0, 2.0] * 10
    assert RULE.stop_reason(noisy, elapsed_s=0.1) is None
    assert RULE.stop_reason(noisy, elapsed_s=2.5) == "max_time"
    assert RULE.stop_reason([1.0, 2.0] * 50, elapsed_s=0.1) == "max_samples"


def test_first_batch_fills_min_samples():
    assert RULE.next_batch([], 0.0, None) == 10
    assert RULE.next_batch([1.0] * 4, 0.0, None) == 6


def test_next_batch_follows_the_noise_and_the_limits():
    rng = np.random.default_rng(0)
    samples = list(1.0 + 0.05 * rng.standard_normal(10))  # CV ≈ 5 %: (0.05 / 0.005)² ≈ 100 samples needed
    batch = RULE.next_batch(samples, 0.0, None)
    assert 50 <= batch <= 90  # capped by max_samples - 10
    assert RULE.next_batch(samples, elapsed_s=1.9, seconds_per_sample=0.01) == 10  # 0.1 s left
    assert RULE.next_batch(samples, elapsed_s=1.99, seconds_per_sample=1.0) == 1
    almost_quiet = [1.0, 1.0001] * 10
    assert RULE.next_batch(almost_quiet, 0.0, None) == 5  # at least a quarter more


def test_stopping_rule_comes_from_the_settings():
    settings = MeasureSettings(min_samples=3, max_samples=7, max_time_s=0.5, target_noise=0.01)
    assert StoppingRule.from_settings(settings) == StoppingRule(3, 7, 0.5, 0.01)


def test_summarize_reports_median_mean_min_stdev_and_samples():
    timing = summarize([3.0, 1.0, 2.0, 10.0], throttled=1, clock_before=1980.0, clock_after=1755.0)
    assert (timing.median_ms, timing.mean_ms, timing.min_ms) == (2.5, 4.0, 1.0)
    assert timing.stdev_ms == pytest.approx(np.std([3, 1, 2, 10], ddof=1))
    assert timing.samples_ms == (3.0, 1.0, 2.0, 10.0)
    assert timing.cv == pytest.approx(timing.stdev_ms / 4.0)
    assert (timing.throttled_samples, timing.sm_clock_mhz_before, timing.sm_clock_mhz_after) == (1, 1980.0, 1755.0)
    assert summarize([5.0]).stdev_ms == 0.0
    with pytest.raises(ValueError):
        summarize([])


def test_throttle_counter_counts_samples_under_the_starting_clock():
    counter = ThrottleCounter(1980.0, fraction=0.05)
    counter.observe(1980.0, 10)
    counter.observe(1900.0, 10)  # 4 % under: not throttled
    counter.observe(1700.0, 7)
    counter.observe(None, 5)  # clock unreadable
    assert counter.count == 7
    blind = ThrottleCounter(None)
    blind.observe(100.0, 3)
    assert blind.count == 0


def test_method_description_names_the_flush_and_the_rule():
    assert "L2 flushed" in describe_method(MeasureSettings())
    assert "no L2 flush" in describe_method(MeasureSettings(cold_caches=False))
    assert "0.005" in describe_method(MeasureSettings())


def test_flush_l2_is_refused_naming_cold_caches():
    with pytest.raises(TypeError, match=r"^MeasureSettings\(\): flush_l2 is called cold_caches now$"):
        MeasureSettings(flush_l2=False, warmup=3)


# --- peaks and metadata ------------------------------------------------------------------------

H100 = {"compute_capability": "9.0", "multiprocessors": 132, "sm_clock_mhz": 1980.0, "memory_clock_mhz": 2619.0,
        "memory_bus_width_bits": 5120}


def test_theoretical_peaks_of_an_h100():
    peaks = theoretical_peaks(H100)
    assert peaks["float32_gflops"] == pytest.approx(132 * 128 * 1.980 * 2)
    assert peaks["float64_gflops"] == pytest.approx(132 * 64 * 1.980 * 2)
    assert peaks["int32_gflops"] == pytest.approx(132 * 64 * 1.980 * 2)
    assert peaks["bandwidth_gbs"] == pytest.approx(3352.32)  # NVIDIA's 3.35 TB/s: the ×2 is double data rate


def test_tensor_core_peaks_of_an_h100_and_which_bounds_a_dtype():
    from tuner.peaks import compute_peak, unit_peaks

    peaks = theoretical_peaks(H100)
    assert peaks["float64_tensor_gflops"] == pytest.approx(132 * 256 * 1.980)  # 2x the CUDA cores' float64
    assert peaks["bfloat16_tensor_gflops"] == pytest.approx(132 * 4096 * 1.980)
    assert compute_peak(peaks, "float64") == peaks["float64_tensor_gflops"]
    assert compute_peak(peaks, "float32") == peaks["float32_gflops"]  # float32 never runs on tensor cores
    assert set(unit_peaks(peaks, "tf32")) == {"tensor"} and set(unit_peaks(peaks, "float64")) == {"cuda", "tensor"}


def test_unknown_architecture_has_no_arithmetic_peak():
    peaks = theoretical_peaks({**H100, "compute_capability": "1.0"})
    assert peaks["float32_gflops"] is None and peaks["bandwidth_gbs"] == pytest.approx(3352.32)
    assert "float64_tensor_gflops" not in peaks


def test_environment_has_every_key_without_a_gpu():
    env = environment("pycuda", None, MeasureSettings(), CompileSettings())
    assert set(env) >= {"backend", "device", "peaks", "versions", "git", "measure", "compile", "templates",
                        "created_utc"}
    assert set(env["peaks"]) == {"theoretical", "measured"}
    assert set(env["peaks"]["measured"]) == {"float32_gflops", "float64_gflops", "int32_gflops", "bandwidth_gbs"}
    assert {"driver", "cuda", "nvcc", "pycuda", "python", "numpy", "optuna", "tuner"} <= set(env["versions"])
    assert env["measure"]["method"].startswith("CUDA events")
    assert env["compile"]["arch"] == "sm_90"
    assert "naive" in env["templates"] and "tiled" in env["templates"]


def test_metadata_id_is_stable_and_ignores_the_creation_time():
    env = environment("pycuda", None, MeasureSettings(), CompileSettings())
    later = {**env, "created_utc": "2099-01-01T00:00:00+00:00"}
    assert metadata_id(env) == metadata_id(later)
    assert metadata_id(env) != metadata_id({**env, "measure": {**env["measure"], "warmup": 99}})
    assert len(metadata_id(env)) == 12


def test_git_state_outside_a_repository(tmp_path: Path):
    assert git_state(tmp_path) == {"commit": None, "dirty": None}
