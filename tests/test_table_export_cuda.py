"""``table export-cuda``: a kernel table built from shipped recordings as plain CUDA. The dispatch sends each shape
to its own entry's symbol, each launch carries the geometry ``render.launch`` gives, a wgmma entry its tensor maps
and cluster; the folder builds with nvcc into a library and the example against it; an entry the dispatch cannot
call is refused naming it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from tuner import cli
from tuner.config import Config
from tuner.errors import TunerError
from tuner.kernels.render import launch
from tuner.kernels.tensor_maps import tensor_map_fields
from tuner.table.artifact import KernelTable, write_table
from tuner.table.build import build_table
from tuner.table.export_cuda import DISPATCH, EXAMPLE, HEADER, LIBRARY, README, export_table, rename_kernel

FERMI = Path("experiments/data/fermi_like_h100")
ENERGY = Path("experiments/data/h100_sgemm_energy_h100")
WGMMA = Path("experiments/data/h100_wgmma_exhaustive")
FP8 = Path("experiments/data/fp8_exhaustive_h200")


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, tuple[KernelTable, Path]]:
    built = {}
    for run in (FERMI, ENERGY, WGMMA, FP8):
        table, sources = build_table([run])
        folder = tmp_path_factory.mktemp(run.name)
        write_table(folder, table, sources)
        built[run.name] = table, folder
    return built


def _config(entry) -> Config:
    return Config.make(entry.problem, entry.family, entry.dtype, entry.params)


def _dim3(text: str, field: str) -> tuple[int, ...]:
    found = re.search(rf"config\.{field} = dim3\((\d+)u, (\d+)u, (\d+)u\);", text)
    assert found, field
    return tuple(map(int, found.groups()))


def test_each_shape_dispatches_to_its_own_entrys_symbol(tables):
    table, folder = tables[ENERGY.name]
    exported, files = export_table(table, folder)
    dispatch = files[DISPATCH]
    for dtype in ("float32", "float64"):
        body = dispatch.split(f"int tuner_gemm_{dtype}(")[1].split("\n}\n")[0]
        cases = re.findall(r"if \(M == (\d+) && N == (\d+) && K == (\d+)\)\n\s+return (\w+)_launch\(", body)
        expected = [(str(e.M), str(e.N), str(e.K), f"tuner_regblock_{e.M}x{e.N}x{e.K}_{dtype}")
                    for e in table.entries if e.dtype == dtype]
        assert cases == expected and body.rstrip().endswith("return TUNER_GEMM_NO_ENTRY;")
    assert sorted(files) == sorted([e.file for e in exported] + [HEADER, DISPATCH, EXAMPLE, README])
    for item in exported:
        assert len(re.findall(rf'extern "C" __global__ void __launch_bounds__\([^)]*\)\s*{item.symbol}\(',
                              files[item.file])) == 1
        assert not re.search(r"\bmatmul\s*\(", files[item.file])


def test_each_launch_carries_the_geometry_render_launch_gives(tables):
    for name in (FERMI.name, ENERGY.name, WGMMA.name):
        table, folder = tables[name]
        exported, files = export_table(table, folder)
        for item in exported:
            text, geometry = files[item.file], launch(_config(item.entry))
            assert _dim3(text, "gridDim") == geometry.grid_on(item.entry.multiprocessors)
            assert _dim3(text, "blockDim") == geometry.block
            assert f"config.dynamicSmemBytes = {geometry.dynamic_shared_bytes};" in text
            opted_in = f"cudaFuncAttributeMaxDynamicSharedMemorySize, {geometry.dynamic_shared_bytes})" in text
            assert opted_in == (geometry.dynamic_shared_bytes > 48 * 1024)
            assert ("cudaLaunchAttributeClusterDimension" in text) == (geometry.cluster != (1, 1, 1))


def test_a_wgmma_entry_encodes_its_tensor_maps_and_launches_in_clusters(tables):
    table, folder = tables[WGMMA.name]
    exported, files = export_table(table, folder)
    (item,) = exported
    text, geometry = files[item.file], launch(_config(item.entry))
    assert geometry.tensor_maps and geometry.cluster[0] > 1 and geometry.resident_blocks_per_sm
    assert f"attributes[0].val.clusterDim.x = {geometry.cluster[0]};" in text
    assert "cudaOccupancyMaxActiveClusters" in text  # a persistent grid of clusters holds those that run at once
    arguments = re.search(r"void\* arguments\[\] = \{(.*)\};", text)
    assert arguments and arguments.group(1) == "&maps[0], &maps[1], &a, &b, &c, &M, &N, &K"
    shapes = {"A": (item.entry.M, item.entry.K), "B": (item.entry.K, item.entry.N)}
    for index, spec in enumerate(geometry.tensor_maps):
        fields = tensor_map_fields(spec, shapes[spec.buffer], item.entry.dtype)
        block = text.split(f"encode(&maps[{index}], ")[0].rsplit("    {\n", 1)[1]
        assert f"dims[2] = {{{fields.dims[0]}ull, {fields.dims[1]}ull}}" in block
        assert f"strides[1] = {{{fields.strides[0]}ull}}" in block and f"box[2] = {{{fields.box[0]}u, " \
            f"{fields.box[1]}u}}" in block
        assert f"encode(&maps[{index}], (CUtensorMapDataType){fields.data_type}, 2, const_cast<void*>" \
               f"({spec.buffer})" in text
        assert f"(CUtensorMapSwizzle){fields.swizzle}" in text


def test_an_fp8_entry_takes_its_per_tensor_scales_through_the_dispatch(tables):
    table, folder = tables[FP8.name]
    exported, files = export_table(table, folder)
    (entry,) = table.entries
    symbol = exported[0].symbol
    signature = ("(int M, int N, int K, const void* A, const void* B, void* C, float scale_a, float scale_b, "
                 "cudaStream_t stream)")
    assert f"int tuner_gemm_float8_e4m3{signature};" in files[HEADER]
    assert "= scale_a * scale_b * A * B: A (float8_e4m3, M x K), B (N x K, each row one column" in files[HEADER]
    assert f"return {symbol}_launch(A, B, C, scale_a, scale_b, stream);" in files[DISPATCH]
    launcher = files[exported[0].file]
    assert f'extern "C" int {symbol}_launch(const void* A, const void* B, void* C, float scale_a, float scale_b, ' \
           f"cudaStream_t stream)" in launcher
    assert "void* arguments[] = {&maps[0], &maps[1], &a, &b, &c, &M, &N, &K, &scale_a, &scale_b};" in launcher
    fields = [tensor_map_fields(spec, shape, dtype) for spec, shape, dtype in
              ((exported[0].geometry.tensor_maps[0], (entry.M, entry.K), "float8_e4m3"),
               (exported[0].geometry.tensor_maps[1], (entry.N, entry.K), "float8_e4m3"))]
    for found in fields:
        assert f"cuuint64_t dims[2] = {{{found.dims[0]}ull, {found.dims[1]}ull}};" in launcher
    assert "A, B, C, 1.0f, 1.0f, 0);" in files[EXAMPLE]


def test_the_header_declares_one_dispatch_function_per_dtype_with_c_linkage(tables):
    table, folder = tables[ENERGY.name]
    header = export_table(table, folder)[1][HEADER]
    declared = re.findall(r"^int (tuner_gemm_\w+)\(int M, int N, int K, const void\* A, const void\* B, void\* C, "
                          r"cudaStream_t stream\);$", header, re.MULTILINE)
    assert declared == ["tuner_gemm_float32", "tuner_gemm_float64"]
    assert 'extern "C" {' in header and "#define TUNER_GEMM_NO_ENTRY 1" in header


def test_the_kernel_rename_takes_exactly_one_definition():
    source = 'extern "C" __global__ void __launch_bounds__(256, 1)\nmatmul(float* C)\n{\n}\n'
    assert "\ntuner_x(float* C)" in rename_kernel(source, "matmul", "tuner_x")
    with pytest.raises(ValueError, match="defines the kernel matmul 2 time"):
        rename_kernel(source + source, "matmul", "tuner_x")
    with pytest.raises(ValueError, match="1 time.*names it 2 time"):
        rename_kernel(source + "void f(float* C) { matmul(C); }\n", "matmul", "tuner_x")
    with pytest.raises(ValueError, match="0 time"):
        rename_kernel(source.replace("matmul", "other"), "matmul", "tuner_x")


def test_an_entry_the_dispatch_cannot_call_is_refused_naming_it(tables):
    table, folder = tables[FERMI.name]
    block_scaled = replace(table.entries[0], family="wgmma_fp8_blocks", dtype="float8_e4m3")
    with pytest.raises(TunerError, match=r"1000x777x333 float8_e4m3 \(wgmma_fp8_blocks\) cannot be exported as "
                                         r"plain CUDA: the family 'wgmma_fp8_blocks' takes the arguments .*SA, SB"):
        export_table(KernelTable((block_scaled,)), folder)
    on_the_cpu = replace(table.entries[0], family="cpu_blocked", params={"MC": 64, "NC": 64, "KC": 64})
    with pytest.raises(TunerError, match="cpu_blocked.*a C function for the CPU"):
        export_table(KernelTable((on_the_cpu,)), folder)
    unknown = replace(table.entries[0], family="no_such_family")
    with pytest.raises(TunerError, match=r"1000x777x333 float32 \(no_such_family\) cannot be exported.*no_such"):
        export_table(KernelTable((unknown,)), folder)


def test_the_command_writes_the_folder_and_refuses_a_missing_table(tables, tmp_path, capsys):
    _, folder = tables[FERMI.name]
    assert cli.main(["table", "export-cuda", str(folder), "--out", str(tmp_path / "cuda")]) == 0
    assert "3 kernels; build: cd" in capsys.readouterr().out
    assert (tmp_path / "cuda" / "tuner_tiled_1000x777x333_float32.cu").is_file()
    assert "nvcc -O3 -arch=sm_90 " in (tmp_path / "cuda" / README).read_text()
    assert cli.main(["table", "export-cuda", str(tmp_path / "absent"), "--out", str(tmp_path / "x")]) == 2
    assert "cannot be read" in capsys.readouterr().err
    (tmp_path / "a_file").write_text("")
    assert cli.main(["table", "export-cuda", str(folder), "--out", str(tmp_path / "a_file")]) == 2
    assert f"{tmp_path / 'a_file'}: cannot write" in capsys.readouterr().err


def build_folder(folder: Path, nvcc: str) -> None:
    """The README's two nvcc commands, run in the folder."""
    commands = [line.split()[1:] for line in (folder / README).read_text().splitlines()
                if line.startswith("    nvcc ")]
    assert len(commands) == 2
    for command in commands:
        done = subprocess.run([nvcc, *command], cwd=folder, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("run", [FERMI, ENERGY, WGMMA, FP8], ids=lambda run: run.name)
def test_the_exported_folder_builds_with_nvcc_alone(run, tables, nvcc, tmp_path):
    _, folder = tables[run.name]
    assert cli.main(["table", "export-cuda", str(folder), "--out", str(tmp_path / "cuda")]) == 0
    build_folder(tmp_path / "cuda", nvcc)
    assert (tmp_path / "cuda" / LIBRARY).is_file() and (tmp_path / "cuda" / "example").is_file()
    nm = shutil.which("nm")
    if nm:
        symbols = subprocess.run([nm, "-D", "--defined-only", str(tmp_path / "cuda" / LIBRARY)], capture_output=True,
                                 text=True, check=True).stdout
        dtypes = {e.dtype for e in tables[run.name][0].entries}
        assert {f"tuner_gemm_{d}" for d in dtypes} <= set(re.findall(r" T (tuner_gemm_\w+)$", symbols, re.M))


def test_a_workloads_untuned_shapes_are_exported_with_their_predicted_configuration(tables, tmp_path, capsys):
    table, folder = tables[ENERGY.name]
    tuned = table.entries[0]
    workload = tmp_path / "workload.json"
    workload.write_text(json.dumps([{"M": tuned.M, "N": tuned.N, "K": tuned.K, "dtype": tuned.dtype},
                                    {"M": 3000, "N": 2000, "K": 1000, "dtype": tuned.dtype},
                                    {"M": 64, "N": 64, "K": 64, "dtype": "float16"}]))
    assert cli.main(["table", "export-cuda", str(folder), "--out", str(tmp_path / "cuda"),
                     "--shapes", str(workload)]) == 0
    assert "64x64x64 float16: left out of the export (the table holds no float16" in capsys.readouterr().err
    dispatch = (tmp_path / "cuda" / DISPATCH).read_text()
    body = dispatch.split(f"int tuner_gemm_{tuned.dtype}(")[1].split("\n}\n")[0]
    assert "if (M == 3000 && N == 2000 && K == 1000)" in body
    assert body.count("if (M == ") == sum(e.dtype == tuned.dtype for e in table.entries) + 1
    assert "3000x2000x1000 (predicted)" in (tmp_path / "cuda" / HEADER).read_text()
    predicted = next(tmp_path.joinpath("cuda").glob("*_3000x2000x1000_*.cu")).read_text()
    assert "int M = 3000, N = 2000, K = 1000;" in predicted
