"""The 8-bit dtypes' tensor-core ceilings: measured on sm_90 with wgmma alone, their peak wherever bfloat16 takes its
wgmma rate (the peaks, what a summary says the peak is the rate of, ``tuner device``), and unknown, not an error,
in environments recorded before they were measured."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.test_memory_ceilings import H100
from tuner.backends.pycuda import ceilings, device, summary
from tuner.backends.pycuda.tensor_ceilings import MMA_SYNC, WGMMA, pick
from tuner.peaks import FP8_DTYPES, TENSOR_DTYPES, compute_peak, tensor_dtypes
from tuner.report.environment import PEAK_KEYS
from tuner.results.environment import Environment
from tuner.results.peak_source import peak_columns, tensor_instruction

ROOT = Path(__file__).resolve().parent.parent
A100 = {**H100, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0", "arch": "sm_80", "multiprocessors": 108,
        "sm_clock_mhz": 1410.0}
VERSIONS = {"driver": "580", "cuda_driver_api": "13.0", "cuda": "13.0", "nvcc": "13.0", "pycuda": "2026.1"}
FP8_RATE = 1_310_000.0


def _measured(gpu: dict, fp8: bool) -> dict[str, float]:
    """A complete set of measured ceilings for ``gpu``, with or without the 8-bit tensor rates."""
    rates = {f"{d}_gflops": 1.0 for d in device.CEILING_DTYPES}
    rates.update({key: 1.0 for key in ("bandwidth_gbs", "l2_bandwidth_gbs", "l1_bandwidth_gbs",
                                       "shared_bandwidth_gbs")})
    rates.update({f"{d}_tensor_gflops": 2.0 for d in TENSOR_DTYPES})
    if fp8:
        rates.update({f"{d}_tensor_gflops": FP8_RATE for d in FP8_DTYPES})
    return rates


def _info(measured: dict[str, float], instructions: dict[str, str]) -> dict:
    return {"device": H100, "versions": VERSIONS,
            "peaks": {"theoretical": device.theoretical_peaks(H100), "measured": measured},
            "ceilings": {"measured_utc": "2026-01-01T00:00:00+00:00", "method": ceilings.CEILINGS_METHOD,
                         "details": {}, "tensor_instructions": instructions},
            "cache_file": "device.json"}


def test_only_sm_90_measures_the_8_bit_tensor_ceilings_and_its_dense_rate_is_twice_the_16_bit_one():
    assert tensor_dtypes("9.0") == (*TENSOR_DTYPES, "float8_e4m3", "float8_e5m2")
    assert tensor_dtypes("8.0") == TENSOR_DTYPES and tensor_dtypes("12.0") == TENSOR_DTYPES
    theoretical = device.theoretical_peaks(H100)
    for dtype in FP8_DTYPES:
        assert theoretical[f"{dtype}_tensor_gflops"] == pytest.approx(132 * 8192 * 1980 / 1e3)
        assert theoretical[f"{dtype}_tensor_gflops"] == pytest.approx(2 * theoretical["bfloat16_tensor_gflops"])
    assert not any(key.startswith("float8") for key in device.theoretical_peaks(A100))


def test_a_cached_sm_90_summary_without_the_8_bit_rates_is_measured_again_and_an_sm_80_one_needs_none():
    assert not summary._complete({"peaks": {"measured": _measured(H100, fp8=False)}}, H100)
    assert summary._complete({"peaks": {"measured": _measured(H100, fp8=True)}}, H100)
    assert summary._complete({"peaks": {"measured": _measured(A100, fp8=False)}}, A100)


def test_the_8_bit_dtypes_take_the_wgmma_rate_having_no_mma_sync_one():
    best = pick({MMA_SYNC: {"bfloat16": 622_000.0}, WGMMA: {"bfloat16": 700_000.0, "float8_e4m3": FP8_RATE,
                                                             "float8_e5m2": FP8_RATE - 1}})
    assert best["float8_e4m3"] == (FP8_RATE, WGMMA) and best["float8_e5m2"] == (FP8_RATE - 1, WGMMA)
    assert best["bfloat16"] == (700_000.0, WGMMA)


def test_tuner_device_prints_the_8_bit_wgmma_ceilings_against_their_dense_rate():
    text = summary.format_summary(_info(_measured(H100, fp8=True), dict.fromkeys(FP8_DTYPES, WGMMA)))
    for dtype in FP8_DTYPES:
        assert re.search(rf"{dtype} tensor \(wgmma\) +2141\.06 TFLOP/s +1310\.00 TFLOP/s +61%", text), text
    assert "256/2048/4096/4096/8192/8192 float64/tf32/bfloat16/float16/float8_e4m3/float8_e5m2" in text
    assert "66.9/494.7/989.4/989.4/1978.9/1978.9 TFLOP/s dense" in text and "FP8 ceilings are wgmma's alone" in text
    assert "float8_e4m3, float8_e5m2: k32" in text  # the method names the shape measured


def test_a_summary_without_the_8_bit_rates_still_prints_them_as_unknown_and_never_as_mma_sync():
    text = summary.format_summary(_info(_measured(H100, fp8=False), {}))
    assert re.search(r"float8_e4m3 tensor \(wgmma\) +2141\.06 TFLOP/s +\? +\?", text), text
    assert "float8_e5m2 tensor (mma.sync)" not in text
    assert "bfloat16 tensor (mma.sync)" in text  # a 16-bit ceiling that names none was mma.sync's


def test_the_8_bit_peak_is_the_wgmma_rate_in_summaries_and_reports():
    environment = Environment.from_dict({"backend": "pycuda", "device": H100,
                                         "peaks": {"measured": _measured(H100, fp8=True)}, "ceilings": {}})
    for dtype in FP8_DTYPES:
        assert compute_peak(environment.measured_peaks, dtype) == FP8_RATE
        assert tensor_instruction(environment, dtype) == WGMMA
        assert peak_columns(environment, dtype) == {"peak_of": "its tensor cores' wgmma rate", "peak_short": False}
    keys = list(PEAK_KEYS)
    assert keys.index("float16_tensor_gflops") < keys.index("float8_e4m3_tensor_gflops") \
        < keys.index("float8_e5m2_tensor_gflops") < keys.index("bandwidth_gbs")


def test_an_environment_recorded_before_the_8_bit_rates_loads_with_their_peak_unknown():
    metadata = json.loads((ROOT / "experiments/data/h100_wgmma_exhaustive/metadata.json").read_text())
    environment = Environment.from_dict(next(iter(metadata["environments"].values())))
    assert compute_peak(environment.measured_peaks, "bfloat16")
    for dtype in FP8_DTYPES:
        assert compute_peak(environment.measured_peaks, dtype) is None
        assert peak_columns(environment, dtype) == {"peak_of": None, "peak_short": False}
