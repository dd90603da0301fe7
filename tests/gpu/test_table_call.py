"""Calling a kernel table from PyTorch and CuPy on the GPU: the product within the family's tolerance of a float64
reference for tuned, predicted and fallback shapes; the caller's stream; CUDA graph capture; torch.compile; a
table tuned on another GPU model warned about or refused."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.gpu.support import on_hopper
from tuner.config import Config, Problem
from tuner.kernels.discovery import get_family, template_text_hash
from tuner.kernels.render import render
from tuner.table.artifact import Entry, KernelTable, write_table
from tuner.table.build import build_table
from tuner.table.call import OtherGpuWarning, TableMatmul, load_table

pytestmark = pytest.mark.gpu

RUNS = [Path("experiments/data/h100_sgemm_h100"), Path("experiments/data/fermi_like_h100")]
WGMMA_BF16 = {"BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "CONSUMERS": 2, "CLUSTER": 2, "PERSISTENT": 1,
              "GROUP": 8, "REGALLOC": 1}
FP8 = {"BK": 128, "STAGES": 4, "GROUP": 8, "SPLIT_K": 1, "CONSUMERS": 2, "REGALLOC": 1, "BM": 128, "BN": 256,
       "CLUSTER": 1, "PERSISTENT": 1, "PROMOTE": 0}


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The float32 winners of two runs recorded on an H100 (naive, tiled and register-blocked kernels)."""
    table, sources = build_table(RUNS)
    folder = tmp_path_factory.mktemp("recorded")
    write_table(folder, table, sources)
    return folder


def _hand_table(folder: Path, device_name: str, entries: list[tuple[Problem, str, str, dict]]) -> Path:
    """A table of the given configurations, as if tuned on ``device_name`` (the call path's input, not a result)."""
    made, sources = [], {}
    for problem, family, dtype, params in entries:
        source = f"{problem.label}_{dtype}.cu"
        sources[source] = render(Config.make(problem, family, dtype, params))
        made.append(Entry(M=problem.M, N=problem.N, K=problem.K, dtype=dtype, family=family, params=params,
                          time_median_ms=1.0, tflops=1.0, baseline_ratio=None, device_name=device_name,
                          compute_capability="9.0", multiprocessors=132, toolkit=None, run="hand-made",
                          template_hash=template_text_hash(family), source=source,
                          source_template_hash=template_text_hash(family)))
    write_table(folder, KernelTable(tuple(made)), sources)
    return folder


def _close(torch, got, a, b, dtype: str, family: str = "tiled", scale: float = 1.0) -> None:
    """‖got − ref‖ / ‖ref‖ within the family's bound, ref the float64 product of the stored values."""
    expected = (a.double() @ b.double()) * scale
    bound = get_family(family).tolerance(dtype, Problem(a.shape[0], b.shape[1], a.shape[1])).bound
    error = (torch.linalg.norm(got.double() - expected) / torch.linalg.norm(expected)).item()
    assert error <= bound, (error, bound)


@pytest.mark.parametrize("shape", [(1024, 1024, 1024), (1000, 777, 333), (300, 500, 70)])
def test_float32_from_pytorch_for_tuned_and_predicted_shapes(torch, recorded, shape):
    M, N, K = shape
    table = load_table(recorded, other_gpu="ignore")
    a, b = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
    got = table.matmul(a, b)
    torch.cuda.synchronize()
    assert got.dtype == torch.float32 and got.shape == (M, N)
    _close(torch, got, a, b, "float32")
    assert table.route(M, N, K, "float32") == ("predicted" if shape == (300, 500, 70) else "exact")


def test_float32_from_cupy_with_out_and_a_held_out_shape(recorded):
    cupy = pytest.importorskip("cupy")
    table = TableMatmul(load_table(recorded).table, recorded, exclude=((1024, 1024, 1024),), other_gpu="ignore")
    a = cupy.random.standard_normal((1024, 1024), dtype=cupy.float32)
    b = cupy.random.standard_normal((1024, 1024), dtype=cupy.float32)
    out = cupy.empty((1024, 1024), dtype=cupy.float32)
    assert table.matmul(a, b, out=out) is out and table.route(1024, 1024, 1024, "float32") == "predicted"
    cupy.cuda.get_current_stream().synchronize()
    expected = cupy.asnumpy(a).astype(np.float64) @ cupy.asnumpy(b).astype(np.float64)
    assert np.abs(cupy.asnumpy(out) - expected).max() <= 1e-3 * np.abs(expected).max()


