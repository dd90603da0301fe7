"""The GPU's summary: its description, versions, theoretical peaks and measured ceilings, cached per device
(name + UUID + driver) and version of the ceiling kernels (a digest of their sources) as JSON under
``$TUNER_CACHE_DIR`` or ``~/.cache/tuner``, and printed by ``python -m tuner device``.
"""

from __future__ import annotations

import hashlib
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.backends.pycuda import ceilings as gpu_ceilings
from tuner.backends.pycuda import device as gpu_device
from tuner.backends.pycuda import memory_ceilings
from tuner.backends.pycuda.device import CEILING_DTYPES, LANES_PER_SM, TENSOR_FLOPS_PER_SM_CLOCK, describe
from tuner.measure.ceilings_cache import read_cached, write_cached
from tuner.measure.machine_load import LoadMeter, NvmlProcesses
from tuner.peaks import ALL_TENSOR_DTYPES, LEVEL_KEYS, LEVEL_LABELS, tensor_dtypes, tensor_instruction_default
from tuner.peaks import key as peak_key
from tuner.settings import cache_root

if TYPE_CHECKING:
    from tuner.backends.pycuda.timing import Timer

PUBLISHED_TENSOR_TFLOPS = {"NVIDIA H100 80GB HBM3": {"float64": 66.9, "tf32": 494.7, "bfloat16": 989.4,
                                                    "float16": 989.4, "float8_e4m3": 1978.9, "float8_e5m2": 1978.9}}
"""Datasheet dense tensor-core rates, printed beside the computed and the measured ones."""
PUBLISHED_BANDWIDTH_GBS = {"NVIDIA H100 80GB HBM3": 3350.0, "NVIDIA H200": 4800.0}
"""Datasheet DRAM bandwidths, printed beside the computed figure as a check of the formula."""


def _complete(cached: dict[str, Any], device: dict[str, Any]) -> bool:
    measured = (cached.get("peaks") or {}).get("measured") or {}
    wanted = [f"{d}_gflops" for d in CEILING_DTYPES] + ["bandwidth_gbs", *LEVEL_KEYS.values()]
    if device.get("compute_capability") in TENSOR_FLOPS_PER_SM_CLOCK:
        wanted += [peak_key(d, "tensor") for d in tensor_dtypes(device["compute_capability"])]
    return all(k in measured for k in wanted)


def _cache_file(device: dict[str, Any], versions: dict[str, Any]) -> Path:
    key = (f"{device['name']}|{device.get('uuid') or device.get('pci_bus_id')}|{versions.get('driver')}|"
           f"{gpu_ceilings.kernels_digest()}")
    return cache_root() / f"device-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def summary(remeasure: bool = False, timer: Timer | None = None, progress: bool = False,
            load: LoadMeter | None = None) -> dict[str, Any]:
    """The GPU's description, versions, theoretical peaks and measured ceilings (cached per device).

    Keys: device, versions, peaks ({"theoretical": …, "measured": …}), ceilings (method, measured_utc,
    details, tensor_instructions: the instruction each tensor ceiling came from, load: what other processes did on
    the GPU meanwhile, :class:`tuner.measure.machine_load.Load` as a dict),
    cache_file. Needs a GPU; creates the primary context when there is none. ``load`` watches the GPU while the
    ceilings are measured (default: through NVML, where it is installed); ceilings measured while another process
    used the GPU are not cached, and a warning says so.
    """
    gpu_device.require_gpu()
    device = describe()
    versions = gpu_device.software_versions()
    path = _cache_file(device, versions)
    cached = None if remeasure else read_cached(path, device["name"])
    if cached is not None and not _complete(cached, device):
        cached = None  # cached before a ceiling this version measures existed
    if cached is not None:
        return {**cached, "device": device, "versions": versions, "cache_file": str(path)}
    own_timer = timer is None
    if timer is None:
        from tuner.backends.pycuda.timing import SmClock, Timer

        handle = gpu_device.nvml_handle(device["pci_bus_id"])
        timer = Timer(device["l2_bytes"] or 0, SmClock(handle) if handle else None, device["arch"])
    window = (load or _gpu_load_meter(device)).window()
    if progress:
        print(f"measuring this GPU's ceilings (memory bandwidth, arithmetic rates), once per device: they are cached "
              f"in {path} for the runs that follow", file=sys.stderr, flush=True)
    try:
        ceilings = gpu_ceilings.measure_ceilings(device, timer, progress=progress)
    finally:
        if own_timer:
            timer.close()
    watched = window.close()
    result = {
        "device": device,
        "versions": versions,
        "peaks": {"theoretical": gpu_device.theoretical_peaks(device), "measured": ceilings["measured"]},
        "ceilings": {"method": gpu_ceilings.CEILINGS_METHOD,
                     "measured_utc": datetime.now(UTC).isoformat(timespec="seconds"),
                     "details": ceilings["details"], "tensor_instructions": ceilings.get("tensor_instructions", {}),
                     "load": watched.to_dict()},
    }
    if watched.under_load:
        print(f"warning: the GPU's ceilings were measured while {watched.describe()}; they are not cached, so the "
              f"next run measures them again, and percentages of them are flagged", file=sys.stderr, flush=True)
    else:
        write_cached(path, result)
    return {**result, "cache_file": str(path)}


