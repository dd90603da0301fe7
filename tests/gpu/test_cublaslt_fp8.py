"""cuBLASLt's FP8 GEMM on the GPU: e4m3 × e4m3 and e4m3 × e5m2 with per-tensor scales, into float32 and bfloat16,
agree with the float64 product of the FP8 inputs; e5m2 × e5m2, which cuBLASLt has no GEMM of, is refused. The
GEMMs run in a process of their own (:mod:`tests.gpu.cublaslt_fp8_probe`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.gpu.support import on_hopper

pytestmark = pytest.mark.gpu

PROBLEM = (256, 512, 384)
TOLERANCE = 2e-2
"""The largest error relative to the largest entry: float32 sums of exact FP8 products err far less; a bfloat16
output rounds each entry by up to 2^-9 of itself."""
CASES = [("float8_e4m3", "float8_e4m3", "float32"), ("float8_e4m3", "float8_e5m2", "float32"),
         ("float8_e5m2", "float8_e4m3", "float32"), ("float8_e4m3", "float8_e4m3", "bfloat16"),
         ("float8_e5m2", "float8_e5m2", "float32")]


@pytest.fixture(scope="module")
def results() -> dict[tuple[str, str, str], dict]:
    if not on_hopper():
        pytest.skip("cuBLASLt's FP8 GEMM is measured on Hopper (compute capability 9.0)")
    arguments = [str(value) for case in CASES for value in (*PROBLEM, case[0], case[1], 0.5, 2.0, case[2])]
    done = subprocess.run([sys.executable, "-m", "tests.gpu.cublaslt_fp8_probe", *arguments], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(CASES), done.stdout
    return dict(zip(CASES, (json.loads(line) for line in lines), strict=True))


@pytest.mark.parametrize("case", CASES[:4], ids="-".join)
def test_cublaslt_fp8_gemm_agrees_with_the_float64_product_of_its_inputs(results, case):
    result = results[case]
    assert "refused" not in result, result
    assert result["error"] <= TOLERANCE, result
    assert result["after_close"] == "this cuBLASLt FP8 GEMM was closed"
    description = result["description"]
    assert "cublasLtMatmul FP8" in description and "CUBLAS_COMPUTE_32F" in description
    assert "fast accumulation off" in description and "heuristic rank 0" in description
    assert f"A {case[0]}" in description and f"B {case[1]}" in description
    assert ("CUDA_R_16BF" if case[2] == "bfloat16" else "CUDA_R_32F") in description


def test_each_of_the_heuristic_s_first_algorithms_multiplies_fp8_correctly(results):
    ranked = results[CASES[0]]["ranked"]
    assert 1 <= len(ranked) <= 4 and max(ranked) <= TOLERANCE, ranked


def test_e5m2_times_e5m2_is_refused_with_the_reason(results):
    refused = results[("float8_e5m2", "float8_e5m2", "float32")]
    assert "no FP8 GEMM of float8_e5m2 × float8_e5m2 on Hopper" in refused["refused"], refused
