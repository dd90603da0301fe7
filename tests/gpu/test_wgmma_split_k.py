"""Split-K and stream-K in the wgmma family on the GPU: every number of splits the tests name, in every dtype and
schedule (one consumer without clusters, two in clusters of two; one block per work item and persistent), and
stream-K in both modes (the last waves streamed after data-parallel ones, and every tile streamed) with either
reduction, verify on decode shapes (M = 1, 16), odd M, N a multiple of 8 but of no tile width, K of no whole slice,
K so short that later splits are empty (one k-tile: a stream-K block per iteration) and hundreds of tiles; and a
configuration measured again, on another problem and back, stays right (the flags that order the parts reset
themselves)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.gpu.support import assert_right_on_hopper, hopper_backend
from tests.wgmma_configs import SPLIT_K_GPU, STREAM_K_GPU
from tuner.config import Config, Problem

pytestmark = pytest.mark.gpu

PROBLEMS = (
    Problem(1, 4096, 4096),      # decode: one row, 32 tile columns
    Problem(16, 1000, 3000),     # N = 8·125, K of no whole slice (46.9 of 64, 93.75 of 32)
    Problem(77, 200, 520),       # odd M; 8 splits of 9 slices: the last three are empty
    Problem(129, 136, 64),       # one slice of 64: every split after the first is empty in the 16-bit dtypes
    Problem(300, 264, 40),       # K below one slice
    Problem(1000, 3000, 2000),   # thousands of work items: persistent blocks walk many of them
)
CONFIGS = [Config.make(problem, "wgmma", dtype, params) for dtype, params in SPLIT_K_GPU + STREAM_K_GPU
           for problem in PROBLEMS]
AGAIN = [Config.make(problem, "wgmma", "bfloat16", params) for dtype, params in SPLIT_K_GPU + STREAM_K_GPU
         if dtype == "bfloat16" and params["PERSISTENT"] and (
             params["SPLIT_K"] == 8 or params.get("STREAM_K") and params.get("REDUCE", "serial") == "serial")
         for problem in (Problem(1000, 3000, 2000), Problem(16, 1000, 3000), Problem(1000, 3000, 2000))]


@pytest.fixture(scope="module")
def hopper() -> Iterator:
    with hopper_backend(CONFIGS) as backend:
        yield backend


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.key)
def test_the_decomposition_is_correct(hopper, config: Config):
    assert_right_on_hopper(hopper.evaluate(config), config)


@pytest.mark.parametrize("config", AGAIN, ids=lambda c: c.key)
def test_the_decomposition_is_correct_again_after_other_launches(hopper, config: Config):
    """Each measurement launches the kernel many times (verified first and last); the module's flags carry over
    from one measurement to the next, and from a problem of many tiles to one of few."""
    for _ in range(2):
        assert_right_on_hopper(hopper.evaluate(config), config)
