"""Blocks per SM from threads, registers and shared memory, as the CUDA occupancy rules count them."""

import pytest

from tuner.kernels.occupancy import blocks_per_sm

H100 = {"threads_per_sm": 2048, "registers_per_sm": 65536, "shared_per_sm_bytes": 233472, "blocks_per_sm": 32}


@pytest.mark.parametrize(("threads", "registers", "shared", "expected"), [
    (256, 230, 198656, 1),    # float64 128×128 tiles: registers and shared memory both allow one
    (128, 238, 50000, 2),     # float32 64×256 tiles: 240 registers per thread, two blocks' worth
    (128, 254, 50000, 2),     # 254 rounds up to 256: 32768 registers per block, still two
    (256, 128, 0, 2),         # 256 × 128 = 32768 registers per block
    (256, 129, 0, 1),         # 129 rounds up to 136 per thread: 34816 per block, one fits
    (1024, 32, 0, 2),         # threads limit: 2048 per SM
    (32, 16, 0, 32),          # blocks limit
    (256, 64, 115000, 2),     # shared memory limit, with 1 KB per block kept by the runtime
    (256, 64, 116000, 1),
    (100, 32, 0, 16),         # a partial warp still takes a whole warp's registers and slots
])
def test_blocks_per_sm(threads, registers, shared, expected):
    assert blocks_per_sm(threads, registers, shared, H100) == expected


def test_unknown_limits_say_nothing():
    assert blocks_per_sm(256, 64, 0, {**H100, "registers_per_sm": None}) is None
    assert blocks_per_sm(0, 64, 0, H100) is None
