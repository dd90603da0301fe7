"""A copied in boxes of A_BOX rows, only as many as reach into A, on the GPU: every design of A_BOX_GPU verifies on
decode rows (M = 1, 16), rows that end inside a box (17, 77) and tiles of every box below a partial one (300); the
rows of the stages that no box fills hold what earlier tiles or launches left there and reach only rows of C past
M."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.gpu.support import assert_right_on_hopper, hopper_backend
from tests.wgmma_configs import A_BOX_GPU
from tuner.config import Config, Problem

pytestmark = pytest.mark.gpu

PROBLEMS = (
    Problem(1, 4096, 4096),     # decode: one box of each k-slice
    Problem(16, 1000, 3008),
    Problem(17, 520, 208),      # three boxes of 8, the last with one row of A
    Problem(77, 200, 528),
    Problem(300, 264, 144),     # whole tiles copy every box, the last tile fewer
)
CONFIGS = [Config.make(problem, family, dtype, params) for family, dtype, params in A_BOX_GPU for problem in PROBLEMS]


@pytest.fixture(scope="module")
def hopper() -> Iterator:
    with hopper_backend(CONFIGS) as backend:
        yield backend


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.key)
def test_a_copied_in_boxes_is_correct(hopper, config: Config):
    assert_right_on_hopper(hopper.evaluate(config), config)


def test_every_design_copies_a_in_fewer_rows_than_its_tile():
    assert all(0 < params["A_BOX"] < params["BM"] for _, _, params in A_BOX_GPU)
