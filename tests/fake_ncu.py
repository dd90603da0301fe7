"""A stand-in for Nsight Compute's ncu on machines without a GPU, for the tests of what the tuner does with it.

It answers ``--version``, ``--query-metrics``, a profiling session and ``--import`` as ncu's CLI does, in the mode that
``FAKE_NCU_MODE`` names: ``ok`` (the session "profiles" the job's kernels and the import gives the raw page
``FAKE_NCU_PAGE``), ``denied`` (no permission to read the counters), ``lacks-l1`` (the query lists no
l1tex__t_bytes), ``retry`` (the query fails, and a first session fails on a metric the GPU lacks). It never runs the
program it is given; it writes the metrics asked for to the file ``FAKE_NCU_METRICS`` names (where set), writes the
manifest a profiled process would, each kernel ``ok``, on the device ``FAKE_NCU_DEVICE``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

DENIED = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
          "Counters on the target device 0.")
LACKING = "sm__inst_executed_pipe_tensor_op_dmma"


def query(mode: str) -> int:
    if mode == "denied":
        print(DENIED)
        return 1
    if mode == "retry":
        print("==ERROR== the metric query failed")
        return 1
    from tuner.counters.metrics import WANTED, base_name

    names = {base_name(m) for m in WANTED} - {LACKING}
    if mode == "lacks-l1":
        names.discard("l1tex__t_bytes")
    print("Device NVIDIA H100 80GB HBM3 (GH100)\nMetric Name    Metric Description")
    for name in sorted(names):
        print(f"{name}    a counter")
    return 0


def profile(argv: list[str], mode: str) -> int:
    export = Path(argv[argv.index("--export") + 1])
    metrics = argv[argv.index("--metrics") + 1].split(",")
    folder = Path(argv[-1])
    calls = folder / "fake-ncu-calls"
    calls.write_text(calls.read_text() + "x" if calls.exists() else "x")
    if os.environ.get("FAKE_NCU_METRICS"):
        Path(os.environ["FAKE_NCU_METRICS"]).write_text("\n".join(metrics))
    if mode == "denied":
        print(DENIED)
        return 1
    if mode == "retry" and len(calls.read_text()) == 1:
        print(f"==ERROR== Failed to find metric {LACKING}.sum")
        return 1
    if any(m.startswith(LACKING) for m in metrics) and mode != "retry":
        print(f"==ERROR== Failed to find metric {LACKING}.sum")
        return 1
    job = json.loads((folder / "job.json").read_text())
    with (folder / "manifest.jsonl").open("a") as manifest:
        manifest.write(json.dumps({"event": "device", "device": {"name": os.environ["FAKE_NCU_DEVICE"],
                                                                  "uuid": "GPU-fake"}}) + "\n")
        for index, kernel in enumerate(job["kernels"]):
            key = kernel["config"]["family"]
            manifest.write(json.dumps({"event": "launching", "index": index, "key": key}) + "\n")
            manifest.write(json.dumps({"event": "outcome", "index": index, "key": key, "status": "ok"}) + "\n")
            print(f'==PROF== Profiling "matmul" - {index}: 0%....50%....100% - 2 passes')
    export.with_suffix(".ncu-rep").write_text("a report")
    return 0


def main(argv: list[str]) -> int:
    mode = os.environ.get("FAKE_NCU_MODE", "ok")
    if "--version" in argv:
        print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.0.0 (build 0)")
        return 0
    if "--query-metrics" in argv:
        return query(mode)
    if "--import" in argv:
        print(Path(os.environ["FAKE_NCU_PAGE"]).read_text())
        return 0
    return profile(argv, mode)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
