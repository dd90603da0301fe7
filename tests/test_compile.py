"""Compiling rendered kernels with nvcc: resources, the cache, errors, architectures and dtypes."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from space_listing import valid_configs

from tests.patience import patient
from tuner.compile import nvcc as nvcc_compile
from tuner.compile.nvcc import compile_configs, compile_source, find_nvcc, parse_ptxas_report
from tuner.compile.pool import CompilePool
from tuner.compile.result import CompileResult
from tuner.config import DTYPE_BYTES, Config, Problem
from tuner.errors import TunerError
from tuner.experiment.schema import load_experiment
from tuner.kernels.discovery import get_family
from tuner.kernels.render import render
from tuner.measure.measurement import Resources

ROOT = Path(__file__).resolve().parents[1]
FERMI = ROOT / "experiments" / "fermi_like.yaml"
ELF_MAGIC = b"\x7fELF"

# Written by nvcc 13.0.88 (-cubin -arch=sm_90 -O3 -Xptxas -v -maxrregcount=24) for a source holding a kernel
# that spills (SPILLING_KERNEL below), a kernel using shared memory and a device function that is not inlined.
NVCC_13_REPORT = """\
ptxas info    : Overriding maximum register limit 256 for 'spill' with  24 of maxrregcount option
ptxas info    : Overriding maximum register limit 256 for 'other' with  24 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'spill' for 'sm_90'
ptxas info    : Function properties for spill
    5976 bytes stack frame, 5968 bytes spill stores, 12168 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 5976 bytes cumulative stack size
ptxas info    : Compile time = 252.211 ms
ptxas info    : Compiling entry function 'other' for 'sm_90'
ptxas info    : Function properties for other
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 128 bytes smem
ptxas info    : Compile time = 2.130 ms
ptxas info    : Function properties for _Z6helperf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""

