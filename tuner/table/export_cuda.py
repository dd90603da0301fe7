"""A kernel table as plain CUDA: one ``.cu`` file per entry (its family's rendered source, the kernel renamed to a
symbol of its own, and the host code that launches it), a header ``tuner_gemm.h`` with one dispatch function per
dtype, the dispatch itself, a small ``example.cu`` and a ``README.txt`` with the nvcc command that builds them."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tuner.compile.nvcc import arch_options
from tuner.config import Config
from tuner.errors import TunerError
from tuner.kernels.discovery import get_family, template_text_hash
from tuner.kernels.render import launch, render
from tuner.precision import PRECISIONS
from tuner.table import cuda_launch
from tuner.table.artifact import Entry, KernelTable
from tuner.table.cuda_launch import STATUS_LAUNCH_FAILED, STATUS_NO_ENTRY, STATUS_OK, Geometry
from tuner.table.routing import b_transposed
from tuner.table.workload import Shape

HEADER = "tuner_gemm.h"
DISPATCH = "tuner_gemm.cu"
EXAMPLE = "example.cu"
LIBRARY = "libtuner_gemm.so"
README = "README.txt"


@dataclass(frozen=True)
class Exported:
    """One entry as exported: its kernel's symbol, file and launch, and whether it takes per-tensor scales."""

    entry: Entry
    symbol: str
    file: str
    geometry: Geometry
    scaled: bool


def symbol_of(entry: Entry) -> str:
    """``tuner_<family>_<M>x<N>x<K>_<dtype>``, a C identifier."""
    return re.sub(r"\W", "_", f"tuner_{entry.family}_{entry.M}x{entry.N}x{entry.K}_{entry.dtype}")


def rename_kernel(source: str, kernel_name: str, symbol: str) -> str:
    """``source`` with its one ``extern "C" __global__`` definition of ``kernel_name`` named ``symbol``; ValueError
    where the source does not define it exactly once or calls it elsewhere."""
    definition = re.compile(r'(extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^()]*\)\s*)?)'
                            + re.escape(kernel_name) + r"(?=\s*\()")
    uses = re.findall(r"\b" + re.escape(kernel_name) + r"\s*\(", source)
    renamed, count = definition.subn(lambda match: match.group(1) + symbol, source)
    if count != 1 or len(uses) != 1:
        raise ValueError(f"the source defines the kernel {kernel_name} {count} time(s) and names it {len(uses)} "
                         f"time(s); exactly one definition is renamed")
    return renamed


def arch_of_table(entries: list[Exported]) -> str:
    """The ``-arch`` the folder builds for: a family's own (``sm_90a``), else the table's compute capability."""
    archs = {get_family(e.entry.family).arch for e in entries} - {None}
    if archs:
        return sorted(a for a in archs if a)[0]
    capabilities = {e.entry.compute_capability for e in entries} - {None}
    return f"sm_{sorted(c for c in capabilities if c)[0].replace('.', '')}" if capabilities else "native"


def export_entry(entry: Entry) -> tuple[Exported, str]:
    """The exported entry and its file's text; NotExportable (or ValueError) where it cannot be exported."""
    config = _config(entry)
    family = get_family(entry.family)
    if family.target != "cuda":
        raise cuda_launch.NotExportable(f"the family '{entry.family}' is a C function for the CPU, not a CUDA kernel")
    if family.recording is not None:
        raise cuda_launch.NotExportable(f"the family '{entry.family}' stands for a recording and has no source")
    cuda_launch.check_arguments(config)
    symbol = symbol_of(entry)
    shape = cuda_launch.geometry(launch(config), entry.multiprocessors)
    source = rename_kernel(render(config), family.kernel_name, symbol)
    exported = Exported(entry, symbol, f"{symbol}.cu", shape, cuda_launch.takes_scales(config))
    return exported, source + cuda_launch.launcher_source(config, symbol, shape)


def _scaled(entries: list[Exported], dtype: str) -> bool:
    """Whether the dtype's dispatch takes per-tensor scales: its kernels all do, or none (else TunerError)."""
    kinds = {e.scaled for e in entries if e.entry.dtype == dtype}
    if len(kinds) > 1:
        raise TunerError(f"the table's {dtype} kernels differ in taking per-tensor scales; one dispatch function "
                         f"cannot call them all")
    return kinds == {True}


def _config(entry: Entry) -> Config:
    return Config.make(entry.problem, entry.family, entry.dtype, entry.params)


