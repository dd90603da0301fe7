"""The seeds' figures, pinned: bytes per FLOP of the naive and tiled kernels and their roofline bounds."""

import pytest

from tuner.config import Config, Problem
from tuner.kernels.model import MachineModel, cost

FERMI = MachineModel("Fermi-like", {"float32": 1000.0, "float64": 500.0}, 150.0)
BIG = Problem(4096, 4096, 4096)


def naive(dtype="float32", problem=BIG):
    return Config.make(problem, "naive", dtype, {"BLOCK_X": 16, "BLOCK_Y": 16})


def tiled(width, dtype="float32", problem=BIG):
    return Config.make(problem, "tiled", dtype, {"TILE_WIDTH": width})


def test_flops_are_2mnk():
    assert cost(naive(problem=Problem(1000, 777, 333))).flops == 2 * 1000 * 777 * 333


def test_naive_float32_reads_8_bytes_per_multiply_add():
    c = cost(naive())
    reads = c.global_bytes - 4 * BIG.M * BIG.N  # minus the writes of C
    assert reads / (BIG.M * BIG.N * BIG.K) == 8
    assert c.intensity == pytest.approx(0.25, rel=1e-3)


@pytest.mark.parametrize("width", [8, 16, 32])
def test_a_tile_cuts_global_traffic_by_its_width(width):
    reads_naive = cost(naive()).global_bytes - 4 * BIG.M * BIG.N
    reads_tiled = cost(tiled(width)).global_bytes - 4 * BIG.M * BIG.N
    assert reads_naive / reads_tiled == width
    assert cost(tiled(width)).intensity == pytest.approx(width / 4, rel=1e-2)


def test_fermi_bounds():
    assert FERMI.bound_gflops("float32", cost(naive()).intensity) == pytest.approx(37.5, rel=1e-3)
    assert FERMI.bound_gflops("float32", cost(tiled(16)).intensity) == pytest.approx(600, rel=1e-2)
    assert FERMI.bound_gflops("float32", 100.0) == 1000.0
    assert FERMI.ridge_point("float32") == pytest.approx(1000 / 150)


def test_float64_halves_the_ratios():
    for make in (naive, lambda dtype: tiled(16, dtype)):
        assert cost(make("float64")).intensity == pytest.approx(cost(make("float32")).intensity / 2)
    assert FERMI.bound_gflops("float64", cost(naive("float64")).intensity) == pytest.approx(18.75, rel=1e-3)


def test_partial_tiles_are_counted_by_whole_tiles():
    odd = Problem(1000, 777, 333)
    c = cost(tiled(32, problem=odd))
    column_blocks, row_blocks = -(-777 // 32), -(-1000 // 32)
    assert c.global_bytes == 4 * (1000 * 333 * column_blocks + 333 * 777 * row_blocks + 1000 * 777)


def test_model_without_a_peak_for_the_dtype_is_memory_bound_only():
    model = MachineModel("bw-only", {"float32": 1000.0}, 100.0)
    assert model.bound_gflops("int32", 2.0) == 200.0
    assert model.ridge_point("int32") is None
