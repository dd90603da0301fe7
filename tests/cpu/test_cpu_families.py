"""The C families' declarations, sources and cost model, and the CPU description's parsing (no compiler)."""

from __future__ import annotations

import pytest

from tuner.backends.cpu.ceilings import theoretical_peaks
from tuner.backends.cpu.info import cpuinfo_fields, parse_cpu_list, parse_size, vector_bits
from tuner.config import Config, Problem
from tuner.kernels.blocking import CacheLevel, blocked_bytes, blocking_cost, smallest_fit
from tuner.kernels.discovery import families, template_hash
from tuner.kernels.family import Family, Parameter
from tuner.kernels.matmul import compulsory_bytes
from tuner.kernels.render import launch, render
from tuner.measure.measurement import Measurement, Status
from tuner.results.analytics import analytics_of
from tuner.results.record import Record, row
from tuner.space.entry_space import violations

C_FAMILIES = ("cpu_naive", "cpu_reorder", "cpu_blocked", "cpu_packed")
PACKED = {"MC": 96, "NC": 1536, "KC": 256, "MR": 6, "NR": 8, "KU": 4, "PARALLEL": 1}
ZEN3 = [CacheLevel("L1d", 32 * 2**10), CacheLevel("L2", 512 * 2**10), CacheLevel("L3", 32 * 2**20)]


def test_c_families_render_a_c_function_with_the_shared_signature():
    for name in C_FAMILIES:
        family = families()[name]
        assert family.target == "c" and family.template_file == f"{name}.c.j2"
        params = {p.name: p.default[0] for p in family.parameters}
        source = render(Config.make(Problem(37, 29, 53), name, "float64", params))
        assert "typedef double real_t;" in source and "__global__" not in source
        signature = ("void matmul(const real_t* restrict A, const real_t* restrict B, real_t* restrict C, "
                     "int M, int N, int K)")
        assert signature in source
        assert 'visibility("default")' in source
        assert len(template_hash(name)) == 16
        with pytest.raises(ValueError, match="not a CUDA launch"):
            launch(Config.make(Problem(37, 29, 53), name, "float64", params))


def test_openmp_pragmas_appear_only_where_the_parameter_asks():
    serial = render(Config.make(Problem(64, 64, 64), "cpu_packed", "float32", {**PACKED, "PARALLEL": 0}))
    by_blocks = render(Config.make(Problem(64, 64, 64), "cpu_packed", "float32", PACKED))
    assert "#pragma omp" not in serial
    assert "#pragma omp parallel" in by_blocks and "float" in by_blocks


def test_a_family_needs_a_known_target():
    with pytest.raises(ValueError, match="unknown target"):
        Family("x", "x", (Parameter("P", "p", (1,)),), global_bytes=lambda p, pr, s: 1,
               target="fortran")  # type: ignore[arg-type]


def test_the_packed_familys_constraints():
    packed = families()["cpu_packed"]
    assert violations(packed, PACKED, "float64") == []
    assert any("MC is a multiple of MR" in v for v in violations(packed, {**PACKED, "MC": 100}, "float64"))
    assert any("448 bytes" in v for v in violations(packed, {**PACKED, "MR": 8, "NR": 8}, "float64"))
    assert violations(packed, {**PACKED, "MR": 8, "NR": 8}, "float32") == []
    assert any("16-byte vectors" in v for v in violations(packed, {**PACKED, "NR": 6, "NC": 1536}, "float32"))


def test_the_blocking_traffic_and_where_its_blocks_fit():
    problem = Problem(1024, 1024, 1024)
    # A once per column panel (1024/512 = 2), B once, C read and written per KC step but the first (4 steps).
    assert blocked_bytes(problem, 8, 96, 512, 256) == 8 * (1024 * 1024 * 2 + 1024 * 1024 + 1024 * 1024 * 7)
    assert compulsory_bytes(problem, 8) == 8 * 3 * 1024 * 1024
    cost = blocking_cost(Config.make(problem, "cpu_packed", "float64", PACKED), ZEN3)
    assert cost.flops == 2 * 1024**3 and cost.dram_bytes > cost.compulsory_bytes
    fits = {name: level.name for name, (_, level) in cost.working_sets.items()}
    assert fits["sliver of B (KC×NR)"] == "L1d" and fits["block of A (MC×KC)"] == "L2"
    assert fits["block of B (KC×NC)"] == "L3"
    assert smallest_fit(2**30, ZEN3) is None
    naive = blocking_cost(Config.make(problem, "cpu_naive", "float64", {"PARALLEL": 0}), ZEN3)
    assert naive.dram_intensity == pytest.approx(2 * 1024**3 / (8 * (1024**2 + 1024**3 + 1024**2)))


def test_a_c_familys_results_row_has_no_launch_geometry():
    config = Config.make(Problem(37, 29, 53), "cpu_blocked", "float32", {"MC": 8, "NC": 16, "KC": 7, "PARALLEL": 0})
    record = Record("e", "s", "tpe", 0, config, Measurement(Status.COMPILE_ERROR, "x"), "id", 0.0, "now")
    data = row(record, analytics_of(record.config))
    assert data["block"] is None and data["grid"] is None and data["bytes_model"] > 0


def test_the_cpu_description_parsers():
    assert parse_size("32K") == 32 * 2**10 and parse_size("32768K") == 32 * 2**20 and parse_size("1M") == 2**20
    assert parse_size("big") is None
    assert parse_cpu_list("0-3,8") == [0, 1, 2, 3, 8] and parse_cpu_list("1") == [1]
    fields = cpuinfo_fields("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 fma\n\nprocessor\t: 1\n"
                            "model name\t: other\n")
    assert fields["model name"] == "AMD EPYC" and "avx2" in fields["flags"].split()
    assert vector_bits({"avx", "avx2"}) == 256 and vector_bits({"avx512f"}) == 512 and vector_bits(set()) == 128


def test_theoretical_peaks_follow_the_formula_and_stay_unknown_without_a_clock():
    zen3 = {"vendor": "AuthenticAMD", "flags": ["avx", "avx2", "fma"], "vector_bits": 256, "clock_mhz": 2500.0}
    peaks = theoretical_peaks(zen3, 2)
    assert peaks["float64_gflops"] == pytest.approx(2 * 2.5 * 2 * 4 * 2)  # cores × GHz × pipes × lanes × 2
    assert peaks["float32_gflops"] == pytest.approx(2 * peaks["float64_gflops"])
    assert peaks["bandwidth_gbs"] is None
    zen4 = {**zen3, "flags": [*zen3["flags"], "avx512f"], "vector_bits": 512}
    assert theoretical_peaks(zen4, 1)["float64_gflops"] == pytest.approx(2.5 * 2 * 4 * 2)  # two 256-bit halves
    assert theoretical_peaks({**zen3, "clock_mhz": None}, 1)["float64_gflops"] is None
    assert theoretical_peaks({**zen3, "flags": ["avx"]}, 1)["float64_gflops"] is None
