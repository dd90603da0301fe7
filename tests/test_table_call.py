"""Calling a kernel table, without a GPU: the table dtype arrays ask for, where each shape goes (its entry, a
prediction, the fallback), the layouts a kernel takes, and the arrays read from their interfaces."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from tuner.config import Config, Problem
from tuner.table.arrays import ArrayRefused, DeviceArray, view
from tuner.table.build import build_table
from tuner.table.call import TableMatmul
from tuner.table.loaded import LoadedKernel
from tuner.table.routing import b_transposed, callable_family, layout_refusal, route, table_dtype

RUNS = [Path("experiments/data/h100_sgemm_h100"), Path("experiments/data/fermi_like_h100")]


@pytest.fixture(scope="module")
def table():
    built, _ = build_table(RUNS)
    return built


@pytest.mark.parametrize(("a", "b", "out", "tf32", "expected"), [
    ("bfloat16", "bfloat16", None, False, "bfloat16_out_bfloat16"),
    ("bfloat16", "bfloat16", "float32", False, "bfloat16"),
    ("float16", "float16", None, False, "float16_out_float16"),
    ("float32", "float32", None, False, "float32"),
    ("float32", "float32", None, True, "tf32"),
    ("float64", "float64", "float64", False, "float64"),
    ("float8_e4m3fn", "float8_e4m3fn", "float32", False, "float8_e4m3"),
    ("float8_e4m3fn", "float8_e5m2", "float32", False, "float8_e4m3_e5m2"),
    ("float8_e4m3fn", "float8_e4m3fn", None, False, "float8_e4m3_out_bfloat16"),
    ("bfloat16", "float16", None, False, None),
    ("float32", "float32", "float64", False, None),
])
def test_the_arrays_element_types_name_the_table_dtype(a, b, out, tf32, expected):
    from tuner.config import DTYPE_BYTES

    assert table_dtype(a, b, out, tf32) == (expected if expected in DTYPE_BYTES else None)


def test_a_tuned_shape_runs_its_own_entry_and_a_held_out_one_is_predicted(table):
    tuned = Problem(4096, 4096, 4096)
    own = route(table, tuned, "float32")
    assert own.kind == "exact" and own.config.param_dict == table.entry(tuned, "float32").params
    held = route(table, tuned, "float32", exclude=(tuned,))
    assert held.kind == "predicted" and held.config.problem == tuned
    assert held.config.param_dict != own.config.param_dict or "4096x4096x4096" not in held.reason
    assert "predicted" in held.reason


def test_a_shape_never_tuned_is_predicted_from_the_entries_of_its_dtype(table):
    found = route(table, Problem(3000, 2000, 1000), "float64")
    assert found.kind == "predicted" and found.config.dtype == "float64"
    assert found.config.family == "regblock"


def test_a_dtype_the_table_lacks_falls_back_and_says_why(table):
    found = route(table, Problem(64, 64, 64), "float16")
    assert found.kind == "fallback" and found.config is None
    assert "no float16 configuration" in found.reason and "0 float16 entries" in found.reason


def test_the_table_object_routes_held_out_shapes_and_explains(table):
    caller = TableMatmul(table, Path("t"), exclude=((4096, 4096, 4096),))
    assert caller.route(4096, 4096, 4096, "float32") == "predicted"
    assert caller.route(1024, 1024, 1024, "float32") == "exact"
    assert caller.explain(1024, 1024, 1024, "float32").startswith("exact tiled {'TILE_WIDTH': 32}: tuned on")
    with pytest.raises(ValueError, match="other_gpu='sometimes'"):
        TableMatmul(table, Path("t"), other_gpu="sometimes")


def test_only_families_whose_arguments_a_call_passes_are_callable():
    assert callable_family(Config.make(Problem(8, 8, 8), "tiled", "float32", {"TILE_WIDTH": 16})) is None
    blocks = callable_family(Config.make(Problem(256, 256, 256), "wgmma_fp8_blocks", "float8_e4m3", {}))
    assert blocks is not None and "SA" in blocks
    assert "C function" in callable_family(Config.make(Problem(8, 8, 8), "cpu_naive", "float32", {}))


def test_layouts_a_kernel_takes():
    tiled = Config.make(Problem(8, 8, 8), "tiled", "float32", {"TILE_WIDTH": 16})
    fp8 = Config.make(Problem(256, 256, 256), "wgmma_fp8", "float8_e4m3", {})
    assert not b_transposed(tiled) and b_transposed(fp8)
    assert layout_refusal(False, True, True, False, True) is None
    assert "row-major K×N" in layout_refusal(False, True, False, True, True)
    assert "A and the result" in layout_refusal(False, False, True, False, True)
    assert layout_refusal(True, True, False, True, True) is None
    assert "bt.t()" in layout_refusal(True, True, True, False, True)


class Interface:
    """An array known only by its __cuda_array_interface__, as Numba and other libraries hand one over."""

    def __init__(self, shape, typestr, strides=None, pointer=4096):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides,
                                         "data": (pointer, False), "version": 3}
        self.device = type("Device", (), {"id": 1})()


def test_an_array_interface_gives_address_shape_strides_in_elements_and_type():
    seen = view(Interface((3, 5), "<f4"), "a")
    assert seen == DeviceArray(4096, (3, 5), (5, 1), "float32", 1, "other") and seen.row_major()
    transposed = view(Interface((5, 3), "<f2", strides=(2, 10)), "b")
    assert transposed.strides == (1, 5) and transposed.column_major() and not transposed.row_major()
    with pytest.raises(ArrayRefused, match="element type '<i4'"):
        view(Interface((3, 5), "<i4"), "a")
    with pytest.raises(ArrayRefused, match="not whole elements"):
        view(Interface((3, 5), "<f4", strides=(22, 2)), "a")


def test_a_dlpack_capsule_is_read_and_a_host_array_refused():
    with pytest.raises(ArrayRefused, match="DLPack device type 1 is not CUDA"):
        view(np.ones((2, 3), dtype=np.float32), "a")
    with pytest.raises(ArrayRefused, match="a list is not a GPU array"):
        view([[1.0]], "b")


def test_a_call_no_kernel_takes_is_planned_once_and_said_once(table):
    caller = TableMatmul(table, Path("t"))
    a, b = Interface((64, 32), "<f2"), Interface((32, 16), "<f4", pointer=8192)
    refused = "only PyTorch and CuPy arrays have a fallback"
    with pytest.warns(RuntimeWarning, match="no table dtype multiplies float16 by float32"), \
            pytest.raises(ArrayRefused, match=refused):
        caller.matmul(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        with pytest.raises(ArrayRefused, match=refused):
            caller.matmul(a, b)
    assert len(caller._plans) == 1
    with pytest.raises(ArrayRefused, match=r"expected matrices M×K and K×N"):
        caller.matmul(a, Interface((16, 32), "<f4"))


class Queued:
    """Stands in for the driver's launch: what each launch's parameter block held when queued."""

    def __init__(self):
        self.blocks = []

    def run(self, block, stream):
        self.blocks.append((stream, [v.value for v in block.values]))


def test_the_parameter_block_is_made_once_and_updated_in_place():
    config = Config.make(Problem(64, 32, 16), "tiled", "float32", {"TILE_WIDTH": 16})
    queued = Queued()
    kernel = LoadedKernel(config, (), (("A", "P"), ("B", "P"), ("C", "P"), ("M", "i"), ("N", "i"), ("K", "i")),
                          "float32", False, queued)
    kernel.launch(4096, 8192, 12288, (1.0, 1.0), 7)
    block = kernel._block
    kernel.launch(4096, 8192, 12288, (1.0, 1.0), 8)
    kernel.launch(16384, 8192, 20480, (1.0, 1.0), 8)
    assert kernel._block is block
    assert queued.blocks == [(7, [4096, 8192, 12288, 64, 32, 16]), (8, [4096, 8192, 12288, 64, 32, 16]),
                             (8, [16384, 8192, 20480, 64, 32, 16])]


def test_a_planned_call_restores_its_own_context_and_launches_on_the_callers_arrays(table, monkeypatch):
    """The driver stood in for: the first call plans (one context query, the kernel loaded once); later calls
    launch on each call's addresses, and a call made while another context is current makes the plan's current."""
    from tuner.backends import cuda_driver
    from tuner.table import call

    current = {"context": 11}
    made_current = []
    monkeypatch.setattr(cuda_driver, "current_context", lambda ordinal: current["context"])
    monkeypatch.setattr(cuda_driver, "context_is", lambda context: context == current["context"])
    monkeypatch.setattr(cuda_driver, "make_current", made_current.append)
    monkeypatch.setattr(cuda_driver, "device_facts",
                        lambda ordinal: cuda_driver.DeviceFacts("NVIDIA H100 80GB HBM3", "9.0", 132))
    monkeypatch.setattr(call, "cubin_for", lambda config, entry, folder, arch: b"cubin")
    queued = Queued()
    loads = []

    def load(config, cubin, multiprocessors):
        loads.append(config)
        return LoadedKernel(config, (), (("A", "P"), ("B", "P"), ("C", "P"), ("M", "i"), ("N", "i"), ("K", "i")),
                            "float32", False, queued)

    monkeypatch.setattr(call, "load_kernel", load)
    caller = TableMatmul(table, Path("t"))
    a, b = Interface((1024, 1024), "<f4", pointer=4096), Interface((1024, 1024), "<f4", pointer=8192)
    out = Interface((1024, 1024), "<f4", pointer=12288)
    assert caller.matmul(a, b, out=out) is out
    current["context"] = 22  # another thread's, or a context the caller pushed
    caller.matmul(a, Interface((1024, 1024), "<f4", pointer=16384), out=out)
    assert made_current == [11] and len(loads) == 1 and len(caller._plans) == 1
    assert [values[:3] for _, values in queued.blocks] == [[4096, 8192, 12288], [4096, 16384, 12288]]


@pytest.mark.parametrize("plant", ["link", "fifo", "oversized"])
def test_a_cubin_planted_in_the_table_is_passed_by_for_the_kernels_source(tmp_path, monkeypatch, plant):
    """A table's cubin is code: one that is a link, a FIFO or too large is never read; the kernel is compiled from
    the configuration's source (here a stand-in compiler answers)."""
    import os

    from tuner.compile.result import CompileResult
    from tuner.kernels.discovery import template_text_hash
    from tuner.measure.measurement import Resources
    from tuner.table import loaded
    from tuner.table.artifact import Entry

    config = Config.make(Problem(64, 32, 16), "tiled", "float32", {"TILE_WIDTH": 16})
    entry = Entry(M=64, N=32, K=16, dtype="float32", family="tiled", params={"TILE_WIDTH": 16}, time_median_ms=1.0,
                  tflops=1.0, baseline_ratio=None, device_name="d", compute_capability="9.0", multiprocessors=132,
                  toolkit=None, run="r", template_hash=None, source="k.cu",
                  source_template_hash=template_text_hash("tiled"), cubin="k.sm_90.cubin")
    cubin = tmp_path / entry.cubin
    if plant == "link":
        (tmp_path / "elsewhere").write_bytes(b"\x7fELF other")
        cubin.symlink_to(tmp_path / "elsewhere")
    elif plant == "fifo":
        os.mkfifo(cubin)
    else:
        monkeypatch.setattr(loaded, "MAX_CUBIN_BYTES", 4)
        cubin.write_bytes(b"\x7fELF table")
    compiled = CompileResult(True, b"compiled", Resources(), "", 0.0, False)
    monkeypatch.setattr("tuner.compile.nvcc.compile_source", lambda source, arch: compiled)
    assert loaded.cubin_for(config, entry, tmp_path, "sm_90") == b"compiled"
    monkeypatch.setattr(loaded, "MAX_CUBIN_BYTES", 2**20)
    if plant == "oversized":
        assert loaded.cubin_for(config, entry, tmp_path, "sm_90") == b"\x7fELF table"
