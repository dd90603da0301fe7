"""The device description, its ceilings (sane for an H100), the metadata and ``python -m tuner device``."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import pytest

from tuner.backends.pycuda.device import TENSOR_FLOPS_PER_SM_CLOCK
from tuner.results.metadata import metadata_id

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def summary(backend):
    return backend.device()


def test_the_device_is_described(summary):
    device = summary["device"]
    assert device["multiprocessors"] > 0 and device["sm_clock_mhz"] > 0 and device["l2_bytes"] > 0
    assert device["shared_per_block_optin_bytes"] >= device["shared_per_block_bytes"]
    assert summary["versions"]["pycuda"] and summary["versions"]["cuda"]


def test_h100_ceilings_are_in_sane_ranges(summary):
    if "H100" not in summary["device"]["name"]:
        pytest.skip(f"the ranges are an H100's; this is a {summary['device']['name']}")
    measured, theoretical = summary["peaks"]["measured"], summary["peaks"]["theoretical"]
    assert 1500 <= measured["bandwidth_gbs"] <= 3500
    assert 20_000 <= measured["float32_gflops"] <= 70_000
    assert 10_000 <= measured["float64_gflops"] <= 35_000
    assert 0 < measured["int32_gflops"] <= 70_000
    assert theoretical["bandwidth_gbs"] == pytest.approx(3350, rel=0.05)
    assert theoretical["float32_gflops"] == pytest.approx(2 * theoretical["float64_gflops"])
    # mma.sync on register fragments: float64 DMMA beats the CUDA cores, the 16-bit types run about twice TF32
    assert measured["float64_gflops"] < measured["float64_tensor_gflops"] <= theoretical["float64_tensor_gflops"]
    assert measured["tf32_tensor_gflops"] < measured["bfloat16_tensor_gflops"] <= theoretical["bfloat16_tensor_gflops"]
    assert measured["float16_tensor_gflops"] == pytest.approx(measured["bfloat16_tensor_gflops"], rel=0.15)


def test_metadata_holds_the_environment(backend):
    env = backend.metadata()
    assert env["backend"] == "pycuda" and env["device"]["name"]
    assert env["peaks"]["measured"]["float32_gflops"] > 0
    assert env["versions"]["pycuda"] and env["versions"]["nvcc"]
    assert env["compile"]["arch"] == "sm_90" and env["templates"]
    assert metadata_id(env) == metadata_id(backend.metadata())


def test_the_device_command_prints_the_gpu_and_its_ceilings(summary):
    done = subprocess.run([sys.executable, "-m", "tuner", "device"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert summary["device"]["name"] in done.stdout
    assert "DRAM bandwidth" in done.stdout and "double data rate" in done.stdout
    instruction = summary["ceilings"].get("tensor_instructions", {}).get("bfloat16", "mma.sync")
    assert f"bfloat16 tensor ({instruction})" in done.stdout


SPEC_TFLOPS = {"tf32": 494.7, "bfloat16": 989.4, "float16": 989.4}
"""NVIDIA's dense tensor-core rates for the H100 SXM, which no measured ceiling may pass."""


def test_wgmma_ceilings_pass_mma_sync_and_stay_below_the_datasheet_on_sm_90(summary):
    if summary["device"]["compute_capability"] != "9.0":
        pytest.skip(f"wgmma is sm_90's; this is a {summary['device']['arch']}")
    details, measured = summary["ceilings"]["details"], summary["peaks"]["measured"]
    for dtype, spec in SPEC_TFLOPS.items():
        mma, wgmma = (details[f"{kind}_{dtype}"] for kind in ("mma", "wgmma"))
        mma_rate, wgmma_rate = (d["operations"] / (d["median_ms"] * 1e-3) / 1e12 for d in (mma, wgmma))
        assert mma_rate < wgmma_rate < spec, (dtype, mma_rate, wgmma_rate)
        # nor the tensor cores' dense rate at the clock the wgmma samples ran at
        clock_mhz = max(wgmma["sm_clock_mhz_before"] or 0, wgmma["sm_clock_mhz_after"] or 0)
        if clock_mhz:
            dense = summary["device"]["multiprocessors"] * TENSOR_FLOPS_PER_SM_CLOCK["9.0"][dtype] * clock_mhz / 1e6
            assert wgmma_rate <= dense, (dtype, wgmma_rate, dense, clock_mhz)
        assert summary["ceilings"]["tensor_instructions"][dtype] == "wgmma"
        assert measured[f"{dtype}_tensor_gflops"] == pytest.approx(wgmma_rate * 1e3)
    assert summary["ceilings"]["tensor_instructions"]["float64"] == "mma.sync"


def test_sm_90_has_8_bit_tensor_ceilings_from_wgmma_and_tuner_device_prints_them(summary):
    if summary["device"]["compute_capability"] != "9.0":
        pytest.skip(f"the 8-bit tensor ceilings are wgmma's, sm_90's; this is a {summary['device']['arch']}")
    measured, details = summary["peaks"]["measured"], summary["ceilings"]["details"]
    for dtype in ("float8_e4m3", "float8_e5m2"):
        rate = measured[f"{dtype}_tensor_gflops"]
        assert isinstance(rate, float) and math.isfinite(rate) and rate > 0, (dtype, rate)
        assert summary["ceilings"]["tensor_instructions"][dtype] == "wgmma"
        assert f"mma_{dtype}" not in details and details[f"wgmma_{dtype}"]["operations"] > 0
    done = subprocess.run([sys.executable, "-m", "tuner", "device"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for dtype in ("float8_e4m3", "float8_e5m2"):
        assert re.search(rf"{dtype} tensor \(wgmma\) +[0-9.]+ TFLOP/s +[0-9.]+ TFLOP/s +[0-9]+%", done.stdout), \
            done.stdout


def test_the_context_sleeps_while_it_waits_for_the_gpu():
    """The measuring process's primary context blocks on a synchronisation instead of spinning a core the
    compilers need."""
    probe = ("import ctypes\n"
             "from tuner.backends.pycuda.device import CU_CTX_SCHED_BLOCKING_SYNC, require_gpu\n"
             "require_gpu()\n"
             "flags = ctypes.c_uint()\n"
             "assert ctypes.CDLL('libcuda.so.1').cuCtxGetFlags(ctypes.byref(flags)) == 0\n"
             "print(flags.value & 0x7, CU_CTX_SCHED_BLOCKING_SYNC)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    scheduling, blocking = done.stdout.split()
    assert scheduling == blocking
