"""What the GPU tests share: quick measuring settings and a configuration for the raw test kernels."""

from __future__ import annotations

from tuner.config import Config, Problem
from tuner.settings import MeasureSettings

QUICK = MeasureSettings(warmup=1, min_samples=3, max_samples=10, max_time_s=0.2)
"""Enough samples to exercise the timing method without spending the GPU's time on precision."""
RAW_PROBLEM = Problem(256, 192, 160)


def float32_config(problem: Problem = RAW_PROBLEM, block: tuple[int, int] = (16, 16)) -> Config:
    """A naive float32 configuration whose geometry the raw test kernels borrow."""
    return Config.make(problem, "naive", "float32", {"BLOCK_X": block[0], "BLOCK_Y": block[1]})
