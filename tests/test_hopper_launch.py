"""The driver-API side of Hopper launches that runs without a GPU: the ctypes structures match cuda.h, and the
parameter block points at the tensor maps first, then at the typed arguments."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

from tuner.backends import cuda_driver

CUDA_H = Path("/usr/local/cuda/include/cuda.h")
LAYOUT_PROGRAM = r"""
#include <cuda.h>
#include <stddef.h>
#include <stdio.h>
int main(void) {
    printf("%zu %zu %zu %zu %zu\n", sizeof(CUlaunchAttribute), offsetof(CUlaunchAttribute, value.clusterDim.x),
           offsetof(CUlaunchAttribute, value.clusterDim.y), offsetof(CUlaunchAttribute, value.clusterDim.z),
           _Alignof(CUtensorMap));
    printf("%zu %zu %zu %zu %zu\n", sizeof(CUlaunchConfig), offsetof(CUlaunchConfig, sharedMemBytes),
           offsetof(CUlaunchConfig, hStream), offsetof(CUlaunchConfig, attrs), offsetof(CUlaunchConfig, numAttrs));
    printf("%d %d\n", CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
    return 0;
}
"""


def test_structures_match_cuda_h(tmp_path):
    compiler = shutil.which("cc")
    if compiler is None or not CUDA_H.is_file():
        pytest.skip("needs a C compiler and the CUDA toolkit's cuda.h")
    (tmp_path / "layout.c").write_text(LAYOUT_PROGRAM)
    subprocess.run([compiler, f"-I{CUDA_H.parent}", "layout.c", "-o", "layout"], cwd=tmp_path, check=True)
    lines = subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True, check=True).stdout.split("\n")
    attribute, config = cuda_driver._LaunchAttribute, cuda_driver._LaunchConfig
    assert lines[0].split() == [str(v) for v in (ctypes.sizeof(attribute), attribute.x.offset, attribute.y.offset,
                                                 attribute.z.offset, cuda_driver.TENSOR_MAP_ALIGNMENT)]
    assert lines[1].split() == [str(v) for v in (ctypes.sizeof(config), config.sharedMemBytes.offset,
                                                 config.hStream.offset, config.attrs.offset, config.numAttrs.offset)]
    assert lines[2].split() == [str(cuda_driver.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION),
                                str(cuda_driver.CU_TENSOR_MAP_L2_PROMOTION_L2_256B)]


class FakeMap:
    def __init__(self, address: int):
        self.address = address


def test_the_parameter_block_points_at_maps_then_typed_arguments():
    block = cuda_driver.parameters([FakeMap(4096), FakeMap(8192)], "PPPiii", [1 << 40, 2, 3, 1000, -7, 777])
    pointers = list(block.pointers)
    assert pointers[:2] == [4096, 8192] and len(pointers) == 8
    assert ctypes.c_uint64.from_address(pointers[2]).value == 1 << 40
    assert [ctypes.c_int32.from_address(p).value for p in pointers[5:]] == [1000, -7, 777]


def test_a_cluster_is_a_launch_attribute():
    config, attributes = cuda_driver._config((66, 1, 1), (384, 1, 1), 1024, (2, 1, 1))
    assert (config.gridDimX, config.blockDimX, config.sharedMemBytes, config.numAttrs) == (66, 384, 1024, 1)
    cluster = cuda_driver.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    assert (config.attrs[0].id, config.attrs[0].x, config.attrs[0].y) == (cluster, 2, 1)
    assert cuda_driver._config((66, 1, 1), (384, 1, 1), 0, (1, 1, 1))[0].numAttrs == 0