def test_a_layout_the_kernel_cannot_take_falls_back_once_and_is_right(torch, recorded):
    table = load_table(recorded, other_gpu="ignore")
    a, b = torch.randn(1024, 1024, device="cuda"), torch.randn(1024, 1024, device="cuda").t()
    with pytest.warns(RuntimeWarning, match="must be row-major"):
        got = table.matmul(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table.matmul(a, b)  # said once
    torch.cuda.synchronize()
    _close(torch, got, a, b, "float32")


def test_a_table_of_another_gpu_model_warns_or_refuses(torch, recorded):
    a, b = torch.randn(1024, 1024, device="cuda"), torch.randn(1024, 1024, device="cuda")
    with pytest.warns(OtherGpuWarning, match="tuned on NVIDIA H100 80GB HBM3"):
        load_table(recorded).matmul(a, b)
    if "H100 80GB HBM3" not in torch.cuda.get_device_name():
        with pytest.warns(RuntimeWarning, match="not on this"):
            got = load_table(recorded, other_gpu="refuse").matmul(a, b)
        torch.cuda.synchronize()
        _close(torch, got, a, b, "float32")


def _hopper_table(torch, folder: Path, problem: Problem, family: str, dtype: str, params: dict):
    """A table of one Hopper kernel, as if tuned on this GPU."""
    if not on_hopper():
        pytest.skip("wgmma kernels run on compute capability 9.0 only")
    return load_table(_hand_table(folder, torch.cuda.get_device_name(), [(problem, family, dtype, params)]))


def test_bfloat16_wgmma_on_the_callers_stream_and_in_a_cuda_graph(torch, tmp_path):
    table = _hopper_table(torch, tmp_path, Problem(2048, 2048, 1024), "wgmma", "bfloat16", WGMMA_BF16)
    a = torch.randn(2048, 1024, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(1024, 2048, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(2048, 2048, device="cuda", dtype=torch.float32)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        table.matmul(a, b, out=out)
    side.synchronize()
    _close(torch, out, a, b, "bfloat16", "wgmma")
    out.zero_()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        table.matmul(a, b, out=out)
    graph.replay()
    torch.cuda.synchronize()
    _close(torch, out, a, b, "bfloat16", "wgmma")
    assert table.route(1000, 2048, 1024, "bfloat16") == "predicted"
    c = torch.empty(1000, 2048, device="cuda", dtype=torch.float32)
    table.matmul(a[:1000], b, out=c)
    torch.cuda.synchronize()
    _close(torch, c, a[:1000], b, "bfloat16", "wgmma")


def test_fp8_with_per_tensor_scales_and_b_stored_n_by_k(torch, tmp_path):
    table = _hopper_table(torch, tmp_path, Problem(1024, 1024, 1024), "wgmma_fp8", "float8_e4m3", FP8)
    a = torch.randn(1024, 1024, device="cuda").to(torch.float8_e4m3fn)
    bt = torch.randn(1024, 1024, device="cuda").to(torch.float8_e4m3fn)
    out = torch.empty(1024, 1024, device="cuda", dtype=torch.float32)
    table.matmul(a, bt.t(), out=out, scale_a=0.5, scale_b=4.0)
    torch.cuda.synchronize()
    _close(torch, out, a, bt.t(), "float8_e4m3", "wgmma_fp8", scale=2.0)


def test_inside_torch_compile_the_call_is_one_custom_op(torch, recorded):
    table = load_table(recorded, other_gpu="ignore")
    a, b = torch.randn(1024, 1024, device="cuda"), torch.randn(1024, 1024, device="cuda")

    @torch.compile(fullgraph=True)
    def twice(x, y):
        return table.matmul(x, y) * 2.0

    got = twice(a, b)
    torch.cuda.synchronize()
    _close(torch, got / 2.0, a, b, "float32")