def _gpu_load_meter(device: dict[str, Any]) -> LoadMeter:
    """A watch on the other processes of this GPU (none without NVML)."""
    handle = gpu_device.nvml_handle(device["pci_bus_id"])
    return LoadMeter(gpu=NvmlProcesses(handle) if handle else None, counters=None)


# --- printing ------------------------------------------------------------------------------------------------

def _size(nbytes: int | None) -> str:
    if nbytes is None:
        return "?"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{nbytes} B"


def _rate(value: float | None, unit: str) -> str:
    return "?" if value is None else f"{value / 1e3:.2f} T{unit}"


def _peak_lines(info: dict[str, Any]) -> list[str]:
    """The peaks' table: each theoretical peak, the measured ceiling and the share of it."""
    theoretical, measured = info["peaks"]["theoretical"], info["peaks"]["measured"]
    lines: list[str] = []
    rows = [("float32 multiply-add", "float32_gflops", "FLOP/s"), ("float64 multiply-add", "float64_gflops", "FLOP/s"),
            ("int32 multiply-add", "int32_gflops", "OP/s"), ("DRAM bandwidth", "bandwidth_gbs", "B/s")]
    rows += [(label.split(" (")[0], key, "B/s") for key, label in LEVEL_LABELS.items()
             if key in measured or theoretical.get(key)]
    instructions = info["ceilings"].get("tensor_instructions", {})
    rows += [(f"{dtype} tensor ({instructions.get(dtype, tensor_instruction_default(dtype))})",
              peak_key(dtype, "tensor"), "FLOP/s") for dtype in ALL_TENSOR_DTYPES
             if peak_key(dtype, "tensor") in measured or theoretical.get(peak_key(dtype, "tensor"))]
    for label, key, unit in rows:
        peak, got = theoretical.get(key), measured.get(key)
        share = f"{100 * got / peak:.0f}%" if peak and got else "?"
        lines.append(f"  {label:<26}  {_rate(peak, unit):>16}  {_rate(got, unit):>15}  {share:>8}")
    return lines


