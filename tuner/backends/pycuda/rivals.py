"""Rival GEMMs beside cuBLAS as a user gets it, each verified and timed by the kernels' own method: cuBLASLt's
own autotuning (the fastest of its heuristic's first algorithms) and Triton's autotuner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from tuner.backends.pycuda.cublas import BaselineUnavailable
from tuner.config import Problem
from tuner.measure.measurement import Measurement, Status

if TYPE_CHECKING:
    from tuner.backends.pycuda.cublaslt import LtGemm

Timer = Callable[[Callable[[], None]], Measurement]
"""Verifies and times one launch callable on the problem's workspace."""

LT_ALGORITHMS = 8
"""How many algorithms cuBLASLt's heuristic is asked for by default."""


def fastest_lt_algorithm(pointers: tuple[int, int, int], problem: Problem, dtype: str, count: int,
                         verify_and_time: Timer) -> Measurement:
    """The fastest verified measurement among the heuristic's first ``count`` algorithms; its reason names the
    algorithm and how many were tried. INVALID where cuBLASLt cannot run the GEMM; the last failure where no
    algorithm passed."""
    from tuner.backends.pycuda.cublaslt import LtGemm

    a, b, c = pointers
    try:
        gemm = LtGemm(a, b, c, problem.M, problem.N, problem.K, dtype, count)
    except BaselineUnavailable as exc:
        return Measurement(Status.INVALID, str(exc))
    return fastest_algorithm(gemm, problem, verify_and_time)


def fastest_algorithm(gemm: LtGemm, problem: Problem, verify_and_time: Timer) -> Measurement:
    """The fastest verified measurement among ``gemm``'s algorithms (an :class:`LtGemm`, or the FP8 GEMM's
    :class:`tuner.backends.pycuda.cublaslt_fp8.LtFp8Gemm`), which is closed after; its reason names the algorithm
    and how many were tried, and the last failure stands where no algorithm passed."""
    try:
        best: tuple[float, Measurement, str] | None = None
        failed = Measurement(Status.INVALID, f"cuBLASLt's heuristic returned no algorithm for {problem.label}")
        for algorithm in gemm.algorithms:
            try:
                result = verify_and_time(gemm.launcher(algorithm))
            except BaselineUnavailable as exc:
                failed = Measurement(Status.INVALID, f"{algorithm.describe()}: {exc}")
                continue
            if result.status is not Status.OK or result.timing is None:
                failed = replace(result, reason=f"{algorithm.describe()}: {result.reason}")
            elif best is None or result.timing.median_ms < best[0]:
                best = result.timing.median_ms, result, gemm.describe(algorithm)
    finally:
        gemm.close()
    return failed if best is None else replace(best[1], reason=best[2])


def triton_autotuned(pointers: tuple[int, int, int], problem: Problem, dtype: str, count: int,
                     verify_and_time: Timer) -> Measurement:
    """Triton's autotuner's pick for the shape (``count`` is not used: the configuration list is fixed)."""
    try:
        from tuner.backends.pycuda.triton_gemm import PRECISION, autotuned_launcher
    except ImportError as exc:
        return Measurement(Status.INVALID, f"Triton (with torch) is not importable here: {exc}")
    if dtype not in PRECISION:
        return Measurement(Status.INVALID, f"Triton is compared in {', '.join(PRECISION)} only, not {dtype}")
    try:
        run, description = autotuned_launcher(pointers, problem.M, problem.N, problem.K, dtype)
    except Exception as exc:  # Triton's compile and launch errors have no common base class
        return Measurement(Status.INVALID, f"Triton could not run {problem.label}: {type(exc).__name__}: {exc}")
    result = verify_and_time(run)
    return result if result.status is not Status.OK else replace(result, reason=description)


RIVALS: dict[str, Callable[[tuple[int, int, int], Problem, str, int, Timer], Measurement]] = {
    "cublaslt": fastest_lt_algorithm,
    "triton": triton_autotuned,
}
"""Each rival by the name a caller asks for it."""