SPILLING_KERNEL = """\
extern "C" __global__ void spill(float* out, int n) {
    float a[48];
#pragma unroll
    for (int i = 0; i < 48; ++i) a[i] = out[i * n + threadIdx.x];
    float s = 0;
#pragma unroll
    for (int j = 0; j < 48; ++j)
#pragma unroll
        for (int i = 0; i < 48; ++i) s += a[i] * a[(i + j) % 48];
    out[threadIdx.x] = s;
}
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nvcc: str) -> Path:
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path))
    return tmp_path / "nvcc"


@pytest.fixture(scope="module")
def fermi(nvcc: str, tmp_path_factory: pytest.TempPathFactory):
    """Every valid configuration of fermi_like.yaml, compiled twice into one fresh cache."""
    configs = valid_configs(load_experiment(FERMI))
    calls: list[tuple[int, int, Config]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TUNER_CACHE_DIR", str(tmp_path_factory.mktemp("fermi-cache")))
        first = compile_configs(configs, "sm_90",
                                progress=lambda done, total, config: calls.append((done, total, config)))
        second = compile_configs(configs, "sm_90")
    return configs, first, second, calls


def test_the_report_of_nvcc_13_is_read_per_entry_function() -> None:
    report = parse_ptxas_report(NVCC_13_REPORT)
    assert report == {
        "other": Resources(registers=10, shared_bytes=128, local_bytes=0, spill_store_bytes=0, spill_load_bytes=0),
        "spill": Resources(registers=24, shared_bytes=0, local_bytes=5976, spill_store_bytes=5968,
                           spill_load_bytes=12168),
    }


def test_a_report_without_entry_functions_gives_nothing() -> None:
    assert parse_ptxas_report("ptxas info    : 0 bytes gmem\n") == {}


def test_a_missing_nvcc_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.setattr(nvcc_compile, "TOOLKIT_BIN_FOLDERS", (tmp_path / "usr-local-cuda-bin",))
    with pytest.raises(TunerError, match="cannot find the CUDA compiler nvcc") as error:
        find_nvcc()
    assert "CUDA_HOME" in str(error.value)
    assert "\n" not in str(error.value)


def test_nvcc_is_found_under_cuda_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = tmp_path / "cuda" / "bin" / "nvcc"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    assert find_nvcc() == str(tool)


@pytest.mark.slow
def test_every_fermi_configuration_compiles_with_its_resources(fermi) -> None:
    configs, first, _, _ = fermi
    assert set(first) == set(configs)
    for config in configs:
        result = first[config]
        assert result.ok, result.log
        assert result.binary is not None and result.binary.startswith(ELF_MAGIC)
        assert result.resources.registers is not None and result.resources.registers > 0
        assert result.resources.local_bytes == 0
        assert (result.resources.spill_store_bytes, result.resources.spill_load_bytes) == (0, 0)
        if config.family == "tiled":
            tile = int(config["TILE_WIDTH"])
            assert result.resources.shared_bytes == 2 * tile * tile * 4
        else:
            assert result.resources.shared_bytes == 0
        assert "Compiling entry function 'matmul' for 'sm_90'" in result.log


@pytest.mark.slow
def test_problem_sizes_share_one_compilation(fermi) -> None:
    configs, first, _, calls = fermi
    kernels = {(c.family, c.dtype, c.params) for c in configs}
    assert len(kernels) < len(configs)
    assert [done for done, _, _ in calls] == list(range(1, len(kernels) + 1))
    assert {total for _, total, _ in calls} == {len(kernels)}
    by_kernel: dict[tuple, CompileResult] = {}
    for config in configs:
        result = by_kernel.setdefault((config.family, config.dtype, config.params), first[config])
        assert first[config].binary == result.binary


@pytest.mark.slow  # compiles every fermi configuration twice, as its neighbours' fixture does
def test_a_second_compilation_comes_from_the_cache(fermi) -> None:
    configs, first, second, _ = fermi
    for config in configs:
        assert not first[config].cached
        assert second[config].cached
        assert second[config].binary == first[config].binary
        assert second[config].resources == first[config].resources
        assert second[config].seconds == first[config].seconds
        assert second[config].log == first[config].log


def test_a_damaged_cache_entry_is_compiled_again(cache: Path) -> None:
    source = render(Config.make(Problem(64, 64, 64), "tiled", "float32", {"TILE_WIDTH": 8}))
    assert not compile_source(source, "sm_90").cached
    for entry in cache.glob("*/*.json"):
        entry.write_text("{not json")
    again = compile_source(source, "sm_90")
    assert again.ok and not again.cached
    assert compile_source(source, "sm_90").cached


def test_a_broken_source_is_a_failed_result_with_nvcc_message(cache: Path) -> None:
    source = 'extern "C" __global__ void broken(int* x) { x[0] = undefined_name; }\n'
    result = compile_source(source, "sm_90")
    assert not result.ok
    assert result.binary is None
    assert "undefined_name" in result.log and "error" in result.log
    assert result.resources == Resources()
    assert not compile_source(source, "sm_90").cached, "a failed compilation is not cached"


def test_another_architecture_compiles(cache: Path) -> None:
    config = Config.make(Problem(64, 64, 64), "tiled", "float32", {"TILE_WIDTH": 16})
    sm80 = compile_source(render(config), arch="sm_80")
    sm90 = compile_source(render(config), arch="sm_90")
    assert sm80.ok, sm80.log
    assert "for 'sm_80'" in sm80.log
    assert sm80.resources.shared_bytes == 2 * 16 * 16 * 4
    assert sm80.binary != sm90.binary


def test_a_name_that_is_no_architecture_is_refused(cache: Path) -> None:
    with pytest.raises(TunerError, match="sm_90"):
        compile_source("", arch="ampere")


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_naive_and_tiled_compile_for_other_dtypes(cache: Path, dtype: str) -> None:
    problem = Problem(100, 70, 30)
    configs = [
        Config.make(problem, "naive", dtype, {"BLOCK_X": 32, "BLOCK_Y": 8}),
        Config.make(problem, "tiled", dtype, {"TILE_WIDTH": 16}),
    ]
    results = compile_configs(configs, "sm_90", workers=2)
    for config in configs:
        result = results[config]
        assert result.ok, result.log
        assert result.resources.registers is not None and result.resources.registers > 0
        expected_shared = get_family(config.family).shared_bytes(config.param_dict, DTYPE_BYTES[dtype])
        assert result.resources.shared_bytes == expected_shared
    assert results[configs[1]].resources.shared_bytes == 2 * 16 * 16 * DTYPE_BYTES[dtype]


def test_spills_and_stack_are_reported(cache: Path) -> None:
    result = compile_source(SPILLING_KERNEL, "sm_90", options=("-O3", "-maxrregcount=24"))
    assert result.ok, result.log
    assert result.resources.spill_store_bytes is not None and result.resources.spill_store_bytes > 0
    assert result.resources.spill_load_bytes is not None and result.resources.spill_load_bytes > 0
    assert result.resources.local_bytes is not None
    assert result.resources.local_bytes >= result.resources.spill_store_bytes


def test_the_pool_says_what_is_compiling_and_waits_for_the_first_to_end() -> None:
    released = {"a": threading.Event(), "b": threading.Event()}

    def compile_one(source: str) -> CompileResult:
        released[source].wait(patient(10))
        return CompileResult(True, source.encode(), Resources(), "", 0.0, False)

    pool = CompilePool(compile_one, workers=2)
    try:
        pool.submit("a")
        pool.submit("b")
        assert pool.compiling("a") and pool.compiling("b") and not pool.compiling("c")
        assert not pool.wait_any(["a", "b"], timeout=0.05)
        released["b"].set()
        assert pool.wait_any(["a", "b"], timeout=patient(5)) and pool.compiling("a") and not pool.compiling("b")
        assert pool.wait_any(["a", "c"], timeout=0)  # one that is not compiling: nothing to wait for
        released["a"].set()
        assert pool.result("a").binary == b"a" and not pool.compiling("a")
    finally:
        pool.close()
