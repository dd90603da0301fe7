"""The kernel-table benchmark's measurements on the GPU, all in the benchmark's own process: GPU time of a call by
CUDA events with L2 flushed between repetitions, the host time of a call over many calls, and a model's forward
captured in a CUDA graph. PyTorch is imported inside the functions."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

FLUSH_BYTES = 256 * 2**20
"""Written between repetitions: larger than the H100's and H200's 50 MiB of L2, so each call starts cold."""
REPEATS = 20
WARMUP = 3


def gpu_median_ms(call: Callable[[], Any], repeats: int = REPEATS) -> float:
    """The median GPU time of ``call`` (ms) over ``repeats`` CUDA-event timings, L2 flushed before each."""
    import torch

    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    for _ in range(WARMUP):
        call()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
    for start, end in events:
        flush.fill_(1)
        start.record()
        call()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) for start, end in events)


def host_us_per_call(call: Callable[[], Any], calls: int = 10_000) -> float:
    """Wall time per call (µs) of ``calls`` calls in a row, the GPU synchronized before and after."""
    import torch

    for _ in range(WARMUP * 10):
        call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def graph_replay(forward: Callable[[], Any]) -> dict[str, Any]:
    """``forward`` (a function of static inputs) run eagerly, then captured in a CUDA graph after a warm-up on a
    side stream and replayed: whether it captured and how far the replay's output is from the eager one."""
    import torch

    eager = forward().clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(WARMUP):
            forward()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            captured = forward()
        graph.replay()
        torch.cuda.synchronize()
    except Exception as exc:  # the capture's own error, whichever library raised it, is the result
        return {"captured": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    difference = (captured.float() - eager.float()).abs().max().item()
    return {"captured": True, "max_abs_diff_vs_eager": difference, "identical": bool(torch.equal(captured, eager))}


def relative_error(got: Any, reference: Any) -> float:
    """‖got − reference‖ / ‖reference‖ (Frobenius), in float32."""
    import torch

    difference = torch.linalg.vector_norm(got.float() - reference.float())
    return float(difference / torch.linalg.vector_norm(reference.float()))
