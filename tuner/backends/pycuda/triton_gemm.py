"""Triton's matrix product with its autotuner over a standard list of configurations, as a rival baseline.

The kernel is the classic blocked Triton GEMM (grouped tile order, masked edges, float32 accumulation) writing a
float32 C as this tool's 16-bit and tf32 GEMMs do; ``triton.autotune`` picks among CONFIGS by timing each once
for the shape, and the pick is then verified and timed by the kernels' own method.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

from tuner.backends.pycuda.torch_views import torch_view

CONFIGS = [
    triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": 8}, num_stages=stages, num_warps=warps)
    for bm, bn, bk, stages, warps in (
        (128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4),
        (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (64, 32, 32, 5, 2), (32, 64, 32, 5, 2),
        (128, 256, 64, 4, 8), (256, 128, 64, 3, 8), (64, 64, 64, 4, 4), (16, 128, 128, 4, 4),
    )
]
"""The configurations tried: the eight of Triton's tutorial matmul for CUDA, three larger Hopper-sized tiles and
one for skinny M."""

PRECISION = {"bfloat16": ("bfloat16", "tf32"), "float16": ("float16", "tf32"), "tf32": ("float32", "tf32")}
"""The dtypes served: torch's element type, and ``tl.dot``'s input precision (ignored for 16-bit inputs)."""


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def _matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
            PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group_size = GROUP * tiles_n
    first_m = (pid // group_size) * GROUP
    rows_in_group = min(tiles_m - first_m, GROUP)
    tile_m = first_m + (pid % group_size) % rows_in_group
    tile_n = (pid % group_size) // rows_in_group
    rm = tile_m * BM + tl.arange(0, BM)
    rn = tile_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        tile_a = tl.load(a + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        tile_b = tl.load(b + ks[:, None] * N + rn[None, :], mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(tile_a, tile_b, acc, input_precision=PRECISION)
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def autotuned_launcher(pointers: tuple[int, int, int], M: int, N: int, K: int,
                       dtype: str) -> tuple[Callable[[], None], str]:
    """A callable queuing C = A·B with the configuration Triton's autotuner chose for this shape (tuned now, on
    these buffers), and a description naming it. KeyError for a dtype Triton is not asked to run here."""
    element, precision = PRECISION[dtype]
    torch_type = getattr(torch, element)
    typestr = {"bfloat16": "<i2", "float16": "<f2", "float32": "<f4"}[element]
    a_ptr, b_ptr, c_ptr = pointers
    views: dict[str, Any] = {
        name: torch_view(pointer, shape, kind)
        for name, pointer, shape, kind in (("a", a_ptr, (M, K), typestr), ("b", b_ptr, (K, N), typestr),
                                           ("c", c_ptr, (M, N), "<f4"))
    }
    if element == "bfloat16":  # the interface has no bfloat16 type string: 2-byte words viewed as bfloat16
        views["a"], views["b"] = views["a"].view(torch_type), views["b"].view(torch_type)

    def grid(meta: dict[str, int]) -> tuple[int]:
        return (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)

    def launch() -> None:
        _matmul[grid](views["a"], views["b"], views["c"], M, N, K, PRECISION=precision)

    launch()  # the autotuner times every configuration on the first call for a shape
    torch.cuda.synchronize()
    chosen = _matmul.best_config
    return launch, (f"Triton {triton.__version__} autotuned over {len(CONFIGS)} configurations "
                    f"({precision if dtype == 'tf32' else element} inputs): {chosen}")
