"""``tuner.tune`` on the GPU: a CUDA kernel given as source text with Kernel Tuner's block_size_x/y parameters,
tuned end to end (compiled, verified, timed, stored, reported), its restrictions applied."""

from __future__ import annotations

import pytest

import tuner
from tests.gpu.support import QUICK
from tuner.results import table as results

pytestmark = pytest.mark.gpu

SOURCE = r"""
__global__ void matmul_kernel(const real_t* A, const real_t* B, real_t* C, int M, int N, int K) {
    int col = blockIdx.x * block_size_x + threadIdx.x;
    int row = blockIdx.y * block_size_y + threadIdx.y;
    if (row >= M || col >= N) return;
    real_t acc = 0;
    for (int k = 0; k < K; ++k)
        acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
"""


def test_a_cuda_kernel_given_as_source_is_tuned_on_the_gpu(tmp_path):
    out = tmp_path / "run"
    tuner.tune(source=SOURCE, parameters={"block_size_x": [16, 32, 64], "block_size_y": [1, 4, 8, 16]},
               restrictions=["block_size_x * block_size_y <= 512", "block_size_x * block_size_y >= 64"],
               problem=(500, 377, 333), kernel_name="matmul_kernel", name="naive_given", strategy="grid",
               trials=20, out=out, quiet=True, measure=QUICK)
    df, _ = results.load(out)
    tuned = df[df["family"] == "naive_given"]
    pairs = set(zip(tuned["p_block_size_x"], tuned["p_block_size_y"], strict=True))
    assert pairs == {(x, y) for x in (16, 32, 64) for y in (1, 4, 8, 16) if 64 <= x * y <= 512}
    assert set(tuned["status"]) == {"ok"}, tuned[["config_key", "status", "reason"]]
    assert tuned["gflops"].gt(0).all() and tuned["registers"].notna().all()
    assert (out / "report.html").is_file()
