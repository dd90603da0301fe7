"""A workload from a PyTorch program: the shapes of a profiler trace, read as data, and the recorder's bookkeeping
(the recorder itself runs under PyTorch in tests/gpu/test_table_recorder.py).

tests/data/torch_profile_mlp.json is in the format of a trace made by

    with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as p:
        model(x)
    p.export_chrome_trace("torch_profile_mlp.json")

around a two-layer bfloat16 MLP (an nn.Linear on a 3-D input, one with a bias on a 2-D input, run twice), a float16
torch.bmm of 8 heads, a float32 and a float64 torch.mm, an aten::linear whose product ran inside no aten::mm or
aten::addmm, and a float16 torch.baddbmm of 4 batches; it keeps a GPU kernel event and a flow event as such
traces hold them."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_table_workload import assert_refused_in_one_paragraph
from tuner.table import trace
from tuner.table.recorder import Recording, table_dtype
from tuner.table.trace import TraceError, read_trace
from tuner.table.workload import Shape, WorkloadError, read_workload, read_workload_calls, workload_text

TRACE = Path(__file__).parent / "data" / "torch_profile_mlp.json"
BF16 = "bfloat16_out_bfloat16"
FLOAT16 = "float16_out_float16"
EXPECTED = {Shape(128, 1024, 256, BF16): 1, Shape(128, 256, 1024, BF16): 2, Shape(64, 64, 32, FLOAT16): 8,
            Shape(64, 48, 96, "float32"): 1, Shape(64, 128, 512, BF16): 1, Shape(64, 48, 32, FLOAT16): 4}


def test_a_trace_gives_each_product_once_with_its_calls_and_no_linear_twice():
    workload = read_trace(TRACE)
    assert workload.calls == EXPECTED and list(workload.calls) == list(EXPECTED)
    assert workload.skipped == {"double": 1}


def test_float32_is_tf32_where_asked_and_a_gzipped_trace_reads_the_same(tmp_path):
    packed = tmp_path / "trace.json.gz"
    packed.write_bytes(gzip.compress(TRACE.read_bytes()))
    calls = read_trace(packed, tf32=True).calls
    assert Shape(64, 48, 96, "tf32") in calls and Shape(64, 48, 96, "float32") not in calls


def _event(**change: object) -> dict:
    event = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.0, "dur": 2.0,
             "args": {"Input Dims": [[4, 8], [8, 16]], "Input type": ["float", "float"]}}
    event.update(change)
    return event


@pytest.mark.parametrize("document, where", [
    ([], "the top level"),
    ({"traceEvents": {}}, "the top level"),
    ({"traceEvents": [_event(args=None)]}, "traceEvents[0], field args"),
    ({"traceEvents": [_event(), _event(args={"Input type": ["float"]})]}, "traceEvents[1], field args.Input Dims"),
    ({"traceEvents": [_event(args={"Input Dims": [[4, -8], [8, 16]], "Input type": ["float"]})]},
     "traceEvents[0], field args.Input Dims"),
    ({"traceEvents": [_event(args={"Input Dims": [[4, 8], [7, 16]], "Input type": ["float"]})]},
     "are not the operands of a aten::mm"),
    ({"traceEvents": [_event(args={"Input Dims": [[4, 8]], "Input type": ["float"]})]}, "gives 1 operand(s)"),
    ({"traceEvents": [_event(args={"Input Dims": [[4, 8], [8, 16]], "Input type": "float"})]},
     "field args.Input type"),
    ({"traceEvents": [_event(ts="soon")]}, "field ts or dur"),
    ({"traceEvents": [_event(name="aten::linear", args={"Input Dims": [[2**20, 2**20, 8], [16, 8]],
                                                        "Input type": ["float"]})]}, "not the operands"),
    ({"traceEvents": [{"ph": "X", "name": "aten::relu"}]}, "hold no aten::mm"),
])
def test_a_hostile_trace_is_refused_naming_the_file_and_field(tmp_path, document, where):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document))
    assert_refused_in_one_paragraph(TraceError, read_trace, path, where)


def test_a_trace_beyond_the_size_bound_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(trace, "MAX_TRACE_BYTES", 100)
    with pytest.raises(TraceError, match="the file: cannot be read .it holds more than the 100 bytes"):
        read_trace(TRACE)


def test_a_trace_that_is_not_json_is_refused(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text('{"traceEvents": [')
    with pytest.raises(TraceError, match="the file: is not JSON"):
        read_trace(path)


def test_the_command_writes_a_workload_with_calls_and_refuses_in_one_paragraph(tmp_path, root):
    out = tmp_path / "mlp.json"
    command = [sys.executable, "-m", "tuner", "table", "workload", "--from-trace", str(TRACE), "--out", str(out)]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "6 shape(s), 17 call(s)" in done.stdout and "left out 1 call(s) in double" in done.stderr
    assert json.loads(out.read_text()) == json.loads(workload_text(EXPECTED))
    (tmp_path / "bad.json").write_text('{"traceEvents": 3}')
    command[6] = str(tmp_path / "bad.json")
    refused = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr and "the top level" in refused.stderr


def test_a_workload_with_calls_reads_back_and_its_calls_are_checked(tmp_path):
    calls = {Shape(128, 256, 64, "float32"): 3, Shape(64, 64, 64, "float16"): 1}
    path = tmp_path / "w.json"
    path.write_text(workload_text(calls))
    assert read_workload_calls(path) == calls and read_workload(path) == list(calls)
    csv = tmp_path / "w.csv"
    csv.write_text("M,N,K,dtype,calls\n8,8,8,float32,2\n8,8,8,float32,\n")
    assert read_workload_calls(csv) == {Shape(8, 8, 8, "float32"): 3}
    for bad in (0, -1, 1.5, True, "2"):
        path.write_text(json.dumps([{"M": 1, "N": 2, "K": 3, "dtype": "float32", "calls": bad}]))
        with pytest.raises(WorkloadError, match="item 0, field calls: expected an integer"):
            read_workload(path)


def test_the_recording_counts_batches_as_calls_and_maps_dtypes():
    record = Recording()
    record.add((128, 256), (256, 1024), "torch.bfloat16", tf32=False)
    record.add((8, 64, 32), (8, 32, 64), "torch.float16", tf32=False)
    record.add((128, 256), (256, 1024), "torch.bfloat16", tf32=True)
    record.add((4, 4), (4, 4), "torch.float64", tf32=False)
    record.add((0, 4), (4, 4), "torch.float32", tf32=False)
    assert record.calls == {Shape(128, 1024, 256, BF16): 2, Shape(64, 64, 32, "float16_out_float16"): 8}
    assert record.skipped == {"torch.float64": 1}
    assert table_dtype("float32", tf32=True) == "tf32" and table_dtype("float32", False) == "float32"
    assert table_dtype("bfloat16", False) == "bfloat16_out_bfloat16" and table_dtype("float64", False) is None
