"""The mma family compiles for sm_90 with nvcc: without spilling, and (where cuobjdump is installed) into the
tensor-core, ldmatrix and cp.async instructions it is written for."""

from __future__ import annotations

import re

import pytest

from tests.machine_code import sass_or_skip
from tests.test_mma_family import FLAGSHIPS
from tuner.compile.nvcc import compile_source
from tuner.config import Config, Problem
from tuner.kernels.render import render
from tuner.kernels.targets import target

pytestmark = pytest.mark.slow

CONFIGS = [
    *FLAGSHIPS.items(),
    ("bfloat16", dict(FLAGSHIPS["bfloat16"], SWIZZLE=0, STAGES=3, GROUP_M=1)),
    ("float16", dict(FLAGSHIPS["float16"], BM=128, BN=128, BK=64, WN=32)),
    ("tf32", dict(FLAGSHIPS["tf32"], BK=32, STAGES=3, SWIZZLE=0)),
    ("float64", dict(FLAGSHIPS["float64"], MMA_K=4, STAGES=4)),
    ("float64", dict(FLAGSHIPS["float64"], BM=128, BN=64, BK=32, WM=32, WN=32, MMA_K=16)),
]
MMA_SASS = {"float64": "DMMA", "tf32": "HMMA.1688.F32.TF32", "bfloat16": "HMMA.16816.F32.BF16",
            "float16": "HMMA.16816.F32"}


def config(dtype: str, params: dict) -> Config:
    return Config.make(Problem(4096, 4096, 4096), "mma", dtype, params)


@pytest.fixture(scope="module")
def compiled(nvcc: str, tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TUNER_CACHE_DIR", str(tmp_path_factory.mktemp("mma-cache")))
        return {index: compile_source(render(config(dtype, params)), "sm_90")
                for index, (dtype, params) in enumerate(CONFIGS)}


@pytest.mark.parametrize("index", range(len(CONFIGS)), ids=lambda i: f"{CONFIGS[i][0]}-{i}")
def test_compiles_without_spilling_within_the_register_budget(compiled, index):
    result = compiled[index]
    assert result.ok, result.log
    resources = result.resources
    assert resources.local_bytes == 0
    assert (resources.spill_store_bytes, resources.spill_load_bytes) == (0, 0)
    assert resources.registers is not None and resources.registers <= target("sm_90").max_registers_per_thread


@pytest.mark.parametrize("index", range(len(CONFIGS)), ids=lambda i: f"{CONFIGS[i][0]}-{i}")
def test_the_machine_code_uses_tensor_cores_and_asynchronous_copies(compiled, index):
    dtype = CONFIGS[index][0]
    code = sass_or_skip(compiled[index].binary)
    operations = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", code)
    assert any(op.startswith(MMA_SASS[dtype]) for op in operations)
    assert any(op.startswith("LDGSTS") for op in operations)
    if dtype != "float64":
        assert any(op.startswith("LDSM") for op in operations)
    assert not any(op.startswith(("LDL", "STL")) for op in operations)
