"""The host code that launches one exported kernel on its one shape, appended to the kernel's own source: the launch
geometry (grid, block, dynamic shared memory, cluster) and the TMA tensor maps are those the measuring process used
(:func:`tuner.kernels.render.launch`, :mod:`tuner.backends.cuda_driver`), written in as constants.

A tensor map is encoded with the driver's ``cuTensorMapEncodeTiled``, reached through the runtime
(``cudaGetDriverEntryPointByVersion``, CUDA 12.5 or later) so that the build needs no ``-lcuda``."""

from __future__ import annotations

from dataclasses import dataclass

from tuner.config import Config
from tuner.kernels.arguments import Buffer, Scalar
from tuner.kernels.discovery import get_family
from tuner.kernels.render import Launch
from tuner.kernels.tensor_maps import TensorMap, tensor_map_fields

STATIC_SHARED_LIMIT = 48 * 1024
"""Dynamic shared bytes a kernel gets without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize)."""
STATUS_OK, STATUS_NO_ENTRY, STATUS_LAUNCH_FAILED = 0, 1, 2
DISPATCH_ARGUMENTS = ("A", "B", "C", "M", "N", "K")
"""The kernel parameters a dispatch function passes on: the buffers A, B, C and the sizes M, N, K (int)."""
SCALE_ARGUMENTS = ("scale_a", "scale_b")
"""The per-tensor scales (float) an FP8 dispatch passes on besides: C = scale_a·scale_b·A·B."""


class NotExportable(ValueError):
    """An entry whose kernel the C dispatch cannot call (the message says why)."""


@dataclass(frozen=True)
class Geometry:
    """One entry's launch, as the exported code makes it."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int
    cluster: tuple[int, int, int]
    persistent: bool
    tensor_maps: tuple[TensorMap, ...]


def geometry(launch: Launch, multiprocessors: int | None) -> Geometry:
    """The launch on the table's GPU (a persistent grid sized for its recorded SM count)."""
    return Geometry(launch.grid_on(multiprocessors), launch.block, launch.dynamic_shared_bytes, launch.cluster,
                    bool(launch.resident_blocks_per_sm), launch.tensor_maps)


def takes_scales(config: Config) -> bool:
    """Whether the family's kernel takes the per-tensor scales (the FP8 families' ``scale_a``, ``scale_b``)."""
    return any(a.name in SCALE_ARGUMENTS for a in get_family(config.family).arguments)


def check_arguments(config: Config) -> None:
    """NotExportable unless the family's kernel takes exactly A, B, C (buffers) and M, N, K (int32), and perhaps
    the per-tensor scales scale_a, scale_b (float32)."""
    family = get_family(config.family)
    names = tuple(a.name for a in family.arguments)
    expected = (*DISPATCH_ARGUMENTS, *(SCALE_ARGUMENTS if takes_scales(config) else ()))
    typed = all(isinstance(a, Buffer) if a.name in "ABC" else
                isinstance(a, Scalar) and a.ctype == ("float32" if a.name in SCALE_ARGUMENTS else "int32")
                for a in family.arguments)
    if sorted(names) != sorted(expected) or not typed:
        raise NotExportable(f"the family '{family.name}' takes the arguments {', '.join(names)}; the dispatch "
                            f"function passes only A, B, C, M, N, K and per-tensor scales (scale_a, scale_b)")


def _dim3(values: tuple[int, int, int]) -> str:
    return f"dim3({values[0]}u, {values[1]}u, {values[2]}u)"


MAP_CODE = """\
    {{
        cuuint64_t dims[2] = {{{dims[0]}ull, {dims[1]}ull}};
        cuuint64_t strides[1] = {{{stride}ull}};
        cuuint32_t box[2] = {{{box[0]}u, {box[1]}u}};
        cuuint32_t element_strides[2] = {{{steps[0]}u, {steps[1]}u}};
        if (encode(&maps[{index}], (CUtensorMapDataType){data_type}, 2, {pointer}, dims, strides, box,
                   element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, (CUtensorMapSwizzle){swizzle},
                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
            return {failed};
    }}
"""


def _tensor_map_code(config: Config, spec: TensorMap, index: int) -> str:
    """Encoding the tensor map of one buffer (``A`` or ``B``) into ``maps[index]``."""
    buffer = next(b for b in get_family(config.family).buffers if b.name == spec.buffer)
    fields = tensor_map_fields(spec, buffer.shape(config.problem), buffer.dtype_of(config.dtype))
    pointer = "const_cast<void*>(A)" if spec.buffer == "A" else "const_cast<void*>(B)" if spec.buffer == "B" else "C"
    return MAP_CODE.format(dims=fields.dims, stride=fields.strides[0], box=fields.box, steps=fields.element_strides,
                           index=index, data_type=fields.data_type, pointer=pointer, swizzle=fields.swizzle,
                           failed=STATUS_LAUNCH_FAILED)


