"""cuBLAS, timed by the same method as the kernels and verified the same way."""

from __future__ import annotations

import pytest

from tuner.config import Problem
from tuner.kernels.matmul import tolerance
from tuner.measurement import Status

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("problem", [Problem(1000, 1000, 1000), Problem(77, 1000, 333)], ids=lambda p: p.label)
def test_cublas_is_correct_and_timed(backend, problem, dtype):
    result = backend.baseline(problem, dtype)
    assert result.status is Status.OK, result.reason
    assert "cuBLAS" in result.reason
    assert result.error is not None and result.error <= tolerance(dtype, problem).bound
    assert result.timing is not None and result.timing.count >= 3


def test_cublas_has_no_int32_gemm(backend):
    result = backend.baseline(Problem(64, 64, 64), "int32")
    assert result.status is Status.INVALID and "int32" in result.reason
