"""The mma family on the GPU through the measuring pipeline: right on shapes no tile divides, with operands whose
rows are not 16-byte aligned (gathered element by element) and with one-element problems, in every dtype,
compiled without spilling."""

from __future__ import annotations

import pytest

from tests.test_mma_emulated import CASES
from tuner.config import Config, Problem
from tuner.kernels.matmul import tolerance
from tuner.measure.measurement import Status

pytestmark = pytest.mark.gpu

PROBLEMS = (Problem(1, 1, 1), Problem(17, 33, 9), Problem(1000, 3000, 777), Problem(257, 1001, 264),
            Problem(129, 131, 67), Problem(4000, 3000, 2000))
CONFIGS = [Config.make(problem, "mma", dtype, params) for dtype, params in CASES for problem in PROBLEMS]


@pytest.fixture(scope="module")
def prefetched(backend):
    backend.prefetch(CONFIGS)
    return backend


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.key)
def test_mma_is_right_on_odd_shapes(prefetched, config: Config):
    result = prefetched.evaluate(config)
    assert result.status is Status.OK, result.reason
    assert result.error is not None and result.error <= tolerance(config.dtype, config.problem).bound
    assert result.resources.local_bytes == 0
    assert (result.resources.spill_store_bytes, result.resources.spill_load_bytes) == (0, 0)