ENCODER = """
#include <cuda.h>

typedef decltype(&cuTensorMapEncodeTiled) tuner_encode_tiled_t;

static tuner_encode_tiled_t tuner_encoder()
{
    static tuner_encode_tiled_t found = nullptr;
    if (found == nullptr) {
        void* function = nullptr;
        cudaDriverEntryPointQueryResult result;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault,
                                             &result) == cudaSuccess && result == cudaDriverEntryPointSuccess)
            found = reinterpret_cast<tuner_encode_tiled_t>(function);
    }
    return found;
}
"""


def _parameter_block(config: Config, maps: int) -> str:
    """The kernel's parameter block: pointers to the tensor maps, then to each argument in the family's order."""
    values = {"A": "&a", "B": "&b", "C": "&c", "M": "&M", "N": "&N", "K": "&K", "scale_a": "&scale_a",
              "scale_b": "&scale_b"}
    pointers = [f"&maps[{i}]" for i in range(maps)] + [values[a.name] for a in get_family(config.family).arguments]
    problem = config.problem
    return (f"    void* a = const_cast<void*>(A);\n    void* b = const_cast<void*>(B);\n    void* c = C;\n"
            f"    int M = {problem.M}, N = {problem.N}, K = {problem.K};\n"
            f"    void* arguments[] = {{{', '.join(pointers)}}};\n")


def _launch_code(symbol: str, shape: Geometry) -> str:
    """Configuring and queueing the launch of ``symbol`` on ``stream``."""
    kernel = f"reinterpret_cast<const void*>(&{symbol})"
    lines = ["    cudaLaunchConfig_t config = {};", f"    config.gridDim = {_dim3(shape.grid)};",
             f"    config.blockDim = {_dim3(shape.block)};",
             f"    config.dynamicSmemBytes = {shape.dynamic_shared_bytes};", "    config.stream = stream;"]
    if shape.dynamic_shared_bytes > STATIC_SHARED_LIMIT:
        lines.append(f"    if (cudaFuncSetAttribute({kernel}, cudaFuncAttributeMaxDynamicSharedMemorySize, "
                     f"{shape.dynamic_shared_bytes}) != cudaSuccess)\n        return {STATUS_LAUNCH_FAILED};")
    if shape.cluster != (1, 1, 1):
        x, y, z = shape.cluster
        lines += ["    cudaLaunchAttribute attributes[1];",
                  "    attributes[0].id = cudaLaunchAttributeClusterDimension;",
                  f"    attributes[0].val.clusterDim.x = {x};", f"    attributes[0].val.clusterDim.y = {y};",
                  f"    attributes[0].val.clusterDim.z = {z};",
                  "    config.attrs = attributes;", "    config.numAttrs = 1;"]
        if shape.persistent:  # only the clusters that run at once, or the last would wait for the first
            size = x * y * z
            lines.append(f"    int active = 0;\n    if (cudaOccupancyMaxActiveClusters(&active, {kernel}, &config) == "
                         f"cudaSuccess) {{\n        unsigned held = (active > 1 ? active : 1) * {size}u;\n"
                         f"        config.gridDim.x = held < config.gridDim.x ? held : config.gridDim.x;\n    }}")
    lines.append(f"    return cudaLaunchKernelExC(&config, {kernel}, arguments) == cudaSuccess ? {STATUS_OK} : "
                 f"{STATUS_LAUNCH_FAILED};")
    return "\n".join(lines) + "\n"


def launcher_parameters(scaled: bool) -> str:
    """The parameters of an exported launcher (and, after M, N, K, of a dispatch function)."""
    scales = "float scale_a, float scale_b, " if scaled else ""
    return f"const void* A, const void* B, void* C, {scales}cudaStream_t stream"


def launcher_source(config: Config, symbol: str, shape: Geometry) -> str:
    """``extern "C" int <symbol>_launch(A, B, C, [scale_a, scale_b,] stream)``: 0 once queued, 2 where encoding or
    launching failed."""
    maps = "".join(_tensor_map_code(config, spec, i) for i, spec in enumerate(shape.tensor_maps))
    encoder = ENCODER if shape.tensor_maps else ""
    prologue = ""
    if shape.tensor_maps:
        prologue = (f"    tuner_encode_tiled_t encode = tuner_encoder();\n    if (encode == nullptr)\n"
                    f"        return {STATUS_LAUNCH_FAILED};\n    CUtensorMap maps[{len(shape.tensor_maps)}];\n")
    return (f"\n// Launching {symbol} on {config.problem.label} {config.dtype} (the exported table's host code)\n"
            f"{encoder}\nextern \"C\" int {symbol}_launch({launcher_parameters(takes_scales(config))})\n"
            f"{{\n{prologue}{maps}{_parameter_block(config, len(shape.tensor_maps))}"
            f"{_launch_code(symbol, shape)}}}\n")
