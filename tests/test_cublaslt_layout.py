"""The cuBLASLt binding's structures have the sizes of cublasLt.h's, so that the heuristic's array of results is
read with the right stride (no GPU needed)."""

import ctypes

from tuner.backends.pycuda.cublaslt import LT_TYPES, SIGNATURES, HeuristicResult, MatmulAlgo


def test_the_algorithm_and_heuristic_result_have_the_headers_sizes():
    assert ctypes.sizeof(MatmulAlgo) == 64  # uint64_t data[8]
    assert ctypes.sizeof(HeuristicResult) == 96  # algo, size_t, cublasStatus_t, float, int[4]
    assert HeuristicResult.workspace_size.offset == 64 and HeuristicResult.waves_count.offset == 76


def test_every_rival_dtype_has_a_compute_type_and_every_call_a_signature():
    assert set(LT_TYPES) == {"float32", "tf32", "float64", "bfloat16", "float16"}
    assert len(SIGNATURES["cublasLtMatmul"]) == 16
    assert len(SIGNATURES["cublasLtMatmulAlgoGetHeuristic"]) == 10
