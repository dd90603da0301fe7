"""The tensor cores' ceilings: the faster of mma.sync and wgmma per dtype, the instruction shown beside each, the
cache of ceilings tied to the kernels' sources, and the wgmma ceiling kernel as nvcc compiles it (no GPU)."""

from __future__ import annotations

import re

import pytest

from tests.machine_code import sass_or_skip
from tests.test_memory_ceilings import H100
from tuner.backends.pycuda import ceilings, device, summary, tensor_ceilings
from tuner.backends.pycuda.tensor_ceilings import MMA_SYNC, WGMMA, pick
from tuner.compile.nvcc import compile_source
from tuner.precision import PRECISIONS

MMA_RATES = {"float64": 66_400.0, "tf32": 311_000.0, "bfloat16": 622_000.0, "float16": 622_000.0}
WGMMA_SASS = {"tf32": "HGMMA.64x256x8.F32.TF32", "bfloat16": "HGMMA.64x256x16.F32.BF16",
              "float16": "HGMMA.64x256x16.F32 ", "float8_e4m3": "QGMMA.64x256x32.F32.E4M3.E4M3",
              "float8_e5m2": "QGMMA.64x256x32.F32.E5M2.E5M2"}
"""The machine instruction of each dtype's wgmma (HGMMA for 16- and 32-bit operands, QGMMA for 8-bit ones)."""


def test_the_faster_instruction_gives_each_dtype_its_ceiling_and_float64_stays_with_mma_sync():
    wgmma = {"tf32": 420_000.0, "bfloat16": 600_000.0, "float16": 840_000.0}
    best = pick({MMA_SYNC: MMA_RATES, WGMMA: wgmma})
    assert best == {"float64": (66_400.0, MMA_SYNC), "tf32": (420_000.0, WGMMA), "bfloat16": (622_000.0, MMA_SYNC),
                    "float16": (840_000.0, WGMMA)}


def test_a_tie_goes_to_the_instruction_named_first_and_rates_that_are_not_positive_are_no_candidates():
    assert pick({MMA_SYNC: {"tf32": 5.0}, WGMMA: {"tf32": 5.0}}) == {"tf32": (5.0, MMA_SYNC)}
    assert pick({MMA_SYNC: {"tf32": 0.0}, WGMMA: {"tf32": -1.0, "bfloat16": 3.0}}) == {"bfloat16": (3.0, WGMMA)}
    assert pick({MMA_SYNC: {}, WGMMA: {}}) == {}


def test_only_sm_90_has_a_wgmma_ceiling_and_an_operation_is_two_per_multiply_add_of_m64n256k():
    assert tensor_ceilings.wgmma_arch("9.0") == "sm_90a"
    assert tensor_ceilings.wgmma_arch("8.0") is None and tensor_ceilings.wgmma_arch("12.0") is None
    assert tensor_ceilings.wgmma_operations("bfloat16", blocks=1, iterations=1) == 2 * 64 * 256 * 16 * 4
    assert tensor_ceilings.wgmma_operations("tf32", blocks=396, iterations=10) == 2 * 64 * 256 * 8 * 4 * 396 * 10
    assert tensor_ceilings.wgmma_operations("float8_e4m3", blocks=2, iterations=3) == 2 * 64 * 256 * 32 * 4 * 2 * 3
    assert tensor_ceilings.wgmma_operations("float8_e5m2", blocks=1, iterations=1) == 2 * 64 * 256 * 32 * 4
    # no float64 wgmma; each dtype's k-step is 32 bytes of K, a quarter of the 128-byte operand rows
    assert set(tensor_ceilings.WGMMA_K) == {"tf32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2"}
    assert {dtype: k * PRECISIONS[dtype].bytes for dtype, k in tensor_ceilings.WGMMA_K.items()} == dict.fromkeys(
        tensor_ceilings.WGMMA_K, 32)


def test_tuner_device_names_the_instruction_each_tensor_ceiling_came_from():
    measured = {f"{dtype}_tensor_gflops": rate for dtype, rate in MMA_RATES.items()}
    measured["tf32_tensor_gflops"] = 420_000.0
    info = {"device": H100, "versions": {"driver": "580", "cuda_driver_api": "13.0", "cuda": "13.0", "nvcc": "13.0",
                                         "pycuda": "2026.1"},
            "peaks": {"theoretical": device.theoretical_peaks(H100), "measured": measured},
            "ceilings": {"measured_utc": "2026-01-01T00:00:00+00:00", "method": ceilings.CEILINGS_METHOD,
                         "details": {}, "tensor_instructions": {"float64": MMA_SYNC, "tf32": WGMMA}},
            "cache_file": "device.json"}
    text = summary.format_summary(info)
    assert re.search(r"tf32 tensor \(wgmma\) +535\.27 TFLOP/s +420\.00 TFLOP/s +78%", text), text
    assert "float64 tensor (mma.sync)" in text
    assert "bfloat16 tensor (mma.sync)" in text  # a summary cached without instructions: mma.sync, as measured then
    assert "wgmma (sm_90)" in text and "the higher of mma.sync's and wgmma's" in text


def test_ceilings_of_other_kernel_sources_are_not_reused(tmp_path, monkeypatch):
    (tmp_path / "mma.cu").write_text("// one version\n")
    first = ceilings.kernels_digest(tmp_path)
    assert len(first) == 16 and ceilings.kernels_digest() != first  # the project's kernels: another digest
    assert ceilings.kernels_digest(tmp_path) == first
    (tmp_path / "wgmma.cu").write_text("// a new ceiling kernel\n")
    assert ceilings.kernels_digest(tmp_path) != first
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path))
    before = summary._cache_file(H100, {"driver": "580"})
    monkeypatch.setattr(ceilings, "kernels_digest", lambda folder=ceilings.KERNEL_DIR: "another")
    assert summary._cache_file(H100, {"driver": "580"}) != before


@pytest.mark.parametrize("dtype", sorted(tensor_ceilings.WGMMA_K))
def test_the_wgmma_ceiling_kernel_is_a_loop_of_wgmma_without_spills(nvcc, dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path))
    source = tensor_ceilings.kernel_prefix(dtype) + (ceilings.KERNEL_DIR / "wgmma.cu").read_text()
    result = compile_source(source, "sm_90a")
    assert result.ok, result.log
    r = result.resources
    assert (r.local_bytes, r.spill_store_bytes, r.spill_load_bytes) == (0, 0, 0), result.log
    # WGMMA_BLOCKS_PER_SM warpgroups share the SM's registers (allocated in multiples of 8 per thread)
    assert r.registers <= 65536 // (tensor_ceilings.WGMMA_BLOCKS_PER_SM * tensor_ceilings.WGMMA_THREADS) // 8 * 8
    assert "serializ" not in result.log, "ptxas serialised the wgmma"
    sass = sass_or_skip(result.binary)
    assert WGMMA_SASS[dtype] in sass
    # Between two waits for the groups in flight: one group of KSTEPS wgmma and no memory access
    between = re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x1 ;(.*?)WARPGROUP\.DEPBAR\.LE gsb0, 0x1 ;", sass, re.S)
    assert between, sass
    for stretch in between:
        assert len(re.findall(r"[HQ]GMMA\.64x256", stretch)) == tensor_ceilings.WGMMA_KSTEPS
        assert not re.search(r"\b(LDS|LDG|STS|STG|LDL|STL)\b", stretch)
