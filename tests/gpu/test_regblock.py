"""The register-blocked family's fastest configurations compute the right product at awkward sizes: edges that
no tile divides, K and N that rule out 128-bit accesses, a single element, and a size past 4096 in every
dimension."""

from __future__ import annotations

import pytest

from tests.test_regblock_model import BEST
from tuner.config import Config, Problem
from tuner.measurement import Status
from tuner.verify import tolerance

pytestmark = pytest.mark.gpu

PROBLEMS = (
    Problem(1, 1, 1),
    Problem(77, 1000, 333),  # K odd: A's rows are not 16-byte aligned, the scalar path loads them
    Problem(1000, 777, 333),  # N odd too
    Problem(129, 131, 17),
    Problem(1024, 1024, 1024),
    Problem(4097, 4095, 4093),
)
CONFIGS = [Config.make(problem, "regblock", dtype, params) for dtype, params in BEST for problem in PROBLEMS]


@pytest.fixture(scope="module")
def prefetched(backend):
    backend.prefetch(CONFIGS)
    return backend


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.key)
def test_best_regblock_configurations_are_correct(prefetched, config: Config):
    result = prefetched.evaluate(config)
    assert result.status is Status.OK, result.reason
    assert result.error is not None and result.error <= tolerance(config.dtype, config.problem.K)
    assert result.resources.spill_store_bytes in (0, None) and result.resources.local_bytes in (0, None)