def _formula_lines(d: dict[str, Any], theoretical: dict[str, Any]) -> list[str]:
    """How the theoretical peaks were computed, beside NVIDIA's published figures."""
    lines: list[str] = []
    tensor = TENSOR_FLOPS_PER_SM_CLOCK.get(d["compute_capability"])
    if tensor:
        dtypes = [dtype for dtype in ALL_TENSOR_DTYPES if dtype in tensor]
        rates = "/".join(str(tensor[dtype]) for dtype in dtypes)
        datasheet = PUBLISHED_TENSOR_TFLOPS.get(d["name"])
        sheet = ("; NVIDIA publishes " + "/".join(f"{datasheet[dtype]:g}" for dtype in dtypes) + " TFLOP/s "
                 "dense for this GPU") if datasheet else ""
        lines.append(f"  (tensor: {d['multiprocessors']} SMs × {rates} {'/'.join(dtypes)} operations per SM "
                     f"per clock × {d['sm_clock_mhz']:.0f} MHz{sheet}; mma.sync reaches about two thirds of the "
                     f"16-bit rate on sm_90, whose full rate needs wgmma; the FP8 ceilings are wgmma's alone)")
    lanes = LANES_PER_SM.get(d["compute_capability"])
    if lanes:
        per_sm = "/".join(str(lanes[dtype]) for dtype in CEILING_DTYPES)
        lines.append(f"  (arithmetic: {d['multiprocessors']} SMs × {per_sm} float32/float64/int32 lanes per SM × "
                     f"{d['sm_clock_mhz']:.0f} MHz × 2 operations per multiply-add)")
    if theoretical.get("bandwidth_gbs"):
        published = PUBLISHED_BANDWIDTH_GBS.get(d["name"])
        check = f"; NVIDIA publishes {published / 1e3:.2f} TB/s for this GPU" if published else ""
        lines.append(f"  (bandwidth: {d['memory_clock_mhz']:.0f} MHz × {d['memory_bus_width_bits']} bit × 2 (double "
                     f"data rate: both clock edges) / 8 bit per byte = {theoretical['bandwidth_gbs']:.0f} GB/s{check})")
    if theoretical.get("l1_bandwidth_gbs"):
        lines.append(f"  (L1 and shared memory: {d['multiprocessors']} SMs × {memory_ceilings.bytes_per_sm_clock(d)} B "
                     f"per clock ({memory_ceilings.BANKS} banks × {memory_ceilings.BANK_BYTES} B) × "
                     f"{d['sm_clock_mhz']:.0f} MHz; NVIDIA publishes no L2 bandwidth)")
    return lines


def format_summary(info: dict[str, Any]) -> str:
    d, v = info["device"], info["versions"]
    lines = [
        f"{d['name']}  (compute capability {d['compute_capability']}, {d['arch']})",
        f"  UUID                      {d.get('uuid') or '?'}  (PCI {d['pci_bus_id']})",
        f"  multiprocessors           {d['multiprocessors']}",
        f"  SM clock (max)            {d['sm_clock_mhz']:.0f} MHz",
        f"  memory clock (max)        {d['memory_clock_mhz']:.0f} MHz",
        f"  memory                    {_size(d['memory_bytes'])}, {d['memory_bus_width_bits']}-bit bus",
        f"  L2 cache                  {_size(d['l2_bytes'])}",
        f"  shared memory per block   {_size(d['shared_per_block_bytes'])} "
        f"(opt-in {_size(d['shared_per_block_optin_bytes'])}); per SM {_size(d['shared_per_sm_bytes'])}",
        f"  registers per block       {d['registers_per_block']}; threads per block ≤ {d['max_threads_per_block']}",
        "software",
        f"  driver                    {v['driver'] or '?'} (CUDA {v['cuda_driver_api']} driver API)",
        f"  CUDA (PyCUDA built for)   {v['cuda']}",
        f"  nvcc                      {v['nvcc'] or 'not found'}",
        f"  PyCUDA                    {v['pycuda']}",
        f"{'peaks':<30}{'theoretical':>16}  {'measured':>15}  % of theoretical",
    ]
    lines += _peak_lines(info)
    lines += _formula_lines(d, info["peaks"]["theoretical"])
    ceilings = info["ceilings"]
    clocks = [f"{name.removeprefix('fma_')} {t['sm_clock_mhz_before']:.0f}→{t['sm_clock_mhz_after']:.0f}"
              for name, t in ceilings.get("details", {}).items()
              if t.get("sm_clock_mhz_before") and t.get("sm_clock_mhz_after")]
    if clocks:
        lines.append(f"  (SM clock in MHz before→after each ceiling's samples: {', '.join(clocks)})")
    lines.append(f"ceilings measured {ceilings['measured_utc']} ({ceilings['method']})")
    lines.append(f"cached in {info['cache_file']} (python -m tuner device --remeasure to measure again)")
    return "\n".join(lines)
