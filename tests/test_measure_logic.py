"""The measuring path's pure logic: stopping rule, statistics, throttle count, verification, peaks, metadata."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tuner.backends.compile_ahead import CompileOutcome, module_cache_dir
from tuner.config import Problem
from tuner.device import theoretical_peaks
from tuner.experiment import CompileSettings, MeasureSettings
from tuner.measure import StoppingRule, ThrottleCounter, describe_method, relative_noise, summarize
from tuner.metadata import environment, git_state, metadata_id
from tuner.verify import (
    FULL_REFERENCE_LIMIT,
    INT_SENTINEL,
    SAMPLE_COLS,
    SAMPLE_ROWS,
    check,
    make_inputs,
    reference,
    tolerance,
)

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
    assert "no L2 flush" in describe_method(MeasureSettings(flush_l2=False))
    assert "0.005" in describe_method(MeasureSettings())


# --- verification ------------------------------------------------------------------------------------------

def test_tolerances_per_dtype():
    assert tolerance("int32", 4096) == 0.0
    assert tolerance("float32", 4096) == pytest.approx(4 * 64 * 2.0**-23)
    assert tolerance("float64", 1000) == pytest.approx(4 * math.sqrt(1000) * 2.0**-52)
    assert 1e-5 < tolerance("float32", 1000) < 2e-5
    assert tolerance("float32", 1) < tolerance("float32", 100) < tolerance("float32", 10_000)


def test_inputs_are_nonzero_reproducible_and_fresh_per_problem():
    a1, b1 = make_inputs(Problem(30, 20, 10), "float32", seed=7)
    a2, b2 = make_inputs(Problem(30, 20, 10), "float32", seed=7)
    a3, _ = make_inputs(Problem(30, 20, 11), "float32", seed=7)
    assert a1.shape == (30, 10) and b1.shape == (10, 20) and a1.dtype == np.float32
    assert np.array_equal(a1, a2) and np.array_equal(b1, b2)
    assert not np.array_equal(a1, a3[:, :10])
    assert np.all(np.abs(a1) >= 0.1) and np.all(np.abs(a1) <= 1.0)
    assert (a1 < 0).any() and (a1 > 0).any()
    ai, bi = make_inputs(Problem(30, 20, 10), "int32", seed=7)
    assert ai.dtype == np.int32 and np.all(ai != 0) and np.all(np.abs(bi) <= 4)


def test_correct_output_passes_and_small_errors_are_caught():
    A, B = make_inputs(Problem(64, 48, 1000), "float32", seed=0)
    ref = reference(A, B)
    good = (A @ B).astype(np.float32)
    verdict = check(good, ref, "float32", 1000)
    assert verdict.ok and verdict.error < tolerance("float32", 1000)
    bad = good.copy()
    bad[5, 7] += 1.0
    verdict = check(bad, ref, "float32", 1000)
    assert not verdict.ok and verdict.error > tolerance("float32", 1000) and "exceeds" in verdict.reason


def test_unwritten_elements_fail():
    A, B = make_inputs(Problem(8, 8, 8), "float64", seed=0)
    out = A.astype(np.float64) @ B
    out[-1, -1] = np.nan
    verdict = check(out, reference(A, B), "float64", 8)
    assert not verdict.ok and "1 of 64 elements" in verdict.reason and "NaN" in verdict.reason
    Ai, Bi = make_inputs(Problem(8, 8, 8), "int32", seed=0)
    outi = (Ai.astype(np.int64) @ Bi).astype(np.int32)
    outi[0, :3] = INT_SENTINEL
    verdict = check(outi, reference(Ai, Bi), "int32", 8)
    assert not verdict.ok and "3 of 64" in verdict.reason


def test_int32_must_match_exactly():
    A, B = make_inputs(Problem(16, 12, 300), "int32", seed=3)
    exact = (A.astype(np.int64) @ B).astype(np.int32)
    assert check(exact, reference(A, B), "int32", 300) == check(exact, reference(A, B), "int32", 300)
    assert check(exact, reference(A, B), "int32", 300).ok
    exact[2, 3] += 1
    verdict = check(exact, reference(A, B), "int32", 300)
    assert not verdict.ok and verdict.error == 1.0


def test_large_problems_compare_sampled_rows_and_columns():
    problem = Problem(2048, 2048, 512)  # M·N·K = 2^31 > 2^30
    assert problem.M * problem.N * problem.K > FULL_REFERENCE_LIMIT
    A, B = make_inputs(problem, "float32", seed=1)
    ref = reference(A, B, seed=1)
    assert ref.sampled and len(ref.rows) == SAMPLE_ROWS and len(ref.cols) == SAMPLE_COLS
    out = A @ B
    assert check(out, ref, "float32", 512).ok
    out[ref.rows[3], 100] = 0.0
    assert not check(out, ref, "float32", 512).ok
    small = reference(*make_inputs(Problem(10, 10, 10), "float32", seed=1))
    assert not small.sampled


# --- peaks, metadata, compile cache ------------------------------------------------------------------------

H100 = {"compute_capability": "9.0", "multiprocessors": 132, "sm_clock_mhz": 1980.0, "memory_clock_mhz": 2619.0,
        "memory_bus_width_bits": 5120}


def test_theoretical_peaks_of_an_h100():
    peaks = theoretical_peaks(H100)
    assert peaks["float32_gflops"] == pytest.approx(132 * 128 * 1.980 * 2)
    assert peaks["float64_gflops"] == pytest.approx(132 * 64 * 1.980 * 2)
    assert peaks["int32_gflops"] == pytest.approx(132 * 64 * 1.980 * 2)
    assert peaks["bandwidth_gbs"] == pytest.approx(3352.32)  # NVIDIA's 3.35 TB/s: the ×2 is double data rate


def test_unknown_architecture_has_no_arithmetic_peak():
    peaks = theoretical_peaks({**H100, "compute_capability": "1.0"})
    assert peaks["float32_gflops"] is None and peaks["bandwidth_gbs"] == pytest.approx(3352.32)


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


def test_compile_cache_folders_and_resource_limits(tmp_path: Path):
    first = module_cache_dir(tmp_path, "source a", "sm_90", ("-O3",))
    assert first == module_cache_dir(tmp_path, "source a", "sm_90", ("-O3",))
    assert first != module_cache_dir(tmp_path, "source b", "sm_90", ("-O3",))
    assert first != module_cache_dir(tmp_path, "source a", "sm_80", ("-O3",))
    shared = CompileOutcome(False, 0.2, "ptxas error   : Entry function 'matmul' uses too much shared data (0x10000)")
    assert shared.resource_limit
    assert not CompileOutcome(False, 0.2, "error: identifier \"x\" is undefined").resource_limit
