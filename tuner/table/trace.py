"""A workload read from a PyTorch profiler trace: the Chrome trace JSON that ``torch.profiler.profile(
record_shapes=True)`` writes with ``export_chrome_trace`` (gzipped where its name ends in ``.gz``). Its ``aten::mm``,
``aten::addmm``, ``aten::bmm`` and ``aten::baddbmm`` events give the shapes (a batched product of B matrices is B
calls of one shape); an ``aten::linear`` counts only where no such event ran inside it on its thread, as on paths
that do not go through them. The file is data: read within a size bound, each event used checked, nothing in it
executed."""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner import input_file
from tuner.errors import TunerError
from tuner.table.recorder import Recording
from tuner.table.workload import MAX_SIZE, Shape

MAX_TRACE_BYTES = 512 * 2**20
MATMULS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
LINEAR = "aten::linear"
TRACE_STORAGE = {"c10::BFloat16": "bfloat16", "c10::Half": "float16", "float": "float32"}
"""The element type of each input type a trace names."""


class TraceError(TunerError):
    def __init__(self, path: Path, where: str, why: str):
        super().__init__(f"{path}: {where}: {why}. A PyTorch profiler trace is the JSON object "
                         f"export_chrome_trace writes (a profile taken with record_shapes=True), at most "
                         f"{MAX_TRACE_BYTES // 2**20} MiB; its events named {', '.join(MATMULS + (LINEAR,))} need "
                         f"the args 'Input Dims' and 'Input type'. No workload was written.")


@dataclass(frozen=True)
class _Call:
    name: str
    where: str
    thread: tuple[str, str]
    start: float
    end: float
    dims: list[list[int]]
    dtype: str


def read_trace(path: str | Path, tf32: bool = False) -> Recording:
    """The matmul shapes a profiler trace recorded (float32 ones as ``tf32`` where ``tf32``); TraceError naming the
    file and the field where it is no such trace."""
    path = Path(path)
    try:
        document = json.loads(input_file.read_text(path, MAX_TRACE_BYTES, gunzip=True))
    except OSError as exc:
        raise TraceError(path, "the file", f"cannot be read ({input_file.reason(exc)})") from None
    except UnicodeDecodeError:
        raise TraceError(path, "the file", "is not UTF-8 text") from None
    except (ValueError, RecursionError) as exc:
        raise TraceError(path, "the file", f"is not JSON ({str(exc)[:80]})") from None
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        raise TraceError(path, "the top level", "is not an object with a list traceEvents")
    calls = [_call(path, f"traceEvents[{i}]", event) for i, event in enumerate(document["traceEvents"])
             if isinstance(event, dict) and event.get("name") in MATMULS + (LINEAR,)]
    calls.sort(key=lambda call: call.start)
    inner = _starts_by_thread(c for c in calls if c.name in MATMULS)
    workload = Recording()
    for call in calls:
        if call.name == LINEAR and _runs_inside(inner.get(call.thread, []), call):
            continue
        _count(path, call, workload, tf32)
    if not workload.calls and not workload.skipped:
        raise TraceError(path, "traceEvents", f"hold no {', '.join(MATMULS + (LINEAR,))} event; was the profile "
                         f"taken around the program's matmuls, with record_shapes=True?")
    return workload


def _call(path: Path, where: str, event: Mapping[str, Any]) -> _Call:
    args = event.get("args")
    if not isinstance(args, dict):
        raise TraceError(path, f"{where}, field args", "is missing or not an object")
    dims, types = args.get("Input Dims"), args.get("Input type")
    if not isinstance(dims, list) or not all(isinstance(d, list) for d in dims):
        raise TraceError(path, f"{where}, field args.Input Dims", "is missing or not a list of lists "
                         "(was the profile taken with record_shapes=True?)")
    if not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_SIZE for d in dims for n in d):
        raise TraceError(path, f"{where}, field args.Input Dims", f"holds a size that is no integer from 0 to "
                         f"{MAX_SIZE}")
    if not isinstance(types, list) or not types or not isinstance(types[0], str):
        raise TraceError(path, f"{where}, field args.Input type", "is missing or not a list of strings")
    start, length = event.get("ts", 0), event.get("dur", 0)
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in (start, length)):
        raise TraceError(path, f"{where}, field ts or dur", "is not a finite number")
    thread = (str(event.get("pid", ""))[:40], str(event.get("tid", ""))[:40])
    return _Call(str(event["name"]), where, thread, float(start), float(start) + float(length), dims, types[0][:40])


def _starts_by_thread(calls: Any) -> dict[tuple[str, str], list[float]]:
    starts: dict[tuple[str, str], list[float]] = {}
    for call in calls:
        starts.setdefault(call.thread, []).append(call.start)
    return starts


def _runs_inside(starts: Sequence[float], outer: _Call) -> bool:
    """Whether one of the (sorted) start times lies within the outer call's interval."""
    first = bisect.bisect_left(starts, outer.start)
    return first < len(starts) and starts[first] <= outer.end


def _count(path: Path, call: _Call, workload: Recording, tf32: bool) -> None:
    dtype = workload.dtype_or_skip(call.dtype, TRACE_STORAGE.get(call.dtype), tf32)
    if dtype is not None:
        M, N, K, batches = _sizes(path, call)
        workload.count(Shape(M, N, K, dtype), batches)


def _sizes(path: Path, call: _Call) -> tuple[int, int, int, int]:
    """M, N, K and the batch count of one call, checked against its operator's operands."""
    operands = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::bmm": (0, 1), "aten::baddbmm": (1, 2),
                LINEAR: (0, 1)}[call.name]
    if len(call.dims) <= max(operands):
        raise TraceError(path, f"{call.where}, field args.Input Dims", f"gives {len(call.dims)} operand(s) to "
                         f"{call.name}")
    a, b = (call.dims[i] for i in operands)
    if call.name == LINEAR and len(a) >= 1 and len(b) == 2 and a[-1] == b[1] and math.prod(a[:-1]) <= MAX_SIZE:
        return math.prod(a[:-1]), b[0], a[-1], 1  # the weight is N×K; leading input dims are rows
    if call.name in ("aten::bmm", "aten::baddbmm") and len(a) == len(b) == 3 and a[0] == b[0] and a[2] == b[1]:
        return a[1], b[2], a[2], a[0]
    if call.name in ("aten::mm", "aten::addmm") and len(a) == len(b) == 2 and a[1] == b[0]:
        return a[0], b[1], a[1], 1
    raise TraceError(path, f"{call.where}, field args.Input Dims", f"{str(call.dims)[:80]} are not the operands "
                     f"of a {call.name}")
