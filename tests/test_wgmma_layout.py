"""The wgmma family's layouts, checked against a model of the hardware without a GPU.

The model follows the PTX ISA and CUTLASS's description of the canonical shared-memory layouts:

- a TMA copy with the 128-byte swizzle writes a box row by row (rows of 128 bytes here) and then XORs the byte
  address's bits 4-6 (the 16-byte chunk) with bits 7-9 (the row mod 8), on the absolute shared address;
- a wgmma descriptor with the 128-byte swizzle reads a K-major operand's element (r, k) at
  ``start + (r % 8)·128 + (r // 8)·SBO + k·size`` and an MN-major one's element (k, n) at
  ``start + (n % T8)·size + (n // T8)·LBO + (k % 8)·128 + (k // 8)·SBO`` (T8: elements in 128 bytes), swizzled the
  same way;
- a wgmma's accumulator register i of thread (warp w, lane l) is D[16w + l/4 + 8·((i/2) % 2)][8·(i/4) + 2·(l % 4) +
  i % 2]; a TF32 A fragment register r is A[16w + l/4 + 8·(r % 2)][l % 4 + 4·(r / 2)].

The emulation below walks the template's protocol with the template's constants (descriptor offsets, k-step
advances, fragment offsets, epilogue indices) and must reproduce A·B exactly, edge tiles included.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernel_templates import wgmma
from tuner.config import Problem

SWIZZLE = 128


def swizzled(address: np.ndarray) -> np.ndarray:
    return address ^ (((address >> 7) & 7) << 4)


def tma_box(matrix: np.ndarray, x0: int, y0: int, box: tuple[int, int], size: int) -> np.ndarray:
    """The element slots (byte offset / size) of a box copied to a 1024-aligned address: global flat indices, -1
    where the box leaves the matrix (TMA writes zeros there)."""
    inner, rows = box
    y, x = np.meshgrid(np.arange(rows), np.arange(inner), indexing="ij")
    gy, gx = y0 + y, x0 + x
    inside = (gy < matrix.shape[0]) & (gx < matrix.shape[1])
    flat = np.where(inside, gy * matrix.shape[1] + gx, -1)
    slots = np.full(inner * rows, -2, dtype=np.int64)
    slots[swizzled(y * inner * size + x * size) // size] = flat
    return slots


def read(slots: np.ndarray, address: np.ndarray, size: int) -> np.ndarray:
    found = slots[swizzled(address) // size]
    assert (found != -2).all(), "a descriptor addressed shared memory no copy wrote"
    return found


def values(flat: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    return np.where(flat >= 0, matrix.ravel()[np.maximum(flat, 0)], 0.0)


def k_major(start: int, rows: int, k: int, sbo: int, size: int) -> np.ndarray:
    r, kk = np.meshgrid(np.arange(rows), np.arange(k), indexing="ij")
    return start + (r % 8) * 128 + (r // 8) * sbo + kk * size


def mn_major(start: int, k: int, n: int, lbo: int, sbo: int, size: int) -> np.ndarray:
    per_row = SWIZZLE // size
    kk, nn = np.meshgrid(np.arange(k), np.arange(n), indexing="ij")
    return start + (nn % per_row) * size + (nn // per_row) * lbo + (kk % 8) * 128 + (kk // 8) * sbo


def accumulator_position(register: np.ndarray, warp: np.ndarray, lane: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (16 * warp + lane // 4 + 8 * ((register // 2) % 2), 8 * (register // 4) + 2 * (lane % 4) + register % 2)


def emulate(params: dict, dtype: str, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """C as the template computes it, tile by tile (the order of units does not matter to the values)."""
    M, K = A.shape
    N = B.shape[1]
    size = 4 if dtype == "tf32" else 2
    BM, BN, BK, consumers = params["BM"], params["BN"], params["BK"], params["CONSUMERS"]
    box_n = wgmma.box_columns(size)
    b_box_bytes = box_n * BK * size
    share, n_of_wgmma = wgmma.consumer_share(params, dtype), wgmma.wgmma_n(params, dtype)
    C = np.full((M, N), np.nan)
    warp, lane = np.meshgrid(np.arange(4), np.arange(32), indexing="ij")
    problem_units = wgmma.units(params, Problem(M, N, K))
    tiles_m = -(-M // BM)
    units_m = -(-tiles_m // params["CLUSTER"])
    for unit in range(problem_units):
        for rank in range(params["CLUSTER"]):
            tile_m, tile_n = unit_tile(unit, units_m, -(-N // BN), rank, params)
            d = np.zeros((consumers, share // 64, 64, n_of_wgmma))
            for k_tile in range(-(-K // BK)):
                a_slots = tma_box(A, k_tile * BK, tile_m * BM, (BK, BM), size)
                b_slots = np.concatenate([tma_box(B, tile_n * BN + j * box_n, k_tile * BK, (box_n, BK), size)
                                          for j in range(BN // box_n)])
                for consumer in range(consumers):
                    for s in range(share // 64):
                        if dtype == "tf32":
                            d[consumer, s] += tf32_slab(a_slots, b_slots, A, B, params, consumer, s, b_box_bytes)
                        else:
                            rows = consumer * share + s * 64
                            for kk in range(BK // 16):
                                a = values(read(a_slots, k_major(rows * 128 + kk * 32, 64, 16, 1024, size), size), A)
                                b = values(read(b_slots, mn_major(kk * 16 * 128, 16, BN, b_box_bytes, 1024, size),
                                                size), B)
                                d[consumer, s] += a @ b
            store(C, d, params, dtype, tile_m, tile_n, warp, lane)
    return C


def tf32_slab(a_slots, b_slots, A, B, params, consumer, s, b_box_bytes) -> np.ndarray:
    """One 64-row slab of Cᵀ for one stage: Bᵀ from the fragments the template loads, A through the descriptor."""
    size, box_n, BM = 4, wgmma.box_columns(4), params["BM"]
    share = wgmma.consumer_share(params, "tf32")
    warp, lane, r = np.meshgrid(np.arange(4), np.arange(32), np.arange(4), indexing="ij")
    n = consumer * share + s * 64 + warp * 16 + lane // 4 + 8 * (r & 1)
    k = lane % 4 + 4 * (r >> 1)
    offset = (n // box_n) * b_box_bytes + k * 128 + ((((n % box_n) // 4) ^ (k % 8)) * 16) + (n % 4) * 4
    total = np.zeros((64, BM))
    for kk in range(params["BK"] // 8):
        loaded = values(b_slots[(offset + kk * 8 * 128) // size], B)     # the fragments' addresses are swizzled
        fragment = np.zeros((64, 8))
        rows = 16 * warp + lane // 4 + 8 * (r % 2)
        fragment[rows, lane % 4 + 4 * (r // 2)] = loaded
        b = values(read(a_slots, k_major(kk * 32, BM, 8, 1024, size), size), A)   # BM rows (m) × 8 (k)
        total += fragment @ b.T
    return total


def store(C, d, params, dtype, tile_m, tile_n, warp, lane) -> None:
    M, N = C.shape
    share = wgmma.consumer_share(params, dtype)
    for consumer in range(d.shape[0]):
        for s in range(d.shape[1]):
            for i in range(wgmma.wgmma_n(params, dtype) // 2):
                row, col = accumulator_position(np.full_like(warp, i), warp, lane)
                value = d[consumer, s][row, col]
                if dtype == "tf32":
                    n = tile_n * params["BN"] + consumer * share + s * 64 + warp * 16 + lane // 4 + 8 * ((i // 2) % 2)
                    m = tile_m * params["BM"] + 2 * (lane % 4) + 8 * (i // 4) + i % 2
                else:
                    m = tile_m * params["BM"] + consumer * share + s * 64 + warp * 16 + lane // 4 + 8 * ((i // 2) % 2)
                    n = tile_n * params["BN"] + 2 * (lane % 4) + 8 * (i // 4) + i % 2
                inside = (m < M) & (n < N)
                assert np.isnan(C[m[inside], n[inside]]).all(), "two threads store one element of C"
                C[m[inside], n[inside]] = value[inside]


def unit_tile(unit: int, units_m: int, tiles_n: int, rank: int, params: dict) -> tuple[int, int]:
    group = params["GROUP"]
    per_group = group * tiles_n
    first = unit // per_group * group
    rows = min(units_m - first, group)
    in_group = unit % per_group
    return (first + in_group % rows) * params["CLUSTER"] + rank, in_group // rows


CASES = [
    ("bfloat16", dict(BM=128, BN=256, BK=64, CONSUMERS=2, CLUSTER=2, GROUP=8)),
    ("bfloat16", dict(BM=64, BN=128, BK=64, CONSUMERS=1, CLUSTER=1, GROUP=1)),
    ("float16", dict(BM=256, BN=128, BK=64, CONSUMERS=2, CLUSTER=1, GROUP=3)),
    ("tf32", dict(BM=128, BN=128, BK=32, CONSUMERS=2, CLUSTER=1, GROUP=8)),
    ("tf32", dict(BM=256, BN=64, BK=32, CONSUMERS=1, CLUSTER=2, GROUP=2)),
]


@pytest.mark.parametrize(("dtype", "params"), CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("shape", [(200, 264, 136), (64, 64, 8), (130, 72, 200)])
def test_emulated_tiles_reproduce_the_product(dtype, params, shape):
    M, N, K = shape
    rng = np.random.default_rng(0)
    A, B = rng.integers(-3, 4, (M, K)).astype(float), rng.integers(-3, 4, (K, N)).astype(float)
    C = emulate(params, dtype, A, B)
    assert not np.isnan(C).any(), "an element of C was never stored"
    np.testing.assert_array_equal(C, A @ B)
