"""The wgmma probe's diagnosis (benchmarks/wgmma_probe.py), with the GPU replaced by numpy: a right product reads
ok, a wrong one names where its elements came from."""

from __future__ import annotations

import numpy as np

from benchmarks import wgmma_probe
from tuner.config import Config, Problem


class NumpyRunner:
    """A stand-in for the probe's Runner that multiplies on the host, optionally swapping two rows of C."""

    def __init__(self, dtype: str, swap_rows: bool = False):
        self.config = Config.make(Problem(64, 64, 64), "wgmma", dtype, {})
        self.swap_rows = swap_rows

    def multiply(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        C = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
        if self.swap_rows:
            C[[3, 5]] = C[[5, 3]]
        return C


def test_a_right_product_reads_ok():
    for dtype in ("bfloat16", "float16", "tf32"):
        runner = NumpyRunner(dtype)
        assert wgmma_probe.through(runner, "B", 256, 512, 256) == "ok"
        assert wgmma_probe.through(runner, "A", 512, 256, 256) == "ok"
        assert wgmma_probe.random(runner, 130, 72, 200, True).startswith("ok")


def test_a_wrong_product_names_the_sources():
    report = wgmma_probe.through(NumpyRunner("bfloat16", swap_rows=True), "B", 128, 128, 128)
    assert report.startswith("256 of 16384 wrong (0 unwritten") and "C[3,0]←B[5,0]" in report
    assert wgmma_probe.random(NumpyRunner("tf32", swap_rows=True), 130, 72, 200, True).startswith("WRONG")