def _dispatch_declaration(dtype: str, scaled: bool) -> str:
    return f"int tuner_gemm_{dtype}(int M, int N, int K, {cuda_launch.launcher_parameters(scaled)})"


def _operands_text(entry: Entry, scaled: bool) -> str:
    """What the dtype's dispatch computes, in the words of its buffers' layouts."""
    b = "B (N x K, each row one column of the product: K-major)" if b_transposed(_config(entry)) else "B (K x N)"
    product = "scale_a * scale_b * A * B" if scaled else "A * B"
    return (f"C ({PRECISIONS[entry.dtype].output}, M x N) = {product}: A ({entry.dtype}, M x K), {b}, C row-major, all "
            f"on the device")


def _shape_text(entry: Entry) -> str:
    tag = " (predicted)" if entry.run.startswith("predicted") else ""
    return f"{entry.M}x{entry.N}x{entry.K}{tag}"


def header_text(entries: list[Exported]) -> str:
    scaled = {dtype: _scaled(entries, dtype) for dtype in sorted({e.entry.dtype for e in entries})}
    first = {e.entry.dtype: e.entry for e in reversed(entries)}
    functions = "\n".join(
        f"/* {_operands_text(first[e], scaled[e])},\n   queued on stream. Shapes: "
        f"{', '.join(_shape_text(x.entry) for x in entries if x.entry.dtype == e)}. */\n"
        f"{_dispatch_declaration(e, scaled[e])};\n" for e in scaled)
    return (f"/* Tuned GEMM kernels exported from a kernel table: one dispatch function per dtype. */\n"
            f"#ifndef TUNER_GEMM_H\n#define TUNER_GEMM_H\n\n#include <cuda_runtime.h>\n\n"
            f"#define TUNER_GEMM_OK {STATUS_OK}  /* the launch is queued */\n"
            f"#define TUNER_GEMM_NO_ENTRY {STATUS_NO_ENTRY}  /* no kernel of this shape in the table: use cuBLAS */\n"
            f"#define TUNER_GEMM_LAUNCH_FAILED {STATUS_LAUNCH_FAILED}  /* the launch or a tensor map failed: "
            f"cudaGetLastError() says why */\n\n"
            f'#ifdef __cplusplus\nextern "C" {{\n#endif\n\n{functions}\n'
            f"#ifdef __cplusplus\n}}\n#endif\n\n#endif\n")


def dispatch_text(entries: list[Exported]) -> str:
    launchers = "".join(f'extern "C" int {e.symbol}_launch({cuda_launch.launcher_parameters(e.scaled)});\n'
                        for e in entries)
    functions = []
    for dtype in sorted({e.entry.dtype for e in entries}):
        scaled = _scaled(entries, dtype)
        arguments = "A, B, C, scale_a, scale_b, stream" if scaled else "A, B, C, stream"
        cases = "".join(f"    if (M == {e.entry.M} && N == {e.entry.N} && K == {e.entry.K})\n"
                        f"        return {e.symbol}_launch({arguments});\n"
                        for e in entries if e.entry.dtype == dtype)
        functions.append(f'extern "C" {_dispatch_declaration(dtype, scaled)}\n{{\n{cases}'
                         f'    return TUNER_GEMM_NO_ENTRY;\n}}\n')
    return f'#include "{HEADER}"\n\n{launchers}\n' + "\n".join(functions)


def example_text(first: Exported) -> str:
    entry = first.entry
    sizes = {"A": entry.M * entry.K, "B": entry.K * entry.N, "C": entry.M * entry.N}
    element = PRECISIONS[entry.dtype].bytes
    accumulator = PRECISIONS[PRECISIONS[entry.dtype].output].bytes
    scales = "1.0f, 1.0f, " if first.scaled else ""
    return (f'#include <cstdio>\n#include "{HEADER}"\n\n'
            f"/* Calls the table's {entry.M}x{entry.N}x{entry.K} {entry.dtype} kernel once, on uninitialised "
            f"buffers. */\n"
            f"int main()\n{{\n    void *A, *B, *C;\n"
            f"    if (cudaMalloc(&A, {sizes['A']}ull * {element}) != cudaSuccess || "
            f"cudaMalloc(&B, {sizes['B']}ull * {element}) != cudaSuccess ||\n"
            f"        cudaMalloc(&C, {sizes['C']}ull * {accumulator}) != cudaSuccess)\n        return 1;\n"
            f"    int status = tuner_gemm_{entry.dtype}({entry.M}, {entry.N}, {entry.K}, A, B, C, {scales}0);\n"
            f"    cudaError_t error = cudaDeviceSynchronize();\n"
            f'    std::printf("status %d, %s\\n", status, cudaGetErrorString(error));\n'
            f"    cudaFree(A);\n    cudaFree(B);\n    cudaFree(C);\n"
            f"    return status == TUNER_GEMM_OK && error == cudaSuccess ? 0 : 1;\n}}\n")


