"""A workload recorded from a PyTorch program on the GPU: a small MLP's linear layers (with and without a bias, on
2-D and 3-D inputs), a batched product and a float64 product run under ``recording()``; the shapes, dtypes and calls
recorded are those the code multiplies, its results are those it gives without recording, and the workload file
written reads back."""

from __future__ import annotations

import pytest

from tuner.table.recorder import recording
from tuner.table.workload import Shape, read_workload_calls

pytestmark = pytest.mark.gpu
BF16 = "bfloat16_out_bfloat16"


def _mlp(torch):  # type: ignore[no-untyped-def]
    return torch.nn.Sequential(torch.nn.Linear(256, 1024, bias=False), torch.nn.GELU(),
                               torch.nn.Linear(1024, 256)).to("cuda", torch.bfloat16)


def test_an_mlp_run_under_recording_gives_its_shapes_and_calls(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = _mlp(torch)
    x = torch.randn(2, 64, 256, device="cuda", dtype=torch.bfloat16)
    heads = torch.randn(8, 64, 32, device="cuda", dtype=torch.float16)
    with torch.no_grad():
        expected = model(x)
        with recording() as record:
            y = model(x)
            model(x[0])
            torch.bmm(heads, heads.transpose(1, 2))
            torch.matmul(torch.ones(4, 4, device="cuda", dtype=torch.float64), torch.ones(4, 4, device="cuda",
                                                                                           dtype=torch.float64))
    assert torch.equal(y, expected)
    assert record.calls == {Shape(128, 1024, 256, BF16): 1, Shape(128, 256, 1024, BF16): 1,
                            Shape(64, 1024, 256, BF16): 1, Shape(64, 256, 1024, BF16): 1,
                            Shape(64, 64, 32, "float16_out_float16"): 8}
    assert record.skipped == {"torch.float64": 1}
    assert read_workload_calls(record.write(tmp_path / "mlp.json")) == record.calls


def test_float32_is_recorded_as_tf32_where_the_program_allows_it():
    torch = pytest.importorskip("torch")
    a, b = torch.randn(32, 48, device="cuda"), torch.randn(48, 16, device="cuda")
    allowed = torch.backends.cuda.matmul.allow_tf32
    try:
        for tf32, dtype in ((False, "float32"), (True, "tf32")):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            with recording() as record:
                a @ b
            assert record.calls == {Shape(32, 16, 48, dtype): 1}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allowed


def test_a_profiler_trace_of_the_same_code_reads_as_the_recording(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    from tuner.table.trace import read_trace

    torch.manual_seed(0)
    model = _mlp(torch)
    x = torch.randn(2, 64, 256, device="cuda", dtype=torch.bfloat16)
    heads = torch.randn(8, 64, 32, device="cuda", dtype=torch.float16)

    def program() -> None:
        model(x)
        model(x[0])
        torch.bmm(heads, heads.transpose(1, 2))

    with torch.no_grad():
        with recording() as record:
            program()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as profiled:
            program()
    trace = tmp_path / "trace.json"
    profiled.export_chrome_trace(str(trace))
    assert read_trace(trace).calls == record.calls