def build_command(entries: list[Exported]) -> list[str]:
    """The nvcc arguments (after ``nvcc``) that build the folder's library."""
    return ["-O3", *arch_options(arch_of_table(entries)), "-cudart", "shared", "-shared", "-Xcompiler", "-fPIC",
            "-o", LIBRARY, DISPATCH, *(e.file for e in entries)]


def readme_text(entries: list[Exported], table_dir: Path) -> str:
    return (f"Tuned GEMM kernels exported from the kernel table {table_dir} ({len(entries)} kernels).\n\n"
            f"Build the library (CUDA 12.5 or later), then the example against it:\n\n"
            f"    nvcc {' '.join(build_command(entries))}\n"
            f"    nvcc {' '.join(arch_options(arch_of_table(entries)))} -cudart shared -o example {EXAMPLE} "
            f"-L. -ltuner_gemm\n"
            f"    LD_LIBRARY_PATH=. ./example    # on the GPU: one launch of the first shape, then its status\n\n"
            f"{HEADER} declares one function per dtype, tuner_gemm_<dtype>(M, N, K, A, B, C, stream) (an FP8 dtype's\n"
            f"takes its per-tensor scales before the stream: C = scale_a * scale_b * A * B, B stored N x K): it\n"
            f"launches the kernel tuned on exactly that shape and returns TUNER_GEMM_OK, or TUNER_GEMM_NO_ENTRY for a\n"
            f"shape the table does not hold (call cuBLAS instead), or TUNER_GEMM_LAUNCH_FAILED. Each kernel runs on\n"
            f"the GPU model it was tuned on ({', '.join(sorted({e.entry.device_name for e in entries}))}).\n")


def predicted_entries(table: KernelTable, shapes: Sequence[Shape]) -> list[Entry]:
    """An entry for each shape the table does not hold: the configuration predicted for it (never measured there),
    with the device, toolkit and run of the entry it was predicted from; a shape none is valid for is named on
    stderr and left out."""
    from tuner.table.routing import route

    entries = []
    for shape in shapes:
        if table.entry(shape.problem, shape.dtype) is not None:
            continue
        found = route(table, shape.problem, shape.dtype)
        source = next((e for e in table.entries if found.config and e.dtype == shape.dtype
                       and e.family == found.config.family and e.params == found.config.param_dict), None)
        if found.config is None or source is None:
            print(f"{shape.label}: left out of the export ({found.reason})", file=sys.stderr)
            continue
        entries.append(replace(source, M=shape.M, N=shape.N, K=shape.K, run=f"{found.reason} ({source.run})"))
    return entries


def export_table(table: KernelTable, table_dir: Path,
                 predicted: Sequence[Entry] = ()) -> tuple[list[Exported], dict[str, str]]:
    """Every entry (and each ``predicted`` one) exported, and the folder's files (name → text); TunerError naming
    the first entry that cannot be exported, and why."""
    exported, files = [], {}
    for entry in (*table.entries, *predicted):
        try:
            item, text = export_entry(entry)
        except (ValueError, TunerError) as exc:
            raise TunerError(f"{table_dir}: the entry {entry.problem.label} {entry.dtype} ({entry.family}) cannot be "
                             f"exported as plain CUDA: {exc}; build a table without it to export the others") from None
        if entry.source_template_hash != template_text_hash(entry.family):
            print(f"{entry.problem.label} {entry.dtype}: the {entry.family} template changed since the table was "
                  f"built; the exported kernel is rendered from the template as it is now", file=sys.stderr)
        exported.append(item)
        files[item.file] = text
    if not exported:
        raise TunerError(f"{table_dir}: the table holds no entry to export")
    files.update({HEADER: header_text(exported), DISPATCH: dispatch_text(exported), EXAMPLE: example_text(exported[0]),
                  README: readme_text(exported, table_dir)})
    return exported, files
